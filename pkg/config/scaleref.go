package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// apiVersionRE is a Kubernetes API version: v1, v2beta1, v1alpha3.
var apiVersionRE = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)

// builtinScaled lists, per built-in API group/version, the kinds that have
// a scale subresource (Kubernetes 1.37's API reference). Kinds of other
// groups (CRDs: Rollout, LeaderWorkerSet, ...) are resolved by the API
// server's discovery at run time.
var builtinScaled = map[string][]string{
	"v1":      {"ReplicationController"},
	"apps/v1": {"Deployment", "ReplicaSet", "StatefulSet"},
}

// CheckScaleTargetRef checks an HPA-style scaleTargetRef's apiVersion and
// kind offline: apiVersion is group/version (or v1 for the core group)
// with a Kubernetes version; in the built-in groups the kind must be one
// with a scale subresource (apps/v1: Deployment, ReplicaSet, StatefulSet).
// The error says what to write; the kube command and config share it.
func CheckScaleTargetRef(apiVersion, kind string) (field string, err error) {
	gv, perr := schema.ParseGroupVersion(apiVersion)
	if perr != nil || !apiVersionRE.MatchString(gv.Version) {
		return "apiVersion", fmt.Errorf("%q: want group/version with a Kubernetes version, e.g. apps/v1 (v1 alone is the core group)", apiVersion)
	}
	if gv.Group == "" && gv.Version != "v1" {
		return "apiVersion", fmt.Errorf("%q: the core group has only v1; a group/version is group/v1, e.g. apps/v1", apiVersion)
	}
	if gv.Group == "apps" && gv.Version != "v1" {
		return "apiVersion", fmt.Errorf("%q: apps is served as apps/v1 only (the beta versions were removed in Kubernetes 1.16)", apiVersion)
	}
	kinds, builtin := builtinScaled[gv.String()]
	if !builtin || slices.Contains(kinds, kind) {
		return "", nil
	}
	for _, k := range kinds {
		if strings.EqualFold(k, kind) {
			return "kind", fmt.Errorf("%q: kinds are case-sensitive: %s", kind, k)
		}
	}
	for g, ks := range builtinScaled {
		if slices.Contains(ks, kind) {
			return "apiVersion", fmt.Errorf("%q: %s is in %s, not %s", apiVersion, kind, g, apiVersion)
		}
	}
	return "kind", fmt.Errorf("%q: %s has no such kind with a scale subresource (it has %s)", kind, apiVersion, strings.Join(kinds, ", "))
}
