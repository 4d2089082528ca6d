package recommend

import (
	"math"
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
}
