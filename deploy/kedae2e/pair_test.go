package kedae2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"sigs.k8s.io/yaml"
)

// TestKEDAPrometheusScalerReadsPairRoles runs KEDA's own prometheus scaler
// with each trigger of deploy/llm-d/pd/scaledobjects.yaml (the Helm
// chart renders the same two from a pair target: deploy/charttest's
// TestPairMatchesKustomize) against a real Prometheus scraping two infscale
// exporters that say 3 for chat's prefill pool and 5 for its decode pool,
// as serve exports a pair (docs/metrics.md: target and role). Each role's
// ScaledObject reads its own pool's count; the one-target query, which
// the pair's series also match, would read 5 for both.
func TestKEDAPrometheusScalerReadsPairRoles(t *testing.T) {
	page := "# TYPE infscale_desired_replicas gauge\n" +
		"infscale_desired_replicas{role=\"decode\",target=\"chat\"} 5\n" +
		"infscale_desired_replicas{role=\"prefill\",target=\"chat\"} 3\n"
	prom := startPrometheus(t, haExporters(t, page))
	prom.waitFor(t, `count(infscale_desired_replicas{target="chat"} offset 2s)`, "4")

	b, err := os.ReadFile(filepath.Join("..", "llm-d", "pd", "scaledobjects.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(t *testing.T, so *kedav1alpha1.ScaledObject, query string) int64 {
		t.Helper()
		v, active, err := scalerRead(t, prom.URL, so, func(m map[string]string) {
			if query != "" {
				m["query"] = query
			}
		})
		if err != nil || !active {
			t.Fatalf("%s: value %dm active %v err %v; want a value, active", so.Name, v, active, err)
		}
		return v
	}
	want := map[string]int64{"chat-prefill": 3000, "chat-decode": 5000}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var so kedav1alpha1.ScaledObject
		if err := yaml.UnmarshalStrict([]byte(doc), &so); err != nil {
			t.Fatal(err)
		}
		w, ok := want[so.Name]
		if !ok {
			t.Fatalf("ScaledObject %s: want chat-prefill and chat-decode only", so.Name)
		}
		delete(want, so.Name)
		// max over the two exporters' copies of the role's series; with
		// threshold 1 the HPA computes ceil(v / 1000m) replicas.
		if v := read(t, &so, ""); v != w {
			t.Errorf("%s: KEDA reads %dm, want %dm (its role's series)", so.Name, v, w)
		}
	}
	if len(want) != 0 {
		t.Errorf("ScaledObjects %v missing from deploy/llm-d/pd", want)
	}
	// Why each role needs its own query: the one-target query matches
	// both pools' series and reads the larger pool's count for both.
	var so kedav1alpha1.ScaledObject
	if err := yaml.UnmarshalStrict([]byte(strings.Split(string(b), "\n---\n")[0]), &so); err != nil {
		t.Fatal(err)
	}
	if v := read(t, &so, `max(infscale_desired_replicas{target="chat"})`); v != 5000 {
		t.Errorf("one-target query on a pair: %dm, want 5000m (the larger pool's)", v)
	}
}
