package replay

import (
	"bytes"
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/infscale/infscale/internal/svgtest"
	"github.com/infscale/infscale/pkg/trace"
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
	for _, want := range []string{"time (h)", "TTFT p95 (s, log); dashed: SLO 2s", "replicas asked for, the most per 1 min"} {
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
	for _, want := range []string{"Jan 06", "replicas asked for, the most per 10 min (cut at 4; peak 100)", "time (UTC)"} {
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

// plotDir keeps the plots the tests render, to look at them.
var plotDir = flag.String("plot-dir", "", "write the plots TestPlotReadable renders to this directory (PNG and SVG) instead of a temporary one")

// renderPlot is PlotAt in both formats, written as name.png and
// name.svg to -plot-dir or a temporary directory; it returns the SVG's
// structure, read back from the file.
func renderPlot(t *testing.T, name string, res []Result, slo float64, start time.Time) svgtest.Doc {
	t.Helper()
	dir := *plotDir
	if dir == "" {
		dir = t.TempDir()
	}
	for _, format := range []string{"png", "svg"} {
		var b bytes.Buffer
		if err := PlotAt(&b, format, res, slo, start); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+"."+format), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, name+".svg"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := svgtest.Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// checkPlotDoc: every unrotated text (the legend's, the titles, the tick
// labels) ends inside the canvas even at 0.6 em a character (a viewer
// without Liberation Serif substitutes a wider font; the legend used to be
// cut there), and the policies' lines are n distinct stroke styles.
func checkPlotDoc(t *testing.T, doc svgtest.Doc, res []Result) {
	t.Helper()
	for _, x := range doc.Outside(0.6) {
		t.Errorf("text %q at (%.0f, %.0f) ends at x %.0f: outside the canvas %.0f x %.0f", x.Body, x.X, x.Y, x.Right(0.6), doc.W, doc.H)
	}
	styles := map[string]bool{}
	for _, s := range doc.Strokes {
		if strings.Contains(s, "stroke-width:1.5") {
			styles[s] = true
		}
	}
	if len(styles) < len(res) {
		t.Errorf("%d distinct policy stroke styles for %d policies: %v", len(styles), len(res), styles)
	}
	for _, r := range res {
		if _, ok := doc.Find(r.Policy); !ok {
			t.Errorf("legend lacks %s", r.Policy)
		}
	}
}

// checkPanels: no panel sits under a gap: between the top of each panel's
// tile and its data area there is at most its title and one line of text
// (the TTFT panel on gonum's LogScale had its axis label centred at the
// arithmetic middle of its range, near the top, which pushed the data
// down under an empty band with the title left above it).
func checkPanels(t *testing.T, res []Result, slo float64, start time.Time) {
	t.Helper()
	pl, err := newPanels(res, slo, start)
	if err != nil {
		t.Fatal(err)
	}
	dc := draw.New(vgimg.New(32*vg.Centimeter, 30*vg.Centimeter))
	canvases, lc := pl.draw(dc)
	for i, p := range pl.plots {
		data := p.DataCanvas(canvases[i])
		allowed := vg.Points(14) // a tick label's half height and the padding, with room
		if p.Title.Text != "" {
			allowed += p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
		}
		if gap := canvases[i].Max.Y - data.Max.Y; gap > allowed {
			t.Errorf("panel %d (%q): %.0f pt above its data, want <= %.0f", i, p.Title.Text, gap.Points(), allowed.Points())
		}
		if h := data.Max.Y - data.Min.Y; h < 5*vg.Centimeter {
			t.Errorf("panel %d: data area %.1f cm high, want >= 5 cm", i, h/vg.Centimeter)
		}
	}
	if lc.Min.X < canvases[1].Max.X {
		t.Errorf("legend at x %.0f pt overlaps the panels (right edge %.0f pt)", lc.Min.X.Points(), canvases[1].Max.X.Points())
	}
}

// TestPlotReadable renders simulate's plot of the reference trace (the
// ten default policies) and a backtest's week (seven policies beside the
// actual, PlotAt with a start) and checks what makes them readable:
// panels without a gap, every text inside the canvas, a stroke style per
// policy; the week's replicas in 30-minute steps (a week of 15 s periods
// over 400 steps: 604,800 / 1,800 = 336 bins), not 40,320 points each.
func TestPlotReadable(t *testing.T) {
	cfg := Config{Model: referenceModel(t), Timeline: true}
	sim := runPolicies(t, trace.Reference(1), cfg, DefaultPolicies...)
	checkPlotDoc(t, renderPlot(t, "simulate", sim, 2, time.Time{}), sim)
	checkPanels(t, sim, 2, time.Time{})

	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	var week []Result
	for i := range 8 {
		var tl []Sample
		for s := 15.0; s <= 7*86400; s += 15 {
			day := math.Sin(2 * math.Pi * s / 86400)
			d := max(1, int(6+4*day+float64((int(s)/15*7+i)%5)-2+float64(i%3)))
			tl = append(tl, Sample{T: s, ArrivalRate: 20 + 15*day, Desired: d, TTFTP95: 0.05 * float64(1+(int(s)/15+i)%7)})
		}
		name := fmt.Sprintf("policy-%d", i)
		if i == 0 {
			name = "actual"
		}
		week = append(week, Result{Policy: name, Trace: "history", Timeline: tl})
	}
	checkPlotDoc(t, renderPlot(t, "backtest", week, 2, start), week)
	checkPanels(t, week, 2, start)
	if w := replicaBin(7*86400, len(week[0].Timeline)); w != 1800 {
		t.Errorf("a week's replica bin %g s, want 1800", w)
	}
	steps := replicaSteps(week[0].Timeline, 1800, func(x float64) float64 { return x })
	if len(steps) != 336+1 {
		t.Errorf("%d steps, want 337 (336 bins and the last one's end)", len(steps))
	}
}

// TestReplicaSteps: per bin the most asked for, at the bin's start; a
// short timeline is drawn as it is.
func TestReplicaSteps(t *testing.T) {
	tl := []Sample{{T: 15, Desired: 1}, {T: 30, Desired: 4}, {T: 45, Desired: 2}, {T: 60, Desired: 1}, {T: 75, Desired: 3}, {T: 90, Desired: 1}}
	id := func(x float64) float64 { return x }
	// bins of 60 s: (0,60] holds 1, 4, 2, 1 -> 4; (60,120] holds 3, 1 -> 3, ending at the last sample.
	got := replicaSteps(tl, 60, id)
	want := plotter.XYs{{X: 0, Y: 4}, {X: 60, Y: 3}, {X: 90, Y: 3}}
	if !slices.Equal(got, want) {
		t.Errorf("binned %v, want %v", got, want)
	}
	if got := replicaSteps(tl, 0, id); len(got) != len(tl) || got[1] != (plotter.XY{X: 30, Y: 4}) {
		t.Errorf("unbinned %v", got)
	}
	// The load in the same bins: rates 1, 2, 3, 6 then 5, 7: means 3 and
	// 6 at the bins' middles (30 s; the second's 90 s is capped at the
	// last sample, 90 s), ranges 1-6 and 5-7.
	for i, r := range []float64{1, 2, 3, 6, 5, 7} {
		tl[i].ArrivalRate = r
	}
	mean, band := loadBins(tl, 60, id)
	if want := (plotter.XYs{{X: 30, Y: 3}, {X: 90, Y: 6}}); !slices.Equal(mean, want) {
		t.Errorf("load means %v, want %v", mean, want)
	}
	if want := (plotter.XYs{{X: 30, Y: 6}, {X: 90, Y: 7}, {X: 90, Y: 5}, {X: 30, Y: 1}}); !slices.Equal(band, want) {
		t.Errorf("load band %v, want %v", band, want)
	}
	if w := replicaBin(1500, 100); w != 0 {
		t.Errorf("100 samples binned at %g s, want 0 (drawn as they are)", w)
	}
}

// TestLog10Ticks: a range of 0.006 to 150 s in log10 is labelled at 0.01,
// 0.1, 1, 10 and 100 s.
func TestLog10Ticks(t *testing.T) {
	var labels []string
	for _, tk := range (log10Ticks{}).Ticks(math.Log10(0.006), math.Log10(150)) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"0.01", "0.1", "1", "10", "100"}; !slices.Equal(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
}

// TestPlotPair: PlotPairAt on two pair policies over 6 h, each pool's
// timeline written by hand: the prefill pool at 1 replica under
// "pd-alpha" and 2 under "pd-beta", the decode pool at 3 under both;
// TTFT p95 0.05 s at the prefill pool (its own part), 0.3 s at the
// decode pool (the whole path). Four panels, 40 cm high: load, prefill
// replicas (axis to the peak 2 x 1.08 = 2.16: the 99th percentile, 2,
// x 1.15 rounds up to 3, above the peak), decode replicas (3 x 1.08 =
// 3.24), and the pair's TTFT from the decode pool's timeline (axis
// log10(0.3 / 1.5) to log10(2 x 1.5) with the SLO 2 s, within the
// replay's quantile sketch's bucket, 0.1%; the prefill pool's 0.05 s
// would have put its bottom at log10(0.05 / 1.5)). Each
// policy is in the legend once and every text inside the canvas.
func TestPlotPair(t *testing.T) {
	tl := func(desired int, ttft float64) []Sample {
		var s []Sample
		for x := 15.0; x <= 6*3600; x += 15 {
			s = append(s, Sample{T: x, ArrivalRate: 5, Desired: desired, TTFTP95: ttft})
		}
		return s
	}
	res := []PDResult{
		{Policy: "pd-alpha", Trace: "t", Prefill: Result{Timeline: tl(1, 0.05)}, Decode: Result{Timeline: tl(3, 0.3)}},
		{Policy: "pd-beta", Trace: "t", Prefill: Result{Timeline: tl(2, 0.05)}, Decode: Result{Timeline: tl(3, 0.3)}},
	}
	pl, err := newPairPanels(res, 2, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.plots) != 4 {
		t.Fatalf("%d panels, want 4", len(pl.plots))
	}
	for i, want := range []struct {
		title    string
		min, max float64
	}{
		{"prefill pool", 0, 2.16},
		{"decode pool", 0, 3.24},
		{"TTFT p95 of the pair's path", math.Log10(0.2), math.Log10(3)},
	} {
		p := pl.plots[i+1]
		if !strings.HasPrefix(p.Title.Text, want.title) || math.Abs(p.Y.Min-want.min) > 1e-3 || math.Abs(p.Y.Max-want.max) > 1e-3 {
			t.Errorf("panel %d: %q, y %g..%g; want %q, %g..%g", i+1, p.Title.Text, p.Y.Min, p.Y.Max, want.title, want.min, want.max)
		}
	}
	var b bytes.Buffer
	if err := PlotPairAt(&b, "svg", res, 2, time.Time{}); err != nil {
		t.Fatal(err)
	}
	doc, err := svgtest.Parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if want := (40 * vg.Centimeter).Points(); math.Abs(doc.H-want) > 0.5 {
		t.Errorf("canvas %.0f pt high, want %.0f (four panels)", doc.H, want)
	}
	for _, x := range doc.Outside(0.6) {
		t.Errorf("text %q ends outside the canvas", x.Body)
	}
	for _, p := range []string{"pd-alpha", "pd-beta"} {
		if n := strings.Count(b.String(), ">"+p+"<"); n != 1 {
			t.Errorf("%s appears %d times, want once (one legend)", p, n)
		}
	}
	var png bytes.Buffer
	if err := PlotPairAt(&png, "png", res, 2, time.Time{}); err != nil || !bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")) {
		t.Errorf("png: %v", err)
	}
}
