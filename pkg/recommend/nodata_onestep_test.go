package recommend

import "testing"

// TestNoDataHoldOneStep: a loop that holds its last desired value on no
// data explains the hold once, with the value it outputs: the one-shot
// pipeline's own no-data step ("keep base", base being current once the
// last decision is older than the windows) and its bound steps are the
// loop's step's, not a second, contradicting, answer. queue 12 on 1 at
// target 4 → 3 at t=1000; at t=1400 (past the 300 s window) nothing known
// on 4 replicas: hold 3, the steps the unknown queue and "hold the last
// desired 3 (not current 4)", not also "keep 4". With max lowered to 2 at
// t=1415: one step, 2 within max 2, no separate "max 2: lowered to 2".
func TestNoDataHoldOneStep(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	var l Decider
	if d, _, _ := decideOnce(&l, p, Reading{Obs: queueObs(1, 12), CurrentKnown: true}, at(1000)); d.Desired != 3 {
		t.Fatalf("first: desired %d, want 3\n%s", d.Desired, stepsText(d))
	}
	low := queuePolicy(4)
	low.Max = 2
	mustValidate(t, low)
	for _, tc := range []struct {
		p       *Policy
		now     int64
		desired int
		want    []string
	}{
		{p, 1400, 3, []string{"queue unknown (running unknown, waiting unknown): no recommendation from it", "no metric is known: hold the last desired 3 (not current 4)"}},
		{low, 1415, 2, []string{"queue unknown (running unknown, waiting unknown): no recommendation from it", "no metric is known: hold the last desired 3 within min 1 (schedule included), max 2: 2 (not current 4)"}},
	} {
		d, _, held := decideOnce(&l, tc.p, Reading{Obs: unknownObs(4), CurrentKnown: true}, at(tc.now))
		if !held || d.Desired != tc.desired || d.Reason != ReasonNoData {
			t.Fatalf("t=%d: desired %d (%s) held %v, want %d held (no-data)", tc.now, d.Desired, d.Reason, held, tc.desired)
		}
		ok := len(d.Steps) == len(tc.want)
		for i := 0; ok && i < len(tc.want); i++ {
			ok = d.Steps[i].Text == tc.want[i]
		}
		if !ok {
			t.Errorf("t=%d: steps\n%swant %q", tc.now, stepsText(d), tc.want)
		}
		for _, s := range d.Steps {
			if s.Reason == ReasonNoData && s.Value != d.Desired {
				t.Errorf("t=%d: a no-data step says %d, the output is %d: %q", tc.now, s.Value, d.Desired, s.Text)
			}
		}
	}
}
