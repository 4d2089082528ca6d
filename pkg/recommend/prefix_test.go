package recommend

import (
	"math"
	"strings"
	"testing"
	"time"
)

// By hand on testCapacity, prompt 100, output 50, 75% of the prompt in
// the prefix cache: the batch (10) and the step (0.01125 s) are those of
// the whole prompt, the prefill 100 × 0.25 / 1000 = 0.025 s, so 0.025 +
// 50 × 0.01125 / 10 = 0.08125 s (0.15625 with no hit). An unknown or
// impossible fraction is no hit.
func TestRequestSecondsCached(t *testing.T) {
	for _, c := range []struct{ hit, want float64 }{{0.75, 0.08125}, {0, 0.15625}, {1, 0.05625}, {nan, 0.15625}, {-0.1, 0.15625}, {1.5, 0.15625}} {
		if got := testCapacity.RequestSecondsCached(100, 50, c.hit); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("RequestSecondsCached(100, 50, %g) = %g, want %g", c.hit, got, c.want)
		}
	}
}

// demand:0.5 on testCapacity at 8 req/s of 100/50 tokens: 8 × 0.15625 =
// 1.25 busy, / 0.5 = 2.5 → 3 with every prompt token prefilled; with a
// hit fraction of 0.75, 8 × 0.08125 = 0.65 busy, / 0.5 = 1.3 → 2, and the
// steps say so.
func TestDemandPrefixHit(t *testing.T) {
	p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 20, Capacity: testCapacity})
	o := demandObs(2, 8)
	o.PrefixHit = 0.75
	d := Decide(p, o, nil, at(0))
	expect(t, d, 2, ReasonMetric)
	if d.Raw[0].Value != 0.65 {
		t.Errorf("work %v, want 0.65", d.Raw[0].Value)
	}
	if s := stepsText(d); !strings.Contains(s, "prefix cache hit 0.75: 25 prefilled") || !strings.Contains(s, "0.08125 replica-s per request") {
		t.Errorf("steps do not show the hit fraction:\n%s", s)
	}
	o.PrefixHit = nan
	d = Decide(p, o, nil, at(0))
	expect(t, d, 3, ReasonMetric)
	if s := stepsText(d); strings.Contains(s, "prefix cache") {
		t.Errorf("an unknown hit fraction is shown:\n%s", s)
	}
	// A P/D pair's decode pool prefills nothing: 8 x 50 x 0.01125 / 10 =
	// 0.45 busy whatever the hit fraction, and no "prefilled" note.
	p = mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 20, Capacity: testCapacity.ForRole(RoleDecode)})
	o.PrefixHit = 0.75
	d = Decide(p, o, nil, at(0))
	if s := stepsText(d); math.Abs(d.Raw[0].Value-0.45) > 1e-12 || strings.Contains(s, "prefilled") {
		t.Errorf("decode pool: work %v, want 0.45, and no prefill in the steps:\n%s", d.Raw[0].Value, s)
	}
}

// hits / queries, unknown when there is no prompt or the counters do not
// pair up.
func TestHitFraction(t *testing.T) {
	for _, c := range []struct{ hits, queries, want float64 }{
		{30, 40, 0.75}, {0, 40, 0}, {40, 40, 1}, {0, 0, nan}, {nan, 40, nan}, {30, nan, nan}, {50, 40, nan}, {-1, 40, nan}, {1, math.Inf(1), nan},
	} {
		got := HitFraction(c.hits, c.queries)
		if got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("HitFraction(%g, %g) = %g, want %g", c.hits, c.queries, got, c.want)
		}
	}
	if !math.IsNaN(Unknown().PrefixHit) {
		t.Error("Unknown's PrefixHit is not unknown")
	}
}

// TestPairDeciderRaisesDecodeToPrefillDemand's pair with 75% of the
// prompts in the prefill pool's prefix cache. A prefill request is then
// 1000 × 0.25 / 10000 + 0.01690495 / 99 = 0.0251707571 s: 50 req/s are
// 1.2585 replicas busy, / 0.9 = 1.398 → 2 from 1 (6 with no hit). The ratio is
// 0.0182777778 / 0.0251707571 = 0.7261512924, and the decode floor is the
// same as without hits (the decode work does not change): 1.2585 ×
// 0.72615 / 0.9 = 1.0154 → 2.
func TestPairPrefixHit(t *testing.T) {
	pp := &Policy{Min: 1, Max: 20, Metrics: []Metric{{Signal: SignalDemand, Target: 0.9}}, Capacity: &pdCap}
	dp := &Policy{Min: 1, Max: 20, Metrics: []Metric{{Signal: SignalDemand, Target: 0.9}}, Capacity: pdCap.ForRole(RoleDecode)}
	op := Unknown()
	op.Current, op.Reporting, op.Running, op.Waiting = 1, 1, 2, 0
	op.ArrivalRate, op.MeanPrompt, op.MeanOutput, op.PrefixHit = 50, 1000, 1, 0.75
	od := Unknown()
	od.Current, od.Reporting, od.Running, od.Waiting = 1, 1, 0, 0
	od.ArrivalRate, od.MeanPrompt, od.MeanOutput = 0, 1000, 100
	var l PairDecider
	var dpd, ddd Decision
	b := l.Decide(&dpd, &ddd, &Pair{Prefill: pp, Decode: dp}, PairReading{
		Prefill: Reading{Obs: op, CurrentKnown: true}, Decode: Reading{Obs: od, CurrentKnown: true},
	}, time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC))
	if dpd.Desired != 2 || ddd.Desired != 2 {
		t.Errorf("prefill %d, decode %d; want 2 and 2", dpd.Desired, ddd.Desired)
	}
	if b.DecodeFloor != 2 || math.Abs(b.Ratio-0.7261512924) > 1e-9 {
		t.Errorf("bound %+v, want decode floor 2, ratio 0.7261512924", b)
	}
	if got := pdCap.RequestSecondsCached(1000, 1, 0.75); math.Abs(got-0.0251707571) > 1e-9 {
		t.Errorf("prefill request seconds %v, want 0.0251707571", got)
	}
}
