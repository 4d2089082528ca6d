package recommend

import (
	"strings"
	"testing"
	"time"
)

// TestPairBoundAtMaxChangesNothing: the ratio bound that asks a pool for
// more than its max, already at its max, changes nothing, so it is not the
// reason and no step says "raised from 1 to 1". The setup of
// TestPairDeciderRaisesDecodeToPrefillDemand (decode floor 2 from the
// prefill pool's 50 req/s) with the decode pool's max 1: the decode pool
// keeps its 1 for its own reason; its last step explains the bound
// unlabelled: 2, within max 1, keeps 1.
func TestPairBoundAtMaxChangesNothing(t *testing.T) {
	pp := &Policy{Min: 1, Max: 20, Metrics: []Metric{{Signal: SignalDemand, Target: 0.9}}, Capacity: &pdCap}
	dp := &Policy{Min: 1, Max: 1, Metrics: []Metric{{Signal: SignalDemand, Target: 0.9}}, Capacity: pdCap.ForRole(RoleDecode)}
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
	if b.DecodeFloor != 2 || ddd.Desired != 1 {
		t.Fatalf("decode floor %d, decode %d; want floor 2, decode 1 (its max)", b.DecodeFloor, ddd.Desired)
	}
	if ddd.Reason == ReasonPair {
		t.Errorf("decode reason pair, but the bound changed nothing (1 at max 1)\n%s", stepsText(ddd))
	}
	for name, steps := range map[string][]Step{"Decide": ddd.Steps, "Explain": l.Decode.Explain()} {
		last := steps[len(steps)-1]
		if last.Reason != 0 || last.Value != 1 || !strings.HasSuffix(last.Text, "= 2, within max 1: keeps 1") {
			t.Errorf("%s: last step %+v; want the bound unlabelled: = 2, within max 1: keeps 1", name, last)
		}
	}
}
