package recommend

import "testing"

// TestNoDataHoldSaysCurrentOnlyWhenItDiffers: a loop holding its last
// desired value on no data says "(not current N)" only when the current
// count differs from what it holds. queue 12 on 3 replicas at target 4:
// ratio 12/12 = 1 → keep 3. Then no signal with 3 replicas read: hold 3,
// "(not current 3)" would contradict nothing; with 5 read: hold 3 (not
// current 5).
func TestNoDataHoldSaysCurrentOnlyWhenItDiffers(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	var l Decider
	if d, _, _ := decideOnce(&l, p, Reading{Obs: queueObs(3, 12), CurrentKnown: true}, at(1000)); d.Desired != 3 {
		t.Fatalf("first: desired %d, want 3\n%s", d.Desired, stepsText(d))
	}
	for _, tc := range []struct {
		now  int64
		cur  int
		want string
	}{
		{1015, 3, "no metric is known: hold the last desired 3"},
		{1030, 5, "no metric is known: hold the last desired 3 (not current 5)"},
	} {
		d, _, held := decideOnce(&l, p, Reading{Obs: unknownObs(tc.cur), CurrentKnown: true}, at(tc.now))
		if !held || d.Desired != 3 || d.Reason != ReasonNoData {
			t.Fatalf("t=%d: desired %d (%s) held %v, want 3 held (no-data)", tc.now, d.Desired, d.Reason, held)
		}
		if last := d.Steps[len(d.Steps)-1]; last.Text != tc.want {
			t.Errorf("t=%d: last step %q, want %q", tc.now, last.Text, tc.want)
		}
	}
}
