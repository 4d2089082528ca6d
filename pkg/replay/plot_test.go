package replay

import (
	"bytes"
	"fmt"
	"image/color"
	"slices"
	"strings"
	"testing"
	"time"
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

// TestPlotDatesCutLegendColours: a backtest's plot (PlotAt with the
// history's start, 2026-01-05 00:00 UTC, a Monday) over 2 days has dates on
// the time axis; 12 policies asking for 3 replicas, one of them 100 for a
// single period, put the replicas axis at ceil(1.15 x 3) = 4 (the 99th
// percentile of 12 x 11,520 values is 3) and say the peak was cut; each
// policy is in the legend once, in a colour of its own.
func TestPlotDatesCutLegendColours(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	var res []Result
	for i := range 12 {
		var tl []Sample
		for s := 15.0; s <= 2*86400; s += 15 {
			d := 3
			if i == 0 && s == 3600 {
				d = 100
			}
			tl = append(tl, Sample{T: s, ArrivalRate: 5, Desired: d, TTFTP95: 0.05 + 0.01*float64(i)})
		}
		res = append(res, Result{Policy: fmt.Sprintf("policy-%02d", i), Trace: "t", Timeline: tl})
	}
	var b bytes.Buffer
	if err := PlotAt(&b, "svg", res, 2, start); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{"Jan 06", "cut at 4; peak 100", "time (UTC)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	for _, r := range res {
		if n := strings.Count(svg, r.Policy); n != 1 {
			t.Errorf("%s appears %d times, want once (the legend)", r.Policy, n)
		}
	}
	seen := map[color.NRGBA]int{}
	for i := range 12 {
		if j, ok := seen[plotColor(i)]; ok {
			t.Errorf("policies %d and %d share a colour", j, i)
		}
		seen[plotColor(i)] = i
		if i > 0 && slices.Equal(plotDashes(i), plotDashes(i-1)) {
			t.Errorf("policies %d and %d share dashes", i-1, i)
		}
	}
}

// TestDateTicks: a week from Monday 2026-01-05 10:00 UTC is labelled at
// each of its 7 midnights (Tuesday 06 to Monday 12), minor ticks every 6 h.
func TestDateTicks(t *testing.T) {
	lo := float64(time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC).Unix())
	var labels []string
	ticks := dateTicks{loc: time.UTC}.Ticks(lo, lo+7*86400)
	for _, tk := range ticks {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	want := []string{"Tue Jan 06", "Wed Jan 07", "Thu Jan 08", "Fri Jan 09", "Sat Jan 10", "Sun Jan 11", "Mon Jan 12"}
	if !slices.Equal(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
	// 12:00, 18:00 on the 5th, then 4 a day for 6 days, then 00:00 and 06:00 on the 12th.
	if len(ticks) != 2+4*6+2 {
		t.Errorf("%d ticks, want 28", len(ticks))
	}
}
