// Package dashboards holds infscale's Grafana dashboards (*.json, hand
// written; docs/grafana.md). Its test parses every PromQL expression in the
// dashboards and in rules/ with Prometheus's own parser and checks each
// metric it selects exists: exported by infscale (read from pkg/serve's
// registry), by a supported model server, by kube-state-metrics or the KEDA
// HTTP add-on as used, or recorded by a rule in rules/.
package dashboards

import (
	"encoding/json"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/pkg/activator"
	"github.com/infscale/infscale/pkg/serve"
)

// serverMetrics are the model-server series the rules and dashboards may
// read (docs/design.md's server profiles; vLLM's older KV name included).
var serverMetrics = []string{
	"vllm:num_requests_running", "vllm:num_requests_waiting",
	"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc",
	"vllm:time_to_first_token_seconds_bucket", "vllm:time_to_first_token_seconds_count", "vllm:time_to_first_token_seconds_sum",
	"vllm:generation_tokens_total", "vllm:prompt_tokens_total", "vllm:request_success_total",
	"llamacpp:requests_processing", "llamacpp:requests_deferred",
	"llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total",
	"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage",
	"sglang:prompt_tokens_total", "sglang:generation_tokens_total",
}

// otherMetrics are the non-infscale, non-server series used: Prometheus's
// own `up`, kube-state-metrics, and the KEDA HTTP add-on's interceptor.
var otherMetrics = []string{
	"up",
	"kube_deployment_spec_replicas",
	"kube_pod_container_resource_requests",
	"interceptor_request_concurrency", "kube_deployment_status_replicas_available",
}

// infscaleMetrics returns the names pkg/serve registers, read from the
// descriptors of a fresh registry (so a renamed metric fails here), with
// the _bucket/_count/_sum series of histograms.
func infscaleMetrics(t *testing.T) map[string]bool {
	t.Helper()
	reg := &capture{}
	serve.NewMetrics(reg, "test")
	serve.NewTuning(reg)
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range reg.collectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	out := map[string]bool{}
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the name of %s", d)
		}
		out[m[1]] = true
		for _, s := range []string{"_bucket", "_count", "_sum"} {
			out[m[1]+s] = true
		}
	}
	// The activator's own registry (its page, scraped by a ServiceMonitor).
	act, err := activator.New(activator.Config{Upstream: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}})
	if err != nil {
		t.Fatalf("activator.New: %v", err)
	}
	mfs, err := act.Registry().Gather()
	if err != nil {
		t.Fatalf("activator registry: %v", err)
	}
	for _, mf := range mfs {
		out[mf.GetName()] = true
	}
	if !out["infscale_activator_hold_timeouts_total"] {
		t.Fatalf("pkg/activator does not register infscale_activator_hold_timeouts_total (registered: %v)", keys(out))
	}
	if !out["infscale_desired_replicas"] {
		t.Fatalf("pkg/serve does not register infscale_desired_replicas (registered: %v)", keys(out))
	}
	return out
}

// capture is a Registerer that keeps what is registered.
type capture struct{ collectors []prometheus.Collector }

func (c *capture) Register(x prometheus.Collector) error {
	c.collectors = append(c.collectors, x)
	return nil
}
func (c *capture) MustRegister(xs ...prometheus.Collector) {
	c.collectors = append(c.collectors, xs...)
}
func (c *capture) Unregister(prometheus.Collector) bool { return false }

// ruleGroups parses rules/*.yml with Prometheus's rulefmt.
func ruleGroups(t *testing.T) map[string][]rulefmt.Rule {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "rules", "*.yml"))
	if len(files) == 0 {
		t.Fatal("no rule files under rules/")
	}
	out := map[string][]rulefmt.Rule{}
	for _, f := range files {
		gs, errs := rulefmt.ParseFile(f, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", f, errs)
		}
		for _, g := range gs.Groups {
			out[f] = append(out[f], g.Rules...)
		}
	}
	return out
}

// known is every metric name an expression may select.
func known(t *testing.T) map[string]bool {
	t.Helper()
	k := infscaleMetrics(t)
	for _, n := range append(serverMetrics, otherMetrics...) {
		k[n] = true
	}
	for _, rules := range ruleGroups(t) {
		for _, r := range rules {
			if r.Record != "" {
				k[r.Record] = true
			}
		}
	}
	return k
}

// selected returns the metric names an expression selects.
func selected(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		names = append(names, name)
		return nil
	})
	return names
}

func TestRuleExpressionsSelectKnownMetrics(t *testing.T) {
	k := known(t)
	p := parser.NewParser(parser.Options{})
	for f, rules := range ruleGroups(t) {
		for _, r := range rules {
			expr, err := p.ParseExpr(r.Expr)
			if err != nil {
				t.Errorf("%s %s%s: %v", f, r.Record, r.Alert, err)
				continue
			}
			for _, n := range selected(expr) {
				if !k[n] {
					t.Errorf("%s %s%s selects %q: not exported by infscale or a supported server, nor recorded in rules/", f, r.Record, r.Alert, n)
				}
			}
		}
	}
}

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Type        string       `json:"type"`
	Title       string       `json:"title"`
	Description string       `json:"description"`
	Datasource  *datasource  `json:"datasource"`
	Targets     []panelQuery `json:"targets"`
	Panels      []panel      `json:"panels"` // a collapsed row's panels
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panelQuery struct {
	Expr string `json:"expr"`
}

type variable struct {
	Name    string          `json:"name"`
	Type    string          `json:"type"`
	Query   json.RawMessage `json:"query"`
	Current struct {
		Value any `json:"value"`
	} `json:"current"`
}

func loadDashboards(t *testing.T) map[string]dashboard {
	t.Helper()
	files, _ := filepath.Glob("*.json")
	if len(files) == 0 {
		t.Fatal("no dashboards (*.json)")
	}
	out := map[string]dashboard{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[f] = d
	}
	return out
}

var grafanaVar = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)`)

// substitute replaces Grafana's variables so the expression is PromQL:
// interval variables by 5m, the dashboard's custom variables by their
// current value, query and datasource variables by a label value.
func substitute(expr string, vars map[string]string) string {
	return grafanaVar.ReplaceAllStringFunc(expr, func(m string) string {
		s := grafanaVar.FindStringSubmatch(m)
		name := s[1] + s[2]
		switch name {
		case "__rate_interval", "__interval", "__range":
			return "5m"
		}
		if v, ok := vars[name]; ok {
			return v
		}
		return "x"
	})
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

func TestDashboards(t *testing.T) {
	k := known(t)
	p := parser.NewParser(parser.Options{})
	for f, d := range loadDashboards(t) {
		if d.UID == "" || d.Title == "" {
			t.Errorf("%s: uid and title are required", f)
		}
		vars := map[string]string{}
		types := map[string]string{}
		var exprs []string
		for _, v := range d.Templating.List {
			types[v.Name] = v.Type
			switch v.Type {
			case "custom", "constant", "textbox":
				if s, ok := v.Current.Value.(string); ok {
					vars[v.Name] = s
				}
			case "query":
				var q struct {
					Query string `json:"query"`
				}
				if json.Unmarshal(v.Query, &q) != nil {
					_ = json.Unmarshal(v.Query, &q.Query)
				}
				m := labelValues.FindStringSubmatch(strings.TrimSpace(q.Query))
				if m == nil {
					t.Errorf("%s: variable %s: query %q is not label_values(selector, label)", f, v.Name, q.Query)
					continue
				}
				exprs = append(exprs, m[1])
			}
		}
		// Templated by data source and target.
		if types["datasource"] != "datasource" || types["target"] != "query" {
			t.Errorf("%s: want variables datasource (type datasource) and target (type query), have %v", f, types)
		}
		var walk func(ps []panel)
		n := 0
		walk = func(ps []panel) {
			for _, pn := range ps {
				walk(pn.Panels)
				if pn.Type == "row" {
					continue
				}
				n++
				if pn.Datasource == nil || pn.Datasource.UID != "${datasource}" {
					t.Errorf("%s: panel %q: datasource must be ${datasource}", f, pn.Title)
				}
				if len(pn.Targets) == 0 {
					t.Errorf("%s: panel %q has no query", f, pn.Title)
				}
				for _, q := range pn.Targets {
					exprs = append(exprs, q.Expr)
				}
			}
		}
		walk(d.Panels)
		if n == 0 {
			t.Errorf("%s: no panels", f)
		}
		for _, e := range exprs {
			s := substitute(e, vars)
			expr, err := p.ParseExpr(s)
			if err != nil {
				t.Errorf("%s: %q (as %q): %v", f, e, s, err)
				continue
			}
			for _, name := range selected(expr) {
				if !k[name] {
					t.Errorf("%s: %q selects %q: not exported by infscale or a supported server, nor recorded in rules/", f, e, name)
				}
			}
		}
	}
}

// TestSubstitute pins the variable substitution the dashboard test relies on.
func TestSubstitute(t *testing.T) {
	got := substitute(`sum(rate(x{target=~"$target",ns="${namespace:regex}"}[$__rate_interval])) > $slo`, map[string]string{"slo": "2"})
	want := `sum(rate(x{target=~"x",ns="x"}[5m])) > 2`
	if got != want {
		t.Errorf("substitute = %s, want %s", got, want)
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// decisionCopies are infscale's series that every serve replica exports
// alike: each replica decides on the same signals (docs/ha.md), so two
// replicas (the chart's replicas: 2 with leases) give two equal copies.
// Each also reads the same sources, so a failed read is counted by each
// (infscale_query_errors_total): "Query errors" and InfscaleQueryErrors
// summed them, showing twice the failure rate.
var decisionCopies = []string{"infscale_decisions_total", "infscale_scale_changes_total", "infscale_scale_reversals_total", "infscale_query_errors_total"}

// TestDecisionCopiesNotSummed: an expression of the dashboards or rules
// that aggregates a decision series takes the max of the copies, as the
// recording rules do (docs/grafana.md): two replicas each counting 4
// decisions in a window are 4 decisions, which a sum reads as 8. "Decisions
// by reason" summed them.
func TestDecisionCopiesNotSummed(t *testing.T) {
	checked := 0
	eachAggregate(t, func(e string, a *parser.AggregateExpr) {
		for _, name := range selected(a.Expr) {
			for _, c := range decisionCopies {
				if name == c {
					checked++
					if a.Op != parser.MAX {
						t.Errorf("%q: %s over %s adds the copies of each serve replica; want max", e, a.Op, name)
					}
				}
			}
		}
	})
	if checked < 3 {
		t.Errorf("%d aggregations of decision series checked, want the dashboard's and the alerts' (3 or more)", checked)
	}
}

// targetOnly are the per-target series without a role label even for a
// P/D target (the tuned candidate is decided per target).
var targetOnly = map[string]bool{"infscale_candidate_desired_replicas": true, "infscale_tuned_policy_info": true, "infscale_tuned_policy_reverted": true}

// TestPoolsKept: an expression of the dashboards or rules that aggregates
// infscale's per-target series by target also keeps role, so a P/D target's
// two pools (role="prefill", role="decode": docs/metrics.md) stay two
// series. By target alone, max(prefill, decode) hid the smaller pool: its
// desired 3 against current 2 under decode's 5 against 5 drew one line
// and never alerted.
func TestPoolsKept(t *testing.T) {
	checked := 0
	eachAggregate(t, func(e string, a *parser.AggregateExpr) {
		if a.Without || !slices.Contains(a.Grouping, "target") {
			return
		}
		for _, name := range selected(a.Expr) {
			if !strings.HasPrefix(name, "infscale_") || strings.HasPrefix(name, "infscale_activator_") || targetOnly[name] {
				continue
			}
			checked++
			if !slices.Contains(a.Grouping, "role") {
				t.Errorf("%q: %s by (%s) over %s folds a P/D target's pools; want by (..., role)", e, a.Op, strings.Join(a.Grouping, ", "), name)
			}
		}
	})
	if checked < 20 {
		t.Errorf("%d aggregations by target checked, want the dashboard's and the rules' (20 or more)", checked)
	}
}

// eachAggregate calls f with each aggregation of every dashboard panel's
// and rule's expression (allExprs, the $slo variable set), and the
// expression it is in.
func eachAggregate(t *testing.T, f func(expr string, a *parser.AggregateExpr)) {
	t.Helper()
	p := parser.NewParser(parser.Options{})
	for _, e := range allExprs(t) {
		expr, err := p.ParseExpr(substitute(e, map[string]string{"slo": "2.5"}))
		if err != nil {
			t.Fatalf("%q: %v", e, err)
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			if a, ok := n.(*parser.AggregateExpr); ok {
				f(e, a)
			}
			return nil
		})
	}
}

// allExprs are the expressions of every dashboard panel (nested panels
// included) and every rule.
func allExprs(t *testing.T) []string {
	t.Helper()
	var exprs []string
	for _, d := range loadDashboards(t) {
		var walk func(ps []panel)
		walk = func(ps []panel) {
			for _, pn := range ps {
				walk(pn.Panels)
				for _, q := range pn.Targets {
					exprs = append(exprs, q.Expr)
				}
			}
		}
		walk(d.Panels)
	}
	for _, rs := range ruleGroups(t) {
		for _, r := range rs {
			exprs = append(exprs, r.Expr)
		}
	}
	return exprs
}
