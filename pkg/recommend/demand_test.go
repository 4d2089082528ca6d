package recommend

import (
	"math"
	"strings"
	"testing"
	"time"
)

// testCapacity: prefill 1000 tokens/s, 10 slots, 10,000 KV tokens, a step
// of 10 ms + 1 µs per context token.
var testCapacity = &Capacity{PrefillTokensPerSecond: 1000, MaxBatch: 10, KVTokens: 10000, StepSeconds: 0.01, StepSecondsPerToken: 1e-6}

// By hand: prompt 100, output 50: batch min(10, 10000/150 = 66) = 10,
// context 10 × (100 + 25) = 1250, step 0.01 + 0.00125 = 0.01125 s,
// 100/1000 + 50 × 0.01125/10 = 0.1 + 0.05625 = 0.15625 s. KV-bound: prompt
// 3000, output 2000: batch 10000/5000 = 2, context 2 × 4000 = 8000, step
// 0.018 s, 3 + 2000 × 0.018/2 = 21 s.
func TestCapacityRequestSeconds(t *testing.T) {
	for _, c := range []struct{ p, o, want float64 }{{100, 50, 0.15625}, {3000, 2000, 21}} {
		if got := testCapacity.RequestSeconds(c.p, c.o); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("RequestSeconds(%g, %g) = %g, want %g", c.p, c.o, got, c.want)
		}
	}
}

func demandObs(cur int, rate float64) Observation {
	o := ttftObs(cur, cur, nan)
	o.ArrivalRate, o.MeanPrompt, o.MeanOutput = rate, 100, 50
	return o
}

// demand:0.5 on testCapacity, by hand: 8 req/s × 0.15625 = 1.25 replicas
// busy, / 0.5 = 2.5 → 3 (ratio 2.5/2 = 1.25 outside the tolerance).
// Many replicas with small batches do not lower it: the arrivals decide.
// Unknown lengths with arrivals are unknown; no arrivals are 0 work.
//
// With a 30 s lookahead, 4 req/s at t = 0, 15, ..., 75 and then 8 at t =
// 90: the fit's samples are t = 60, 75, 90 (-30, -15, 0 s from now) at 4,
// 4, 8: mean 16/3, Σ (t − mean t)² = 450, slope (−15 × (4 − 16/3) + 15 ×
// (8 − 16/3))/450 = 60/450 = 0.13333 req/s per s; Poisson standard error
// sqrt((16/3)/30)/sqrt(450) = 0.019876, 4 × that = 0.0795 < 0.13333: it
// counts, projected (8 + 0.13333 × 30) × 0.15625 = 1.875, / 0.5 = 3.75 →
// 4. With 6 at t = 90 instead: slope (10 + 20)/450 = 0.06667 against 4 ×
// sqrt((14/3)/30)/sqrt(450) = 0.07437: noise, so 6 × 0.15625 / 0.5 =
// 1.875, ratio 1.875/2 = 0.9375 inside the tolerance: 2 (counted it would
// be (6 + 2) × 0.15625 / 0.5 = 2.5 → 3). 4 at t = 0 then 8 at t = 15 is the
// same ramp without a baseline (the samples reach back 15 s < 90 s): 3.
func TestDemandSignal(t *testing.T) {
	p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 20, Capacity: testCapacity})
	expect(t, Decide(p, demandObs(2, 8), nil, at(0)), 3, ReasonMetric)
	expect(t, Decide(p, demandObs(7, 8), nil, at(0)), 3, ReasonMetric) // one-shot: no scale-down window

	la := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 20, Capacity: testCapacity, Lookahead: 30 * time.Second})
	steady := func() *State {
		var st State
		for s := int64(0); s <= 75; s += 15 {
			expect(t, Decide(la, demandObs(2, 4), &st, at(s)), 2, ReasonMetric) // 0.625/0.5 = 1.25 → 2
		}
		return &st
	}
	expect(t, Decide(la, demandObs(2, 8), steady(), at(90)), 4, ReasonMetric)
	expect(t, Decide(la, demandObs(2, 6), steady(), at(90)), 2, ReasonTolerance)
	// The gate's W is the observation's ArrivalWindow. Over 60 s (serve's
	// rate()) the same 6 req/s is a trend: 4 × sqrt((14/3)/60)/sqrt(450) =
	// 0.05259 < 0.06667, (6 + 2) × 0.15625 / 0.5 = 2.5 → 3. 7 req/s at t =
	// 90 (slope (15 + 30)/450 = 0.1, mean 5) counts over 30 s (4 ×
	// sqrt(5/30)/sqrt(450) = 0.07698): (7 + 3) × 0.15625 / 0.5 = 3.125 → 4;
	// over 15 s (embedded, scrapes 15 s apart) 4 × sqrt(5/15)/sqrt(450) =
	// 0.10887 > 0.1 is noise: 7 × 0.15625 / 0.5 = 2.1875, ratio 1.094 on 2
	// inside the tolerance: 2.
	o60 := demandObs(2, 6)
	o60.ArrivalWindow = time.Minute
	expect(t, Decide(la, o60, steady(), at(90)), 3, ReasonMetric)
	expect(t, Decide(la, demandObs(2, 7), steady(), at(90)), 4, ReasonMetric)
	o15 := demandObs(2, 7)
	o15.ArrivalWindow = 15 * time.Second
	expect(t, Decide(la, o15, steady(), at(90)), 2, ReasonTolerance)
	var st State
	expect(t, Decide(la, demandObs(1, 4), &st, at(0)), 2, ReasonMetric)
	expect(t, Decide(la, demandObs(2, 8), &st, at(15)), 3, ReasonMetric)
	// The arrival samples are kept for 135 s (the 45 s span and the 90 s
	// baseline): after decisions every 15 s up to t = 150, those in (15, 150].
	hist := steady()
	for s := int64(90); s <= 150; s += 15 {
		Decide(la, demandObs(2, 4), hist, at(s))
	}
	if n := len(hist.Arrivals); n != 9 || !hist.Arrivals[0].At.Equal(at(30)) {
		t.Errorf("arrivals %v: want the 9 samples of t = 30..150", hist.Arrivals)
	}

	// The trend is the arrival rate's: at a steady 8 req/s the mean prompt
	// rising from 100 to 200 (prompt 200, output 50: batch min(10, 10000/250)
	// = 10, context 10 × 225 = 2250, step 0.01225 s, 0.2 + 50 × 0.01225/10 =
	// 0.26125 s; 8 × 0.26125 = 2.09 busy) is no ramp: 2.09/0.5 = 4.18 → 5,
	// where a trend of the work, (2.09 − 1.25)/15 s × 30 s more, would say
	// (2.09 + 1.68)/0.5 = 7.54 → 8.
	st = State{}
	expect(t, Decide(la, demandObs(2, 8), &st, at(0)), 3, ReasonMetric)
	long := demandObs(3, 8)
	long.MeanPrompt = 200
	expect(t, Decide(la, long, &st, at(15)), 5, ReasonMetric)

	// An older state's work samples (replicas busy, not a rate) are not
	// fitted: the trend restarts from the arrivals and the list is dropped.
	old := State{Work: []DemandSample{{At: at(0), Demand: 0.1}}}
	expect(t, Decide(la, demandObs(2, 8), &old, at(15)), 3, ReasonMetric)
	if old.Work != nil || len(old.Arrivals) != 1 {
		t.Errorf("work %v, arrivals %v: want the work dropped and one arrival sample", old.Work, old.Arrivals)
	}

	o := demandObs(2, 8)
	o.MeanPrompt = nan
	expect(t, Decide(p, o, nil, at(0)), 2, ReasonNoData)
	o = demandObs(2, 0)
	o.MeanPrompt, o.MeanOutput = nan, nan
	if d := Decide(p, o, nil, at(0)); !d.Raw[0].Valid || d.Raw[0].Value != 0 {
		t.Errorf("no arrivals: raw %+v, want valid 0", d.Raw[0])
	}
	// Without a capacity the signal is unknown.
	nc := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 20})
	expect(t, Decide(nc, demandObs(2, 8), nil, at(0)), 2, ReasonNoData)
}

// queuewait is ttft's arithmetic on the queue-time quantile: 1.5 s /
// target 0.5 s = ratio 3 × 2 current = 6.
func TestQueueWaitSignal(t *testing.T) {
	p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalQueueWait, Target: 0.5}}, Min: 1, Max: 20})
	o := ttftObs(2, 2, nan)
	o.QueueTime = 1.5
	expect(t, Decide(p, o, nil, at(0)), 6, ReasonMetric)
}

// TestMeanLengths: 2 req/s with 400 prompt and 200 generation tokens/s are
// 200- and 100-token means; no finished request (0 or unknown arrivals)
// has no mean, and an unknown token rate stays unknown.
func TestMeanLengths(t *testing.T) {
	if p, o := MeanLengths(2, 400, 200); p != 200 || o != 100 {
		t.Errorf("means %v %v, want 200 100", p, o)
	}
	for _, a := range []float64{0, math.NaN(), math.Inf(1)} {
		if p, o := MeanLengths(a, 400, 200); !math.IsNaN(p) || !math.IsNaN(o) {
			t.Errorf("arrivals %v: means %v %v, want NaN NaN", a, p, o)
		}
	}
	if p, o := MeanLengths(2, math.NaN(), 200); !math.IsNaN(p) || o != 100 {
		t.Errorf("unknown prompt rate: means %v %v, want NaN 100", p, o)
	}
}

// RampBoundFor by hand: q = 91/(91 + 60) = 0.602649, and Φ(0.26) =
// 0.602568, Φ'(0.26) = φ(0.26) = 0.385683, so z = 0.26 + (0.602649 −
// 0.602568)/0.385683 = 0.26021; 215 s: q = 0.781818, Φ(0.78) = 0.782305,
// φ(0.78) = 0.294305, z = 0.78 − 0.000487/0.294305 = 0.77835. A cold
// start no longer than the window (q <= 0.5) and unknown inputs give 0.
//
// The bound on the gate's example (TestDemandSignal: samples 4, 4, 8 at
// −30, −15, 0 s, slope 0.13333, standard error 0.019876), with a 60 s
// lookahead: the slope projects (8 + 0.13333 × 60) × 0.15625 = 2.5, / 0.5
// = 5; bounded at 1 standard error, (8 + 0.153209 × 60) × 0.15625 =
// 2.68634, / 0.5 = 5.3727 → 6. Noise (6 req/s at t = 90, not counted) is
// not bounded: 6 × 0.15625 / 0.5 = 1.875 on 2, inside the tolerance: 2.
func TestRampBound(t *testing.T) {
	for _, c := range []struct {
		cold, window time.Duration
		want         float64
	}{
		{91 * time.Second, time.Minute, 0.26021},
		{215 * time.Second, time.Minute, 0.77835},
		{time.Minute, time.Minute, 0},
		{30 * time.Second, time.Minute, 0},
		{0, time.Minute, 0},
		{91 * time.Second, 0, 0},
	} {
		if got := RampBoundFor(c.cold, c.window); math.Abs(got-c.want) > 5e-5 {
			t.Errorf("RampBoundFor(%v, %v) = %.5f, want %.5f", c.cold, c.window, got, c.want)
		}
	}

	steady := func(p *Policy) *State {
		var st State
		for s := int64(0); s <= 75; s += 15 {
			Decide(p, demandObs(2, 4), &st, at(s))
		}
		return &st
	}
	slope := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 20, Capacity: testCapacity, Lookahead: time.Minute})
	bound := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 20, Capacity: testCapacity, Lookahead: time.Minute, RampBound: 1})
	expect(t, Decide(slope, demandObs(2, 8), steady(slope), at(90)), 5, ReasonMetric)
	expect(t, Decide(bound, demandObs(2, 8), steady(bound), at(90)), 6, ReasonMetric)
	expect(t, Decide(bound, demandObs(2, 6), steady(bound), at(90)), 2, ReasonTolerance)

	for _, b := range []float64{-0.1, math.NaN(), math.Inf(1)} {
		if err := (&Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 20, Capacity: testCapacity, RampBound: b}).Validate(); err == nil || !strings.Contains(err.Error(), "ramp_bound") {
			t.Errorf("RampBound %v: error %v, want one naming ramp_bound", b, err)
		}
	}
}

// rooflineModel is a replica model whose step is the larger of a memory
// time (weights + context) and a compute time (batch × per token), plus a
// fixed overhead, as pkg/replica's.
type rooflineModel struct{ weights, perContext, perSeqCompute, overhead, prefill float64 }

func (m rooflineModel) StepTime(batch int, ctx int64) float64 {
	return max(m.weights+m.perContext*float64(ctx), float64(batch)*m.perSeqCompute) + m.overhead
}
func (m rooflineModel) PrefillTime(tokens int) float64 { return float64(tokens) * m.prefill }
func (m rooflineModel) KVCapacityTokens() int64        { return 1_000_000 }
func (m rooflineModel) MaxBatch() int                  { return 256 }

// TestCapacityComputeBound: a large batch of short contexts is
// compute-bound, and the step is the roofline's max, not the memory line
// raised to the compute floor. Worked by hand: weights 5 ms, 2e-8 s per
// context token, 40 µs per sequence of compute (10.24 ms at 256), 1 ms
// overhead, 40 µs a prefill token. 100/100-token requests: batch 256,
// context 256 × 150 = 38,400 tokens, memory 5 + 0.768 = 5.768 ms, compute
// 10.24 ms: step 11.24 ms; seconds 100 × 40e-6 + 100 × 0.01124 / 256 =
// 0.004 + 0.00439063 = 0.00839063. 1000/1000-token requests: context
// 256 × 1500 = 384,000, memory 5 + 7.68 = 12.68 ms > compute: step 13.68
// ms; seconds 0.04 + 1000 × 0.01368 / 256 = 0.09343750.
func TestCapacityComputeBound(t *testing.T) {
	c := CapacityFrom(rooflineModel{weights: 0.005, perContext: 2e-8, perSeqCompute: 40e-6, overhead: 0.001, prefill: 40e-6})
	for _, tc := range []struct{ prompt, output, want float64 }{
		{100, 100, 0.00839063},
		{1000, 1000, 0.09343750},
	} {
		if got := c.RequestSeconds(tc.prompt, tc.output); math.Abs(got-tc.want) > 1e-8 {
			t.Errorf("RequestSeconds(%g, %g) = %.8f, want %.8f", tc.prompt, tc.output, got, tc.want)
		}
	}
}
