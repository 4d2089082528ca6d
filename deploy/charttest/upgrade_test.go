package charttest

import (
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// checksumFor renders the chart as version version with values and
// returns the Deployment's checksum/config annotation.
func checksumFor(t *testing.T, version, values string) string {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	ch.Metadata.Version = version
	over, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, over, chartutil.ReleaseOptions{Name: "infscale", Namespace: "infscale", Revision: 2, IsUpgrade: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict([]byte(files["infscale/templates/deployment.yaml"]), &d); err != nil {
		t.Fatal(err)
	}
	sum := d.Spec.Template.Annotations["checksum/config"]
	if len(sum) != 64 {
		t.Fatalf("checksum/config %q, want a sha256", sum)
	}
	return sum
}

// TestChecksumFollowsConfigOnly: the pod template's checksum/config rolls
// serve when its config changes, and only then. It hashed the whole
// rendered ConfigMap, labels included, so `helm upgrade` to a new chart
// version (helm.sh/chart: infscale-0.1.0 -> infscale-0.2.0) with the same
// values and image restarted every serve pod (an apply or a lease handover,
// windows rebuilt) for nothing. Now the same config under two chart
// versions has one checksum, and a changed pollingInterval another.
func TestChecksumFollowsConfigOnly(t *testing.T) {
	v1 := checksumFor(t, "0.1.0", "")
	if v2 := checksumFor(t, "0.2.0", ""); v2 != v1 {
		t.Errorf("chart 0.1.0 -> 0.2.0, same config: checksum %s -> %s, want unchanged (no roll)", v1, v2)
	}
	if c := checksumFor(t, "0.1.0", "pollingInterval: 30s\n"); c == v1 {
		t.Errorf("pollingInterval 15s -> 30s: checksum unchanged %s, want a new one (the pods roll)", c)
	}
}
