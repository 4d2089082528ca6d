package deploytest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestOverlayWithoutOperator: the overlay docs/keda.md gives a cluster
// without prometheus-operator, placed beside deploy/ as it says, builds
// (kustomize's krusty) deploy/base without its ServiceMonitor and
// PrometheusRule, whose kinds such a cluster does not know, and with every
// other object of deploy/base.
func TestOverlayWithoutOperator(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(deployDir, "..", "docs", "keda.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?ms)^```yaml\n# own/kustomization.yaml[^\n]*\n(.*?)^```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/keda.md shows no own/kustomization.yaml")
	}
	fs := filesys.MakeFsInMemory()
	base, _ := filepath.Glob(filepath.Join(deployDir, "base", "*.yaml"))
	for _, f := range base {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.WriteFile("/repo/deploy/base/"+filepath.Base(f), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.WriteFile("/repo/own/kustomization.yaml", m[1]); err != nil {
		t.Fatal(err)
	}
	kinds := func(dir string) []string {
		res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, dir)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		var k []string
		for _, r := range res.Resources() {
			k = append(k, r.GetKind()+"/"+r.GetName())
		}
		slices.Sort(k)
		return k
	}
	got, all := kinds("/repo/own"), kinds("/repo/deploy/base")
	want := slices.DeleteFunc(slices.Clone(all), func(k string) bool {
		return k == "ServiceMonitor/infscale" || k == "PrometheusRule/infscale"
	})
	if len(want) != len(all)-2 {
		t.Fatalf("deploy/base builds %v: want its ServiceMonitor and PrometheusRule among them", all)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the overlay builds %v, want %v (deploy/base without ServiceMonitor and PrometheusRule)", got, want)
	}
}
