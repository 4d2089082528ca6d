package charttest

import (
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// installOn runs `helm install infscale -n infscale` with the chart's
// defaults through Helm's own install action, client-only and dry-run (as
// `helm template` does), with the cluster reporting gitVersion: the string
// Helm reads from the API server's /version (action.Configuration's
// getCapabilities copies its gitVersion verbatim, a managed cluster's
// -eks-.../-gke... suffix included), and returns install's error.
func installOn(t *testing.T, gitVersion, major, minor string) error {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	in.ReleaseName, in.Namespace = "infscale", "infscale"
	in.DryRun, in.ClientOnly, in.Replace = true, true, true
	in.KubeVersion = &chartutil.KubeVersion{Version: gitVersion, Major: major, Minor: minor}
	_, err = in.Run(ch, map[string]any{})
	return err
}

// TestKubeVersion: Chart.yaml's kubeVersion is docs/chart.md's "Kubernetes
// >= 1.35" (the HPA's per-object tolerance the ScaledObjects set to 0 is
// served by default from 1.35: docs/hpa.md, trap 1), written with Helm's
// `-0` so a version Semantic Versioning calls a pre-release, which every
// managed offering's is, still matches (">= 1.35.0" alone refuses
// v1.35.2-gke.1000). Helm refuses an older cluster before rendering
// anything, with the message docs/chart.md quotes.
func TestKubeVersion(t *testing.T) {
	for _, c := range []struct{ git, major, minor string }{
		{"v1.35.0", "1", "35"},
		{"v1.35.2-gke.1000", "1", "35"},
		{"v1.35.2-eks-3025e55", "1", "35"},
		{"v1.37.2", "1", "37"},
		{"v2.0.0", "2", "0"},
		// 1.35.0-alpha.1 sorts below 1.35.0 but above 1.35.0-0 (the
		// pre-release identifier "alpha" is above "0"): the -0 floor
		// takes every 1.35 pre-release too.
		{"v1.35.0-alpha.1", "1", "35"},
	} {
		if err := installOn(t, c.git, c.major, c.minor); err != nil {
			t.Errorf("Kubernetes %s: %v, want the chart installed", c.git, err)
		}
	}
	for _, c := range []struct{ git, major, minor string }{
		{"v1.34.3", "1", "34"},
		{"v1.34.3-eks-3025e55", "1", "34"},
		{"v1.20.0", "1", "20"}, // the Go library's default when no cluster is asked
	} {
		want := "chart requires kubeVersion: >= 1.35.0-0 which is incompatible with Kubernetes " + c.git
		if err := installOn(t, c.git, c.major, c.minor); err == nil || err.Error() != want {
			t.Errorf("Kubernetes %s: %v, want %q", c.git, err, want)
		}
	}
}
