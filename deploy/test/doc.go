// Package deploytest checks the manifests under deploy/ against the Go types
// of the projects that own them: every YAML document decodes strictly (an
// unknown or misspelt field is an error) into k8s.io/api (apps/v1, core/v1,
// autoscaling/v2), KEDA's keda/v1alpha1, prometheus-operator's
// monitoring/v1 and kustomize's types; every kustomization builds with
// kustomize's own krusty; and the settings that defuse the five traps of
// docs/hpa.md are asserted.
//
// Two owners' types could not be imported, their modules being unavailable
// from the module proxy here: the KEDA HTTP add-on's InterceptorRoute and
// prometheus-adapter's config. httpaddon.go and adapter.go copy them field
// for field (JSON names, pointer-ness, omitempty) from the upstream sources
// named there.
//
// It is a separate, test-only module (deploy/test/go.mod) so the main
// module does not carry KEDA's, controller-runtime's, kustomize's and the
// Grafana SDK's dependency trees; it imports the main module (replace
// directive) for pkg/config, so the ConfigMaps' configs go through the
// real loader here too. Run it with `make test-deploy` (part of `make test`).
package deploytest
