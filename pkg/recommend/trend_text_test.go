package recommend

import (
	"strings"
	"testing"
	"time"
)

// TestTrendStepsListTheirSamples: a trend's step lists the samples its
// least-squares fit read and, for the arrival trend, the standard error's
// inputs, so the slope, its gate and the projection recompute by hand
// (docs/recommend.md, "Demand" and "4. Lookahead").
//
// Arrivals (the docs' gate example; demand:0.5 on testCapacity, 0.15625
// replica-s per request, lookahead 30 s): 4 req/s at t = 0, 15, ..., 75 s,
// then 8 at 90 s. The fit's span is 45 s: 4, 4, 8 at -30, -15, 0 s; mean
// 16/3 = 5.33333; Σ(t − mean t)² = 225 + 0 + 225 = 450 s²; slope Σ(t −
// mean t)(y − mean y) / 450 = (-15 × -1.33333 + 0 + 15 × 2.66667) / 450 =
// 60 / 450 = 0.133333; standard error sqrt(5.33333 / 30) / sqrt(450) =
// 0.421637 / 21.2132 = 0.0198762, × 4 = 0.0795 < 0.1333: counted;
// projected (8 + 0.133333 × 30) × 0.15625 = 1.875, / 0.5 = 3.75, ceil 4.
//
// Queue lookahead (the reasons table's example, target 4, lookahead 90 s):
// 36 at t = 1000, 42 at 1015: slope 6 / 15 = 0.4/s; 42 + 0.4 × 90 = 78,
// / 4 = 19.5, ceil 20.
func TestTrendStepsListTheirSamples(t *testing.T) {
	p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 20,
		Capacity: testCapacity, Lookahead: 30 * time.Second, Guard: &Guard{Off: true}})
	var st State
	for s := int64(0); s <= 75; s += 15 {
		Decide(p, demandObs(1, 4), &st, at(s))
	}
	d := Decide(p, demandObs(1, 8), &st, at(90))
	want := "arrival trend 0.133333 req/s per s over 3 samples (4 at -30s, 4 at -15s, 8 at 0s; above 4 × the Poisson standard error " +
		"sqrt(mean 5.33333 req/s / rate window 30s) / sqrt(Σ(t − mean t)² 450 s²) = 0.0198762: counted), " +
		"projected (8 + 0.133333 × 30) × 0.15625 = 1.875 / utilisation 0.5 = ceil(3.75) = 4"
	if d.Raw[0].Replicas != 4 || !strings.Contains(stepsText(d), want) {
		t.Errorf("arrivals: raw %d, want 4 and a step saying\n  %s\n%s", d.Raw[0].Replicas, want, stepsText(d))
	}

	q := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}}, Min: 1, Max: 100, Lookahead: 90 * time.Second})
	st = State{}
	Decide(q, queueObs(10, 36), &st, at(1000))
	d = Decide(q, queueObs(10, 42), &st, at(1015))
	want = "lookahead 1m30s: queue trend 0.4/s (least squares over 2 samples in 3m0s: 36 at -15s, 42 at 0s), projected 42 + 0.4 × 90 = 78 / target 4 = ceil(19.5) = 20"
	if d.Desired != 20 || !strings.Contains(stepsText(d), want) {
		t.Errorf("queue: desired %d, want 20 and a step saying\n  %s\n%s", d.Desired, want, stepsText(d))
	}
}

// TestFitTextListsAtMost: a long fit lists its newest maxListed samples
// and counts the rest: 30 samples, 15 s apart, list 24 and say 6 older.
func TestFitTextListsAtMost(t *testing.T) {
	var s []DemandSample
	for i := 0; i < 30; i++ {
		s = append(s, DemandSample{At: at(int64(15 * i)), Demand: float64(i)})
	}
	got := fitText(s, at(435), true)
	if !strings.HasPrefix(got, ": 6 older not listed, 6 at -345s, 7 at -330s, ") || !strings.HasSuffix(got, ", 29 at 0s") {
		t.Errorf("fitText = %q", got)
	}
}

// TestRampCapTextOrdinalAndLong: the quantile's rank reads as an English
// ordinal, and more rises than maxListed list maxListed around the
// quantile. 30 rises 1..30 req/s, q = 0.75: ceil(0.75 × 30) = 23rd
// smallest, 23; 24 listed around it: from index min(23 − 1 − 12, 30 −
// 24) = 6, the rises 7..30.
func TestRampCapTextOrdinalAndLong(t *testing.T) {
	for i, want := range map[int]string{1: "st", 2: "nd", 3: "rd", 4: "th", 11: "th", 12: "th", 13: "th", 21: "st", 22: "nd", 111: "th"} {
		if got := ordinal(i); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", i, got, want)
		}
	}
	p := &Policy{Hold: &Hold{BreakEven: 180 * time.Second}, downWindow: 60 * time.Second}
	var rises []float64
	for i := 1; i <= 30; i++ {
		rises = append(rises, float64(i))
	}
	got := p.rampCapText(23, rises, 0.75)
	want := ", capped at a rise of 23 req/s (the 0.75 quantile of the last 30 ramps' rises: the ceil(0.75 × 30) = 23rd smallest of (sorted, 30 in all) 7, 8, "
	if !strings.HasPrefix(got, want) || !strings.Contains(got, ", 30 req/s; q = B 180 s / (B + the scale-down window 60 s))") {
		t.Errorf("rampCapText = %q", got)
	}
}
