package backtest

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func pts(xs ...float64) []Point {
	var out []Point
	for i := 0; i+1 < len(xs); i += 2 {
		out = append(out, Point{T: at(xs[i]), V: xs[i+1]})
	}
	return out
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v (±%v)", what, got, want, tol)
	}
}

func TestCounterIncreaseReset(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 3}
	// 100 → 160 (+60), → 40: reset, the counter restarted from 0 (+40),
	// → 100 (+60). Never the negative 40-160 = -120, never 160+40 doubled.
	inc := counterIncrease(g, []Series{{Points: pts(0, 100, 60, 160, 120, 40, 180, 100)}}, Coverage{})
	near(t, "step 1", inc[1], 60, 1e-9)
	near(t, "step 2", inc[2], 40, 1e-9)
	near(t, "step 3", inc[3], 60, 1e-9)
}

func TestCounterIncreaseNewSeriesAndGap(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 11}
	// Series a: baseline 0 at 0, 60 at 60, then silent until 600 (a gap):
	// the increase 660-60 = 600 spreads over (60, 600], 9 steps of 66.67.
	// Series b appears at 120 with 30: a new process, counted in full in
	// step 2 (60, 120].
	inc := counterIncrease(g, []Series{
		{Points: pts(0, 0, 60, 60, 600, 660, 660, 720)},
		{Points: pts(120, 30)},
	}, Coverage{Threshold: 3 * time.Minute, Gaps: []Gap{{at(120), at(600)}}})
	near(t, "step 1", inc[1], 60, 1e-9)
	near(t, "step 2", inc[2], 600.0/9+30, 1e-9)
	near(t, "step 5", inc[5], 600.0/9, 1e-9)
	near(t, "step 11", inc[11], 60, 1e-9)
	total := 0.0
	for _, v := range inc {
		total += v
	}
	near(t, "total", total, 720+30, 1e-9)
}

func TestCounterIncreaseDataBeginsInRange(t *testing.T) {
	// The data begins in the range (no series has a sample at or before
	// 0: a Prometheus that keeps less than was asked), its pods scraped
	// every 60 s at their own offsets: a at 10 s with 100,000 served in its
	// life, b at 50 s with 200,000. Both were running when the data
	// begins (within the 3 min threshold of its first sample): baselines,
	// though b's first sample is after the first step (0, 30]. Counted in
	// full, its 200,000 landed in step 2.
	g := Grid{Start: t0, Step: 30 * time.Second, N: 6}
	series := []Series{
		{Points: pts(10, 100000, 70, 100060, 130, 100120)},
		{Points: pts(50, 200000, 110, 200030, 170, 200060)},
	}
	inc := counterIncrease(g, series, coverage(g, series, 0))
	// Step 2 (30, 60]: half of a's 60 over (10, 70] and 10 s of b's 30
	// over (50, 110]: 30 + 5.
	near(t, "step 2", inc[2], 35, 1e-9)
	total := 0.0
	for _, v := range inc {
		total += v
	}
	near(t, "total", total, 120+60, 1e-9)
}

func TestCounterIncreaseNewPodAfterGap(t *testing.T) {
	// Series a: 0 at 0, 60 at 60, silent until 600 (a gap, 60..600), 660
	// at 600, 720 at 660. Series b is first seen at 630, 30 s after the
	// gap, with 540: a pod started in the gap, its count spread over
	// (60, 630] (540/570 a second) as a's increase is over (60, 600].
	// Counted at its first sample, the 540 landed in step 11.
	g := Grid{Start: t0, Step: time.Minute, N: 11}
	series := []Series{
		{Points: pts(0, 0, 60, 60, 600, 660, 660, 720)},
		{Points: pts(630, 540)},
	}
	cov := coverage(g, series, 0)
	if len(cov.Gaps) != 1 || !cov.Gaps[0].From.Equal(at(60)) || !cov.Gaps[0].To.Equal(at(600)) {
		t.Fatalf("gaps %v, want one, 60 s .. 600 s", cov.Gaps)
	}
	inc := counterIncrease(g, series, cov)
	near(t, "step 5", inc[5], 600.0/9+60*540.0/570, 1e-9)
	near(t, "step 11", inc[11], 60+30*540.0/570, 1e-9)
	total := 0.0
	for _, v := range inc {
		total += v
	}
	near(t, "total", total, 720+540, 1e-9)
}

func TestReconstructNaNCounterIsAGap(t *testing.T) {
	// The success counter exported NaN from 120 s to 300 s: those are no
	// samples, so 60 .. 360 is a gap (300 s, over the 180 s threshold)
	// and the 300 counted across it spreads over it. Before, the pairs
	// around the NaNs were skipped: 120 requests read, 420 served, and a
	// coverage of 100%.
	g := Grid{Start: t0, Step: time.Minute, N: 7}
	nan := math.NaN()
	h := History{Grid: g,
		Success:    []Series{{Points: pts(0, 0, 60, 60, 120, nan, 180, nan, 240, nan, 300, nan, 360, 360, 420, 420)}},
		InFlight:   make([]float64, 8),
		PromptMean: 1, OutputMean: 1}
	w, err := Reconstruct(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "requests", w.Requests, 420, 1e-9)
	near(t, "step 3", w.Arrivals[3], 60, 1e-9)
	if len(w.Coverage.Gaps) != 1 || !w.Coverage.Gaps[0].From.Equal(at(60)) || !w.Coverage.Gaps[0].To.Equal(at(360)) {
		t.Errorf("gaps %v, want one, 60 s .. 360 s", w.Coverage.Gaps)
	}
}

func TestCoverageFindsGap(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 20}
	var ps []Point
	for s := 0.0; s <= 1200; s += 60 {
		if s > 300 && s < 900 { // no samples from 300 to 900
			continue
		}
		ps = append(ps, Point{T: at(s), V: s})
	}
	cov := coverage(g, []Series{{Points: ps}}, 0)
	// Median spacing 60 s → threshold 3 × 60 = 180 s; one gap 300..900,
	// 600 s of 1200: coverage 50%.
	if cov.Threshold != 3*time.Minute || len(cov.Gaps) != 1 {
		t.Fatalf("coverage %+v, want one gap and a 3m threshold", cov)
	}
	if !cov.Gaps[0].From.Equal(at(300)) || !cov.Gaps[0].To.Equal(at(900)) {
		t.Errorf("gap %v..%v, want 300..900", cov.Gaps[0].From, cov.Gaps[0].To)
	}
	near(t, "fraction", cov.Fraction, 0.5, 1e-9)
}

func TestReconstructInFlight(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 3}
	// Completions 10 per step; in flight 0, 5, 5, 0: arrivals are
	// 10+5 = 15, 10+0 = 10, 10-5 = 5, total 30 = completions + (0 - 0).
	h := History{Grid: g,
		Success:    []Series{{Points: pts(0, 0, 60, 10, 120, 20, 180, 30)}},
		InFlight:   []float64{0, 5, 5, 0},
		PromptMean: 100, OutputMean: 50,
		Replicas: []float64{math.NaN(), 2, math.NaN(), 3},
	}
	w, err := Reconstruct(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "a1", w.Arrivals[1], 15, 1e-9)
	near(t, "a2", w.Arrivals[2], 10, 1e-9)
	near(t, "a3", w.Arrivals[3], 5, 1e-9)
	near(t, "requests", w.Requests, 30, 1e-9)
	// Replicas 2 (first known, back-filled), 2, 2 (held), 3: points 0..2
	// hold for a minute each: 6 replica-minutes = 360 s.
	near(t, "replica seconds", w.ReplicaSeconds(), 360, 1e-9)
}

func TestReconstructNegativeCarried(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 2}
	// Step 1: 0 completions, in flight 8 → 0: -8, clamped to 0 and carried;
	// step 2: 10 completions, in flight 0 → 0, 10 - 8 = 2. Total 2 = 10 + (0 - 8).
	h := History{Grid: g, Success: []Series{{Points: pts(0, 0, 60, 0, 120, 10)}},
		InFlight: []float64{8, 0, 0}, PromptMean: 1, OutputMean: 1}
	w, err := Reconstruct(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "a1", w.Arrivals[1], 0, 0)
	near(t, "a2", w.Arrivals[2], 2, 1e-9)
}

func TestHistogram(t *testing.T) {
	h, err := NewHistogram([]string{"+Inf", "1", "2"}, []float64{100, 50, 80})
	if err != nil {
		t.Fatal(err)
	}
	// Above 1.5: below = 50 + (80-50) × 0.5 = 65 → 35/100.
	near(t, "above 1.5", h.FractionAbove(1.5), 0.35, 1e-12)
	// p95: rank 95 is in +Inf: the last finite bound, 2. p60: rank 60 in
	// (1, 2]: 1 + (60-50)/30 = 1.333.
	near(t, "p95", h.Quantile(0.95), 2, 0)
	near(t, "p60", h.Quantile(0.6), 1+10.0/30, 1e-12)
	if _, err := NewHistogram([]string{"1"}, []float64{1}); err == nil {
		t.Error("no +Inf: want an error")
	}
}

func TestSourceCountsAndOrder(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 3}
	// Arrivals 0.6, 1.0, 2.4: running sums 0.6, 1.6, 4.0 round to 1, 2, 4:
	// 1, 1 and 2 requests per step.
	w := Workload{Grid: g, Arrivals: []float64{0, 0.6, 1.0, 2.4}, Prompt: Tokens{Mean: 10}, Output: Tokens{Mean: 5}}
	src := w.Source("t", 1)
	rd, _ := src.Open()
	var got []float64
	for {
		q, err := rd.Next()
		if err != nil {
			break
		}
		if q.Prompt != 10 || q.Output != 5 {
			t.Errorf("tokens %d/%d, want 10/5", q.Prompt, q.Output)
		}
		got = append(got, q.Arrival)
	}
	if len(got) != 4 || got[0] >= 60 || got[1] < 60 || got[1] >= 120 || got[2] < 120 || got[3] < got[2] {
		t.Errorf("arrivals %v, want 1 in (0,60), 1 in (60,120), 2 sorted in (120,180)", got)
	}
}

func TestReconstructTrimsToData(t *testing.T) {
	// Asked for 0..600 s at 60 s steps; samples only from 240 to 360: the
	// leading silence (0..240) and the trailing one (360..600) exceed the
	// threshold (3 × 60 s = 180 s), so the range shrinks to 240..360 (2
	// steps) and the replicas are not back-filled over the silence.
	g := Grid{Start: t0, Step: time.Minute, N: 10}
	nan := math.NaN()
	h := History{Grid: g,
		Success:    []Series{{Points: pts(240, 100, 300, 110, 360, 130)}},
		InFlight:   []float64{nan, nan, nan, nan, 0, 0, 0, nan, nan, nan, nan},
		Replicas:   []float64{nan, nan, nan, nan, 2, 3, 3, nan, nan, nan, nan},
		PromptMean: 1, OutputMean: 1}
	w, err := Reconstruct(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !w.Grid.Start.Equal(at(240)) || w.Grid.N != 2 || w.Coverage.Requested == nil || len(w.Coverage.Gaps) != 0 {
		t.Fatalf("grid %v N %d, coverage %+v; want 240 s, 2 steps, no gaps, the requested range kept", w.Grid.Start, w.Grid.N, w.Coverage)
	}
	// The first sample (100, at the new start) is a baseline: 10 + 20 = 30.
	near(t, "requests", w.Requests, 30, 1e-9)
	// Replicas 2 then 3, a minute each: 5 replica-minutes.
	near(t, "replica seconds", w.ReplicaSeconds(), 300, 1e-9)
}
