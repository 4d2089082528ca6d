package replay

import (
	"bytes"
	"strings"
	"testing"
)

// TestPlotLegendOnceAndUnits: the policies' legend is drawn once (in the
// replicas panel; it used to repeat over the TTFT panel and cover the SLO
// line), the SLO is named in the TTFT axis label, and a 6 h replay's time
// axis is in hours (21,600 s / 3,600 = 6).
func TestPlotLegendOnceAndUnits(t *testing.T) {
	var tl []Sample
	for s := 15.0; s <= 6*3600; s += 15 {
		tl = append(tl, Sample{T: s, ArrivalRate: 5, Desired: 2, TTFTP95: 0.05})
	}
	res := []Result{{Policy: "policy-alpha", Trace: "t", Timeline: tl}, {Policy: "policy-beta", Trace: "t", Timeline: tl}}
	var b bytes.Buffer
	if err := Plot(&b, "svg", res, 2); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{"policy-alpha", "policy-beta"} {
		if n := strings.Count(svg, want); n != 1 {
			t.Errorf("%s appears %d times in the SVG, want once (one legend)", want, n)
		}
	}
	for _, want := range []string{"time (h)", "TTFT p95 (s); dashed: SLO 2s"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}
