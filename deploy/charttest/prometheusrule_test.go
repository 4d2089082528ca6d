package charttest

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/infscale/infscale/internal/rulestest"
)

var update = flag.Bool("update", false, "rewrite the chart's copies: rules/ from the repository's rules/*.yml, timezones.txt from Go's time zone database")

// The repository's rules (promtool checks and unit-tests them) and the
// chart's copies of them, which templates/prometheusrule.yaml reads.
var (
	repoRulesDir   = filepath.Join("..", "..", "rules")
	repoRulesGlob  = filepath.Join(repoRulesDir, "*.yml")
	chartRulesDir  = filepath.Join(chartDir, "rules")
	chartRulesGlob = filepath.Join(chartRulesDir, "*.yml")
)

// TestChartRulesMatchRules: the chart's rules/ is rules/*.yml byte for
// byte, the same files and no others (a chart reads no file outside
// itself, so it holds a copy; -update rewrites it).
func TestChartRulesMatchRules(t *testing.T) {
	repo, _ := filepath.Glob(repoRulesGlob)
	if len(repo) == 0 {
		t.Fatal("no rules/*.yml")
	}
	if *update {
		old, _ := filepath.Glob(chartRulesGlob)
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(chartRulesDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range repo {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(chartRulesDir, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	chart, _ := filepath.Glob(chartRulesGlob)
	names := func(fs []string) []string {
		var n []string
		for _, f := range fs {
			n = append(n, filepath.Base(f))
		}
		return n
	}
	const regen = "regenerate: go -C deploy/charttest test -run TestChartRulesMatchRules -update"
	if !reflect.DeepEqual(names(chart), names(repo)) {
		t.Fatalf("the chart's rules/ holds %v, rules/ %v; %s", names(chart), names(repo), regen)
	}
	for i := range repo {
		a, _ := os.ReadFile(repo[i])
		b, _ := os.ReadFile(chart[i])
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s; %s", chart[i], repo[i], regen)
		}
	}
}

// TestPrometheusRule: prometheusRule.enabled renders one PrometheusRule with
// exactly the rules of rules/*.yml (3 groups, infscale.alerts with 21
// alerts, infscale.targets and infscale.servers with 25 recording rules
// between them: counted in the files), the same spec as deploy/base's, the
// ruleSelector's labels and the namespace asked for; off by default.
func TestPrometheusRule(t *testing.T) {
	if n := len(every[*monitoringv1.PrometheusRule](render(t, ""))); n != 0 {
		t.Errorf("defaults: %d PrometheusRules, want 0 (prometheusRule.enabled: false)", n)
	}
	objs := render(t, "prometheusRule: {enabled: true, additionalLabels: {release: kube-prometheus-stack}}\n")
	pr := only[*monitoringv1.PrometheusRule](t, objs)
	if pr.Name != "infscale" || pr.Namespace != "infscale" {
		t.Errorf("PrometheusRule %s/%s, want infscale/infscale (the release's name and namespace)", pr.Namespace, pr.Name)
	}
	if pr.Labels["release"] != "kube-prometheus-stack" || pr.Labels["app.kubernetes.io/name"] != "infscale" {
		t.Errorf("labels %v, want release: kube-prometheus-stack beside the chart's", pr.Labels)
	}
	var names []string
	alerts, records := 0, 0
	for _, g := range pr.Spec.Groups {
		names = append(names, g.Name)
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts++
			} else {
				records++
			}
		}
	}
	if want := []string{"infscale.alerts", "infscale.targets", "infscale.servers"}; !reflect.DeepEqual(names, want) {
		t.Errorf("groups %v, want %v", names, want)
	}
	if alerts != 21 || records != 25 {
		t.Errorf("%d alerts and %d recording rules, want 21 and 25 (rules/*.yml)", alerts, records)
	}
	sameGroups(t, pr.Spec.Groups, rulestest.Groups[monitoringv1.RuleGroup](t, repoRulesDir))
	base := readBase[monitoringv1.PrometheusRule](t, "base/prometheusrule.yaml")
	if !reflect.DeepEqual(pr.Spec, base.Spec) {
		t.Error("the chart's PrometheusRule spec differs from deploy/base/prometheusrule.yaml's")
	}

	objs = render(t, "prometheusRule: {enabled: true, namespace: monitoring}\n")
	if pr := only[*monitoringv1.PrometheusRule](t, objs); pr.Namespace != "monitoring" {
		t.Errorf("prometheusRule.namespace monitoring: rendered in %q", pr.Namespace)
	}
	if _, err := tryRender("prometheusRule: {enabled: true, additionalLabels: {release: 1}}\n"); err == nil {
		t.Error("additionalLabels release: 1 (a number) rendered; want the schema to refuse it (a label value is a string)")
	}
}

// TestPrometheusRuleJob: the alerts' job="..." selectors name the scrape
// job the chart's ServiceMonitor gives infscale's series, "infscale" (its
// jobLabel is the Service's app.kubernetes.io/part-of), for any release
// name and nameOverride; up{job="infscale"} would otherwise match nothing
// and InfscaleDown never fire.
func TestPrometheusRuleJob(t *testing.T) {
	job := regexp.MustCompile(`job\s*=~?\s*"([^"]*)"`)
	for _, release := range []string{"infscale", "prod"} {
		objs, err := tryRenderRelease(release, "nameOverride: scaler\nprometheusRule: {enabled: true}\n")
		if err != nil {
			t.Fatal(err)
		}
		sm := only[*monitoringv1.ServiceMonitor](t, objs)
		svc := only[*corev1.Service](t, objs)
		scrapeJob := svc.Labels[sm.Spec.JobLabel]
		if scrapeJob != "infscale" {
			t.Fatalf("release %s: the scrape job (Service label %s) is %q, want infscale", release, sm.Spec.JobLabel, scrapeJob)
		}
		pr := only[*monitoringv1.PrometheusRule](t, objs)
		n := 0
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				for _, m := range job.FindAllStringSubmatch(r.Expr.String(), -1) {
					n++
					if m[1] != scrapeJob {
						t.Errorf("release %s: %s%s selects job=%q, the chart's scrape job is %q", release, r.Alert, r.Record, m[1], scrapeJob)
					}
				}
			}
		}
		// rules/infscale.alerts.yml has two, both InfscaleDown's:
		// max by (namespace, service) (up{job="infscale"}) == 0 or absent(max(up{job="infscale"})).
		if n != 2 {
			t.Errorf("release %s: %d job selectors in the rules' expressions, want 2", release, n)
		}
	}
}

// sameGroups reports the first rule of each group that differs between the
// chart's rendering and rules/*.yml, by group and rule name.
func sameGroups(t *testing.T, got, want []monitoringv1.RuleGroup) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d rule groups rendered, rules/*.yml has %d", len(got), len(want))
		return
	}
	for i := range want {
		g, w := got[i], want[i]
		if len(g.Rules) != len(w.Rules) {
			t.Errorf("group %s: %d rules rendered, rules/*.yml has %d", w.Name, len(g.Rules), len(w.Rules))
			continue
		}
		for j := range w.Rules {
			if !reflect.DeepEqual(g.Rules[j], w.Rules[j]) {
				t.Errorf("group %s, rule %s%s: rendered\n%+v\nrules/*.yml has\n%+v", w.Name, w.Rules[j].Alert, w.Rules[j].Record, g.Rules[j], w.Rules[j])
				break
			}
		}
		g.Rules, w.Rules = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("group %s: rendered %+v, rules/*.yml has %+v (rules aside)", w.Name, g, w)
		}
	}
}
