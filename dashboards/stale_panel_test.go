package dashboards

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// TestStalePanelThresholdIsTheRules: the panel "Time since last decision"
// draws the age InfscaleDecisionsStale fires above (docs/grafana.md: the
// dashed line); its query must be the rule's threshold, the right-hand
// side of its `>`, with the panel's target and namespace filter. Before, the panel left
// out the rule's `or ... + 120` for a serve without
// infscale_decision_interval_seconds, so such a target had no line while
// its alert fired above 120 s. The panel's age line is the rule's
// left-hand side, the age at infscale's last scrape: it drew time() minus
// the decision, which runs up to a scrape interval ahead (130 s against the
// rule's 120 s at 2m10s of a decision made at 0 and scraped every 15 s), so
// the line crossed the dashed threshold while the alert did not fire.
func TestStalePanelThresholdIsTheRules(t *testing.T) {
	// The panel's filter: the targets and installations picked.
	const panelFilter = `{target=~"$target", namespace=~"$infscale_namespace"}`
	p := parser.NewParser(parser.Options{})
	var rule string
	for _, rules := range ruleGroups(t) {
		for _, r := range rules {
			if r.Alert == "InfscaleDecisionsStale" {
				rule = r.Expr
			}
		}
	}
	expr, err := p.ParseExpr(rule)
	if err != nil {
		t.Fatalf("InfscaleDecisionsStale: %v", err)
	}
	be, ok := expr.(*parser.BinaryExpr)
	if !ok || be.Op != parser.GTR {
		t.Fatalf("InfscaleDecisionsStale: %q is not AGE > THRESHOLD", rule)
	}
	var got, ages []string
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, pn := range ps {
			walk(pn.Panels)
			if pn.Title != "Time since last decision" {
				continue
			}
			for _, q := range pn.Targets {
				if strings.Contains(q.Expr, "infscale_decision_interval_seconds") {
					got = append(got, q.Expr)
				} else {
					ages = append(ages, q.Expr)
				}
			}
		}
	}
	for _, d := range loadDashboards(t) {
		walk(d.Panels)
	}
	if len(got) != 1 {
		t.Fatalf("panel Time since last decision: %d threshold queries %q, want 1", len(got), got)
	}
	panelExpr, err := p.ParseExpr(strings.ReplaceAll(got[0], panelFilter, ""))
	if err != nil {
		t.Fatalf("%q: %v", got[0], err)
	}
	rhs := be.RHS
	for {
		pe, ok := rhs.(*parser.ParenExpr)
		if !ok {
			break
		}
		rhs = pe.Expr
	}
	if g, w := panelExpr.String(), rhs.String(); g != w {
		t.Errorf("panel threshold (its target filter left out)\n  %s\nwant the rule's\n  %s", g, w)
	}
	if len(ages) != 1 {
		t.Fatalf("panel Time since last decision: %d age queries %q, want 1", len(ages), ages)
	}
	ageExpr, err := p.ParseExpr(strings.ReplaceAll(ages[0], panelFilter, ""))
	if err != nil {
		t.Fatalf("%q: %v", ages[0], err)
	}
	if g, w := ageExpr.String(), be.LHS.String(); g != w {
		t.Errorf("panel age (its target filter left out)\n  %s\nwant the rule's\n  %s", g, w)
	}
}
