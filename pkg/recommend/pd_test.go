package recommend

import (
	"math"
	"strings"
	"testing"
	"time"
)

// pdCap is a replica worked by hand: prefill 10,000 tokens/s, 128 slots,
// 100,000 tokens of KV, a full-batch step of 7 ms + 1e-7 s per context token.
var pdCap = Capacity{PrefillTokensPerSecond: 10000, MaxBatch: 128, KVTokens: 100000, StepSeconds: 0.007, StepSecondsPerToken: 1e-7}

func TestPairRatioByHand(t *testing.T) {
	// Prefill request (1000-token prompt, max_tokens 1): batch min(128,
	// floor(100000 / 1001)) = 99, step 0.007 + 1e-7 × 99 × 1000.5 =
	// 0.01690495 s, seconds 1000 / 10000 + 0.01690495 / 99 = 0.1001707571.
	// Decode request (1000 prompt, 100 output): batch floor(100000 / 1100)
	// = 90, step 0.007 + 1e-7 × 90 × 1050 = 0.01645 s, seconds 100 ×
	// 0.01645 / 90 = 0.0182777778 (no prefill). Ratio 0.1824662038.
	if got := pdCap.RequestSeconds(1000, 1); math.Abs(got-0.1001707571) > 1e-9 {
		t.Errorf("prefill request seconds %v, want 0.1001707571", got)
	}
	if got := pdCap.ForRole(RoleDecode).RequestSeconds(1000, 100); math.Abs(got-0.0182777778) > 1e-9 {
		t.Errorf("decode request seconds %v, want 0.0182777778", got)
	}
	if got := pdCap.PairRatio(1000, 100); math.Abs(got-0.1824662038) > 1e-9 {
		t.Errorf("ratio %v, want 0.1824662038", got)
	}
	if got := pdCap.ForRole(RolePrefill); got != &pdCap {
		t.Error("the prefill role's capacity is the replica's own")
	}
	if !math.IsNaN(pdCap.PairRatio(math.NaN(), 100)) || !math.IsNaN(pdCap.PairRatio(1000, 0)) {
		t.Error("unknown lengths give no ratio")
	}
}

func TestPairDeciderRaisesDecodeToPrefillDemand(t *testing.T) {
	// 50 requests/s reach the prefill pool (5 replicas): its work is 50 ×
	// 0.1001707571 = 5.0085 replicas, / 0.9 = 5.565, so it asks for 6. The
	// decode pool has seen no arrival yet (a cold pool behind the prefill
	// queue): alone it asks for its minimum, 1. The same 50 requests/s will
	// reach it one prefill later: 50 × 0.0182777778 = 0.9139 replicas busy,
	// / 0.9 = 1.0154, so the ratio bound raises it to 2. The prefill pool's
	// floor from the decode pool's zero demand is 0: it keeps its 6.
	pp := &Policy{Min: 1, Max: 20, Metrics: []Metric{{Signal: SignalDemand, Target: 0.9}}, Capacity: &pdCap}
	dp := &Policy{Min: 1, Max: 20, Metrics: []Metric{{Signal: SignalDemand, Target: 0.9}}, Capacity: pdCap.ForRole(RoleDecode)}
	for _, p := range []*Policy{pp, dp} {
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	op := Unknown()
	op.Current, op.Reporting, op.Running, op.Waiting = 5, 5, 10, 0
	op.ArrivalRate, op.MeanPrompt, op.MeanOutput = 50, 1000, 1
	od := Unknown()
	od.Current, od.Reporting, od.Running, od.Waiting = 1, 1, 0, 0
	od.ArrivalRate, od.MeanPrompt, od.MeanOutput = 0, 1000, 100
	var l PairDecider
	var dpd, ddd Decision
	b := l.Decide(&dpd, &ddd, &Pair{Prefill: pp, Decode: dp}, PairReading{
		Prefill: Reading{Obs: op, CurrentKnown: true}, Decode: Reading{Obs: od, CurrentKnown: true},
	}, time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC))
	if dpd.Desired != 6 || ddd.Desired != 2 {
		t.Errorf("prefill %d, decode %d; want 6 and 2", dpd.Desired, ddd.Desired)
	}
	if b.DecodeFloor != 2 || b.PrefillFloor != 0 || math.Abs(b.Ratio-0.1824662038) > 1e-9 {
		t.Errorf("bound %+v, want decode floor 2, prefill floor 0, ratio 0.1824662038", b)
	}
	if l.Decode.Desired != 2 {
		t.Errorf("the decode Decider's last desired %d, want the raised 2", l.Decode.Desired)
	}
	// The decode pool's reason and steps say what set its 2: the bound
	// (reason pair), not its own demand's 1; so does Explain (serve's
	// /debug/decisions re-decides from the Decider). The prefill pool,
	// not raised, keeps its own reason.
	if ddd.Reason != ReasonPair || dpd.Reason == ReasonPair {
		t.Errorf("reasons prefill %v, decode %v; want decode pair, prefill its own", dpd.Reason, ddd.Reason)
	}
	for name, steps := range map[string][]Step{"Decide": ddd.Steps, "Explain": l.Decode.Explain()} {
		if len(steps) == 0 {
			t.Errorf("%s: no steps", name)
			continue
		}
		last := steps[len(steps)-1]
		if last.Reason != ReasonPair || last.Value != 2 || last.Stage != StageLimits ||
			!strings.Contains(last.Text, "ratio 0.182466") || !strings.Contains(last.Text, "= ceil(1.0154") || !strings.Contains(last.Text, "raised from 1 to 2") {
			t.Errorf("%s: last step %+v; want the ratio bound (ratio 0.182466, ceil(1.0154) = 2) raising 1 to 2", name, last)
		}
	}
	// 15 s later the prefill arrivals stop: no floor, and the decode pool
	// alone asks for 1. The raised 2 is in its scale-down window (the
	// HPA's default 300 s), so it keeps 2 as it would its own.
	op.ArrivalRate, op.Running = 0, 0
	od.Current, od.Reporting = 2, 2
	l.Decide(&dpd, &ddd, &Pair{Prefill: pp, Decode: dp}, PairReading{
		Prefill: Reading{Obs: op, CurrentKnown: true}, Decode: Reading{Obs: od, CurrentKnown: true},
	}, time.Date(2026, 1, 5, 0, 0, 15, 0, time.UTC))
	if ddd.Desired != 2 {
		t.Errorf("decode %d 15 s after the raise; want 2 held by the scale-down window", ddd.Desired)
	}
}

func TestPrefillTargetByHand(t *testing.T) {
	// S = 0.05 s, t = 0.4 s: ρ·exp(−8(1 − ρ)) = 0.05. At ρ = 0.6745:
	// 0.6745 × exp(−2.604) = 0.6745 × 0.07398 = 0.049899; at ρ = 0.675:
	// 0.675 × exp(−2.6) = 0.675 × 0.074274 = 0.050135; interpolated, the
	// root is 0.6747.
	got := PrefillTarget(0.05, 0.4)
	if math.Abs(got-0.6747) > 2e-4 {
		t.Errorf("PrefillTarget(0.05, 0.4) = %v, want 0.6747", got)
	}
	if p := got * math.Exp(-(1-got)*8); math.Abs(p-0.05) > 1e-9 {
		t.Errorf("tail at the target %v, want 0.05", p)
	}
	for _, bad := range [][2]float64{{0, 0.4}, {0.05, 0}, {math.NaN(), 1}, {0.05, math.Inf(1)}} {
		if !math.IsNaN(PrefillTarget(bad[0], bad[1])) {
			t.Errorf("PrefillTarget%v: want NaN", bad)
		}
	}
}

func TestDecodeTargetByHand(t *testing.T) {
	// Erlang C for 2 servers at 1 Erlang: B(1) = 1/2, B(2) = 0.5 / 2.5 =
	// 0.2, C = 2 × 0.2 / (2 − 1 × 0.8) = 1/3 (the textbook value).
	if got := erlangC(2, 1); math.Abs(got-1.0/3) > 1e-12 {
		t.Errorf("erlangC(2, 1) = %v, want 1/3", got)
	}
	// One slot is M/M/1: C(1, ρ) = ρ, so the decode target of one slot is
	// the prefill target of the same service and wait.
	if a, b := DecodeTarget(1, 0.05, 0.4), PrefillTarget(0.05, 0.4); math.Abs(a-b) > 1e-9 {
		t.Errorf("DecodeTarget(1, 0.05, 0.4) = %v, PrefillTarget = %v: want equal", a, b)
	}
	// 64 slots held 2.1 s, wait 0.386 s: C(64, 64ρ)·exp(−64(1−ρ)·0.386/2.1)
	// = 0.05 at ρ = 0.8754 (C(64, 57.6) = 0.311 at ρ = 0.9, 0.056 at 0.8).
	if got := DecodeTarget(64, 2.1, 0.386); math.Abs(got-0.8754) > 2e-4 {
		t.Errorf("DecodeTarget(64, 2.1, 0.386) = %v, want 0.8754", got)
	}
	if !math.IsNaN(DecodeTarget(0, 2, 1)) || !math.IsNaN(DecodeTarget(64, 0, 1)) {
		t.Error("no slots or no hold: want NaN")
	}
}

func TestPairPoliciesLowerTheTargets(t *testing.T) {
	// pdCap, prompts of 1000 tokens and outputs of 100, a prefill Policy
	// with queuewait 0.4 s and ttft 1.9 s: S = 0.1001707571 s
	// (TestPairRatioByHand), wait = min(0.4, 1.9 − S) = 0.4, and
	// ρ·exp(−(1 − ρ)·0.4 / S) = 0.05 at ρ = 0.4498: ρ = 0.45 gives 0.45 ×
	// exp(−2.1969) = 0.45 × 0.11116 = 0.050022. The decode replica's slots
	// are floor(100000 / 1100) = 90, each held 100 × 0.01645 = 1.645 s:
	// DecodeTarget(90, 1.645, 0.4) = 0.916 is above 0.9, so decode keeps
	// its 0.9.
	pp := &Policy{Min: 1, Max: 20, Capacity: &pdCap, Metrics: []Metric{
		{Signal: SignalDemand, Target: 0.9}, {Signal: SignalTTFT, Target: 1.9}, {Signal: SignalQueueWait, Target: 0.4}}}
	dp := &Policy{Min: 1, Max: 20, Metrics: []Metric{{Signal: SignalDemand, Target: 0.9}}, Capacity: pdCap.ForRole(RoleDecode)}
	op, od := Unknown(), Unknown()
	op.MeanPrompt, op.MeanOutput = 1000, 1
	od.MeanPrompt, od.MeanOutput = 1000, 100
	p := &Pair{Prefill: pp, Decode: dp}
	q := PairPolicies(p, PairReading{Prefill: Reading{Obs: op}, Decode: Reading{Obs: od}})
	if got := q.Prefill.Metrics[0].Target; math.Abs(got-0.4498) > 2e-4 {
		t.Errorf("prefill demand target %v, want 0.4498", got)
	}
	if pp.Metrics[0].Target != 0.9 {
		t.Error("PairPolicies modified the Policy it was given")
	}
	if got := DecodeTarget(90, 1.645, 0.4); math.Abs(got-0.9161) > 2e-4 {
		t.Errorf("DecodeTarget(90, 1.645, 0.4) = %v, want 0.9161", got)
	}
	if q.Decode != dp {
		t.Errorf("decode policy changed (target %v); want 0.9 kept", q.Decode.Metrics[0].Target)
	}
	// Unknown lengths: both Policies as given.
	if q := PairPolicies(p, PairReading{Prefill: Reading{Obs: Unknown()}, Decode: Reading{Obs: Unknown()}}); q.Prefill != pp || q.Decode != dp {
		t.Error("unknown lengths changed a target")
	}
}
