package recommend

import "testing"

// Issue 13 item 4: after a restart the downtime is unknown. A state whose
// only recommendation (5) is 600 s old, older than the default 300 s
// scaleDown window, resumed at t=600 with held 5: raw 1 (queue 0 → 0, min
// 1) is held at 5 (stabilized) until the entry recorded at t=600 leaves
// the window: at t=899 still 5, at t=900 (the window excludes its start)
// 1. Without Resume the first decision dropped to 1 at once.
func TestResumeHoldsAFullWindow(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	saved := func() State {
		return State{Recommendations: []TimedReplicas{{At: at(0), Replicas: 5}}, LastDesired: 5, LastAt: at(0)}
	}
	st := saved()
	expect(t, Decide(p, queueObs(5, 0), &st, at(600)), 1, ReasonMin)

	st = saved()
	Resume(&st, 5, at(600))
	expect(t, Decide(p, queueObs(5, 0), &st, at(600)), 5, ReasonScaleDownStabilized)
	expect(t, Decide(p, queueObs(5, 0), &st, at(899)), 5, ReasonScaleDownStabilized)
	expect(t, Decide(p, queueObs(5, 0), &st, at(900)), 1, ReasonMin)
	if !st.LastActive.Equal(at(600)) {
		t.Errorf("LastActive %v, want the restart (idle clock starts over)", st.LastActive)
	}
}
