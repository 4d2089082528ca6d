package dashboards

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/pkg/recommend"
)

// panelsByTitle is every panel of the dashboards by its title, with the
// metrics its queries select.
func panelsByTitle(t *testing.T) map[string]map[string]bool {
	t.Helper()
	p := parser.NewParser(parser.Options{})
	out := map[string]map[string]bool{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, pn := range ps {
			walk(pn.Panels)
			sel := map[string]bool{}
			for _, q := range pn.Targets {
				expr, err := p.ParseExpr(substitute(q.Expr, nil))
				if err != nil {
					continue // a custom variable's query (vector($slo)): TestDashboards parses it with the variables
				}
				for _, n := range selected(expr) {
					sel[n] = true
				}
			}
			out[pn.Title] = sel
		}
	}
	for _, d := range loadDashboards(t) {
		walk(d.Panels)
	}
	return out
}

// alertPanel is "METRIC{...} (panel TITLE)" in an alert's annotation.
var alertPanel = regexp.MustCompile(`(\w+)\{[^}]*\} \(panel ([^)]+)\)`)

// TestAlertPanelsReadTheirMetric: an alert that sends the reader to a panel
// for a metric ("infscale_decision_reason{target=...} (panel ...)": the
// TTFT burn alerts) names a panel of the dashboard that draws that metric.
// The burn alerts named "Decisions by reason", which draws
// infscale_decisions_total's increase() (blind to a reason's first
// decision), not infscale_decision_reason: the reader met other numbers
// than the alert's.
func TestAlertPanelsReadTheirMetric(t *testing.T) {
	panels := panelsByTitle(t)
	checked := 0
	for f, rules := range ruleGroups(t) {
		for _, r := range rules {
			for _, text := range r.Annotations {
				for _, m := range alertPanel.FindAllStringSubmatch(text, -1) {
					checked++
					sel, ok := panels[m[2]]
					if !ok {
						t.Errorf("%s %s: names panel %q: no such panel", f, r.Alert, m[2])
						continue
					}
					if !sel[m[1]] {
						t.Errorf("%s %s: names panel %q for %s, which the panel does not read", f, r.Alert, m[2], m[1])
					}
				}
			}
		}
	}
	if checked < 2 {
		t.Errorf("%d alert annotations name a panel for a metric, want the two TTFT burn alerts'", checked)
	}
}

// reversalMinutes is the reversal window the "Scale changes and reversals"
// panel states.
var reversalMinutes = regexp.MustCompile(`less than (\d+) minutes before`)

// TestReversalPanelStatesTheWindow: the panel's description gives the
// window infscale_scale_reversals_total counts a reversal within,
// recommend.ReversalWindow (docs/metrics.md: 300 s). It said 10 minutes.
func TestReversalPanelStatesTheWindow(t *testing.T) {
	found := false
	for _, d := range loadDashboards(t) {
		for _, pn := range d.Panels {
			if pn.Title != "Scale changes and reversals" {
				continue
			}
			found = true
			m := reversalMinutes.FindStringSubmatch(pn.Description)
			if m == nil {
				t.Fatalf("panel %q: description %q does not say the window (\"less than N minutes before\")", pn.Title, pn.Description)
			}
			n, _ := strconv.Atoi(m[1])
			if got := time.Duration(n) * time.Minute; got != recommend.ReversalWindow {
				t.Errorf("panel %q says %v, want recommend.ReversalWindow %v (docs/metrics.md: 300 s)", pn.Title, got, recommend.ReversalWindow)
			}
		}
	}
	if !found {
		t.Fatal("no panel Scale changes and reversals")
	}
}
