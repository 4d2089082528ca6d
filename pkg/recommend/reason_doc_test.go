package recommend

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReasonsDocumented checks that docs/recommend.md's Reasons table, the
// one table of reason values, has a row for every reason the code can give
// (Reasons: every Decision.Reason and Step.Reason but 0), and no row for a
// value the code does not give; and that the values renamed to the HPA's
// words are the HPA controller's own condition reasons.
func TestReasonsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/recommend.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n## Reasons\n")
	if i < 0 {
		t.Fatal("docs/recommend.md has no ## Reasons section")
	}
	section := doc[i+1:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(section, -1) {
		rows[m[1]] = true
	}
	code := map[string]bool{}
	for _, r := range Reasons() {
		code[r.String()] = true
		if !rows[r.String()] {
			t.Errorf("reason %q is not in docs/recommend.md's Reasons table", r)
		}
	}
	for row := range rows {
		if !code[row] {
			t.Errorf("docs/recommend.md's Reasons table has %q, which no reason is", row)
		}
	}
	// The HPA's words, as pkg/controller/podautoscaler/horizontal.go sets
	// them on its ScalingLimited condition.
	for r, hpa := range map[Reason]string{ReasonMetric: "DesiredWithinRange", ReasonMin: "TooFewReplicas", ReasonMax: "TooManyReplicas",
		ReasonScaleUpStabilized: "ScaleUpStabilized", ReasonScaleDownStabilized: "ScaleDownStabilized",
		ReasonScaleUpLimit: "ScaleUpLimit", ReasonScaleDownLimit: "ScaleDownLimit"} {
		if r.String() != hpa {
			t.Errorf("%d is %q, want the HPA's %q", int(r), r, hpa)
		}
	}
}

// TestReasonOldNames checks that a reason written under its old name (a
// state file of the previous release) still reads, and that the new name
// round-trips.
func TestReasonOldNames(t *testing.T) {
	for old, want := range map[string]Reason{"metric": ReasonMetric, "min": ReasonMin, "max": ReasonMax, "TooManyReplicas": ReasonMax, "stabilized": ReasonScaleDownStabilized, "rate-limited": ReasonScaleUpLimit} {
		var r Reason
		if err := r.UnmarshalText([]byte(old)); err != nil || r != want {
			t.Errorf("%q read as %v, %v; want %v", old, r, err, want)
		}
	}
	var r Reason
	if err := r.UnmarshalText([]byte("maximum")); err == nil {
		t.Errorf("maximum read as %v", r)
	}
}

// Reasons lists every reason, in declaration order.
func Reasons() []Reason {
	out := make([]Reason, 0, len(reasonNames)-1)
	for r := ReasonMetric; r <= ReasonLast; r++ {
		out = append(out, r)
	}
	return out
}

// TestMetricReasonsListed: docs/metrics.md's infscale_decision_reason row,
// which spells the reasons out for a reader of the metric, names each one.
func TestMetricReasonsListed(t *testing.T) {
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `infscale_decision_reason` \\|.*$").Find(b)
	if row == nil {
		t.Fatal("docs/metrics.md has no infscale_decision_reason row")
	}
	for _, r := range Reasons() {
		if !strings.Contains(string(row), "`"+r.String()+"`") {
			t.Errorf("docs/metrics.md's infscale_decision_reason row does not name the reason %s", r)
		}
	}
}
