package backtest

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/modelserver"
)

// TestCoverageCountsGaugeGaps: one vLLM pod finishes a request a second
// over 6 hours, scraped every minute, over a real Prometheus (promtool
// backfill); its running and waiting gauges have no sample from 2h to 4h
// (a scrape job or a store that kept the counter and lost the gauges),
// the counter all along. The in-flight values there are interpolated, so
// coverage says so: the gauges' last sample is at 1h59m, which the
// 5-minute lookback carries to the grid point 2h03m (2h04m has none in
// (1h59m, 2h04m]); the next is at 4h. The gap is 2h03m .. 4h, 1h57m of 6h:
// coverage 1 - 117/360 = 67.5%. Before, the counter alone was scanned:
// 100%, no gap.
func TestCoverageCountsGaugeGaps(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(6 * time.Hour)
	gap0, gap1 := start.Add(2*time.Hour), start.Add(4*time.Hour)
	history := promtest.VLLMHistory(start, end, func(at time.Time) bool { return at.Before(gap0) || !at.Before(gap1) })
	prom := promtest.Start(t, promtest.Options{DataDir: promtest.Backfill(t, history), Flags: []string{"--storage.tsdb.retention.time=10y"}})
	api, ms, g := llmHistory(t, prom.URL, start, end)
	h, _, err := Fetch(context.Background(), api, Target{Server: modelserver.VLLM, Selector: ms}, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Reconstruct(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Coverage.Gaps) != 0 {
		t.Errorf("counter gaps %v, want none (sampled all along)", w.Coverage.Gaps)
	}
	want := Gap{start.Add(2*time.Hour + 3*time.Minute), gap1}
	if len(w.Coverage.GaugeGaps) != 1 || !w.Coverage.GaugeGaps[0].From.Equal(want.From) || !w.Coverage.GaugeGaps[0].To.Equal(want.To) {
		t.Errorf("gauge gaps %v, want one, %v .. %v", w.Coverage.GaugeGaps, want.From, want.To)
	}
	near(t, "fraction", w.Coverage.Fraction, 1-117.0/360, 1e-9)
	// The grid points 2h04m .. 3h59m are unknown: the steps 2h04m .. 4h
	// (117 of them, each with an end inside the gap) are interpolated.
	if w.Coverage.Interpolated != 117 {
		t.Errorf("interpolated steps %d, want 117", w.Coverage.Interpolated)
	}
	// They are the steps Known leaves out (profile's hours skip them):
	// 2h04m .. 4h, the 124th .. 240th of 360. Before, Known read the
	// counter's gaps alone: every step known.
	known := w.Known()
	for j := 1; j <= g.N; j++ {
		if want := j < 124 || j > 240; known[j] != want {
			t.Errorf("step %d (ending %s): known %v, want %v", j, g.At(j).Sub(start), known[j], want)
		}
	}
	// The arrivals stay the counter's: 1 a second, 21,600 in 6 hours
	// (in flight 4 at both ends).
	near(t, "requests", w.Requests, 21600, 1e-6)
}

// TestGaugeGaps: gaugeGaps and covered on a grid of 10 one-minute steps,
// threshold 3 minutes. In flight unknown at points 2..5 (from the known
// point 1 to the known point 6: 5 minutes, a gap), at point 8 alone (7 to
// 9: 2 minutes, none), and at 0 replicas at points 9..10 (no pod: known,
// none). A counter gap 4..7 overlaps the gauge gap 1..6: their union 1..7
// is 6 of 10 minutes, counted once: coverage 40%.
func TestGaugeGaps(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 10}
	nan := math.NaN()
	inFlight := []float64{3, 3, nan, nan, nan, nan, 3, 3, nan, nan, nan}
	replicas := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}
	gaps := gaugeGaps(g, inFlight, replicas, 3*time.Minute)
	if len(gaps) != 1 || !gaps[0].From.Equal(at(60)) || !gaps[0].To.Equal(at(360)) {
		t.Fatalf("gauge gaps %v, want one, 60 s .. 360 s", gaps)
	}
	near(t, "fraction", covered(g.Start, g.End(), []Gap{{at(240), at(420)}}, gaps), 0.4, 1e-9)
	// Unknown from the start to point 3 and from point 7 to the end: the
	// gaps run from the range's start (to the known point 4: 4 minutes)
	// and to its end (from the known point 6: 4 minutes).
	lead := []float64{nan, nan, nan, nan, 3, 3, 3, nan, nan, nan, nan}
	gaps = gaugeGaps(g, lead, nil, 3*time.Minute)
	if len(gaps) != 2 || !gaps[0].From.Equal(at(0)) || !gaps[0].To.Equal(at(240)) || !gaps[1].From.Equal(at(360)) || !gaps[1].To.Equal(at(600)) {
		t.Errorf("gauge gaps %v, want 0 .. 240 s and 360 .. 600 s", gaps)
	}
	if gaps := gaugeGaps(g, nil, nil, 3*time.Minute); gaps != nil {
		t.Errorf("no in-flight values: gaps %v, want none", gaps)
	}
}
