package recommend

import (
	"strings"
	"testing"
	"time"
)

// TestPairBoundAtMaxChangesNothing: the ratio bound that asks a pool for
// more than its max, already at its max, changes nothing: no step says
// "raised from 1 to 1" under reason pair; what sets the count is the max
// (TooManyReplicas, as the metrics' own recommendation above max is, and
// what InfscaleDesiredPinnedAtMax alerts on). The setup of
// TestPairDeciderRaisesDecodeToPrefillDemand (decode floor 2 from the
// prefill pool's 50 req/s) with the decode pool's max 1: 2, within max 1,
// keeps 1.
// prefillDrivenPair decides a pair once, as TestPairDeciderRaisesDecodeToPrefillDemand
// sets it up: the prefill pool (5 replicas, max 20) reached by rate
// requests/s of 1,000-token prompts, the decode pool (1 replica, max
// decodeMax) by none yet; demand at 0.9 for both.
func prefillDrivenPair(t *testing.T, rate float64, decodeMax int) (*PairDecider, Decision, Decision, PairBound) {
	t.Helper()
	pp := &Policy{Min: 1, Max: 20, Metrics: []Metric{{Signal: SignalDemand, Target: 0.9}}, Capacity: &pdCap}
	dp := &Policy{Min: 1, Max: decodeMax, Metrics: []Metric{{Signal: SignalDemand, Target: 0.9}}, Capacity: pdCap.ForRole(RoleDecode)}
	for _, p := range []*Policy{pp, dp} {
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	op := Unknown()
	op.Current, op.Reporting, op.Running, op.Waiting = 5, 5, 10, 0
	op.ArrivalRate, op.MeanPrompt, op.MeanOutput = rate, 1000, 1
	od := Unknown()
	od.Current, od.Reporting, od.Running, od.Waiting = 1, 1, 0, 0
	od.ArrivalRate, od.MeanPrompt, od.MeanOutput = 0, 1000, 100
	l := &PairDecider{}
	var dpd, ddd Decision
	b := l.Decide(&dpd, &ddd, &Pair{Prefill: pp, Decode: dp}, PairReading{
		Prefill: Reading{Obs: op, CurrentKnown: true}, Decode: Reading{Obs: od, CurrentKnown: true},
	}, time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC))
	return l, dpd, ddd, b
}

func TestPairBoundAtMaxChangesNothing(t *testing.T) {
	l, _, ddd, b := prefillDrivenPair(t, 50, 1)
	if b.DecodeFloor != 2 || ddd.Desired != 1 {
		t.Fatalf("decode floor %d, decode %d; want floor 2, decode 1 (its max)", b.DecodeFloor, ddd.Desired)
	}
	if ddd.Reason != ReasonMax {
		t.Errorf("decode reason %v, want TooManyReplicas: the bound asks 2, max 1\n%s", ddd.Reason, stepsText(ddd))
	}
	for name, steps := range map[string][]Step{"Decide": ddd.Steps, "Explain": l.Decode.Explain()} {
		last := steps[len(steps)-1]
		if last.Reason != ReasonMax || last.Value != 1 || !strings.HasSuffix(last.Text, "= 2, within max 1: keeps 1") {
			t.Errorf("%s: last step %+v; want the bound, TooManyReplicas: = 2, within max 1: keeps 1", name, last)
		}
	}
}

// TestPairBoundAboveMaxIsTooManyReplicas: a bound above the role's max
// raises it to max, and the max is what sets the count. Prefill 100 req/s
// on 5: work 100 × 0.1001707571 = 10.017 replicas, × ratio 0.1824662 =
// 1.8278 decode replicas busy / 0.9 = 2.03: floor 3; the decode pool
// (alone 1) with max 2 is raised from 1 to 2, reason TooManyReplicas.
func TestPairBoundAboveMaxIsTooManyReplicas(t *testing.T) {
	_, _, ddd, b := prefillDrivenPair(t, 100, 2)
	if b.DecodeFloor != 3 || ddd.Desired != 2 || ddd.Reason != ReasonMax {
		t.Fatalf("decode floor %d, decode %d (%v); want floor 3, decode 2 (TooManyReplicas)\n%s", b.DecodeFloor, ddd.Desired, ddd.Reason, stepsText(ddd))
	}
	last := ddd.Steps[len(ddd.Steps)-1]
	if last.Reason != ReasonMax || last.Value != 2 || !strings.HasSuffix(last.Text, "= 3, within max 2: raised from 1 to 2") {
		t.Errorf("last step %+v; want the bound, TooManyReplicas: = 3, within max 2: raised from 1 to 2", last)
	}
}
