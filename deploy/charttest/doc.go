// Package charttest renders the Helm chart deploy/chart/infscale with Helm's
// own Go library (chart loader and template engine, as `helm template` does),
// decodes every rendered object strictly into its owner's Go type (Kubernetes
// core, apps, policy and RBAC, prometheus-operator's ServiceMonitor and
// PodMonitor, KEDA's ScaledObject), loads the rendered serve config through pkg/config, and
// checks the chart's defaults against deploy/base and deploy/keda, the
// kustomize manifests of the same objects.
//
// It is a separate, test-only module (deploy/charttest/go.mod) so the main
// module does not depend on Helm: `make test-chart`.
package charttest
