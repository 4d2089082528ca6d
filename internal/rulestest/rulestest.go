// Package rulestest (a test harness) reads the repository's Prometheus
// rule files, rules/*.yml (promtool checks and unit-tests them), for the
// deploy modules' tests that hold what they ship to them: deploy/test
// renders deploy/base's PrometheusRule from them, deploy/charttest
// compares the chart's PrometheusRule with them rule by rule.
package rulestest

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// Groups decodes every *.yml in dir, in file name order, strictly
// (sigs.k8s.io/yaml's UnmarshalStrict: an unknown key fails) as a rule
// file's groups of type G: prometheus-operator's monitoringv1.RuleGroup in
// both deploy modules (a type parameter, so the main module does not
// depend on prometheus-operator). It fails t when dir holds no *.yml or a
// file does not decode, naming the file.
func Groups[G any](t testing.TB, dir string) []G {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.yml"))
	if len(files) == 0 {
		t.Fatalf("no %s", filepath.Join(dir, "*.yml"))
	}
	var groups []G
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rf struct {
			Groups []G `json:"groups"`
		}
		if err := yaml.UnmarshalStrict(b, &rf); err != nil {
			t.Fatalf("%s as rule groups (%T): %v", f, *new(G), err)
		}
		groups = append(groups, rf.Groups...)
	}
	return groups
}
