package config

import (
	"errors"
	"strings"
	"testing"
)

// TestKubernetesManifestRefused: a ConfigMap (deploy/base/configmap.yaml's
// shape) given as the configuration is one error at its kind, naming the
// data key that holds the configuration, not an unknown-key error per
// top-level key ending in "at least one target is required".
func TestKubernetesManifestRefused(t *testing.T) {
	cases := []struct {
		name, text string
		want       Error
	}{
		{"configmap", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: infscale\ndata:\n  infscale.yaml: |\n    targets: []\n",
			Error{File: "cm.yaml", Line: 2, Column: 7, Msg: "a Kubernetes object (kind: ConfigMap), not an infscale configuration: give the text it holds under data.infscale.yaml, saved to a file (docs/config.md)"}},
		{"scaledobject", "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nspec: {}\n",
			Error{File: "cm.yaml", Line: 2, Column: 7, Msg: "a Kubernetes object (kind: ScaledObject), not an infscale configuration: give the configuration file itself (the text a ConfigMap holds under a data key; docs/config.md)"}},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.text), "cm.yaml")
		var es Errors
		if !errors.As(err, &es) || len(es) != 1 || es[0] != c.want {
			t.Errorf("%s: %v, want the one error %+v", c.name, err, c.want)
		}
	}
	// kind alone is an unknown key as any other.
	var es Errors
	if _, err := Parse([]byte("kind: ConfigMap\ntargets: []\n"), "x.yaml"); !errors.As(err, &es) || es[0].Line != 1 || es[0].Column != 1 || !strings.HasPrefix(es[0].Msg, "unknown key") {
		t.Errorf("kind without apiVersion: %v, want an unknown key at 1:1", err)
	}
}
