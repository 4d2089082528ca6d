package deploytest

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/infscale/infscale/internal/rulestest"
)

var update = flag.Bool("update", false, "rewrite deploy/base/prometheusrule.yaml from rules/*.yml")

// prometheusRuleFile is the prometheus-operator form of rules/*.yml.
var prometheusRuleFile = filepath.Join(deployDir, "base", "prometheusrule.yaml")

const prometheusRuleHeader = `# GENERATED from rules/infscale.rules.yml and rules/infscale.alerts.yml by
# ` + "`go -C deploy/test test -run TestPrometheusRuleMatchesRules -update`" + `; do not edit.
# The rules for prometheus-operator. Your Prometheus's ruleSelector may need a
# label here (kube-prometheus-stack: release: <name>). docs/grafana.md.
`

// TestPrometheusRuleMatchesRules keeps deploy/base's PrometheusRule equal to
// rules/*.yml (which promtool checks and unit-tests): the rule files decode
// strictly into prometheus-operator's RuleGroup type and are rendered into
// the PrometheusRule; the shipped file must be that rendering.
func TestPrometheusRuleMatchesRules(t *testing.T) {
	pr := monitoringv1.PrometheusRule{
		TypeMeta:   metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRule"},
		ObjectMeta: metav1.ObjectMeta{Name: "infscale"},
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: rulestest.Groups[monitoringv1.RuleGroup](t, filepath.Join(deployDir, "..", "rules"))},
	}
	body, err := yaml.Marshal(pr)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte(prometheusRuleHeader), body...)
	if *update {
		if err := os.WriteFile(prometheusRuleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(prometheusRuleFile)
	if err != nil {
		t.Fatalf("%v (generate it with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from rules/*.yml; regenerate: go -C deploy/test test -run TestPrometheusRuleMatchesRules -update", prometheusRuleFile)
	}
}
