package recommend

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// The HPA's recordInitialRecommendation: the first decision for a state
// records current as a recommendation at now, so a scale-down right after a
// start is held by the scaleDown window (serve scaled 4 → 2 two seconds
// after starting with no history).
func TestInitialRecommendationHoldsScaleDown(t *testing.T) {
	p := queuePolicy(4)
	p.Behavior.ScaleDown = rules(20, autoscalingv2.MaxChangePolicySelect, percent(100, 15))
	mustValidate(t, p)
	var st State
	// t=1000, 4 replicas, queue 8: ratio 8/16 = 0.5 → ceil(8/4) = 2. The
	// window (980, 1000] holds the initial 4 and this 2: highest 4, base 4
	// (fresh state: current) → min(max(4, 2), 4) = 4, stabilized.
	d := Decide(p, queueObs(4, 8), &st, at(1000))
	expect(t, d, 4, ReasonScaleDownStabilized)
	// The 4 came from the recorded initial recommendation.
	if len(st.Recommendations) == 0 || st.Recommendations[0] != (TimedReplicas{At: at(1000), Replicas: 4}) {
		t.Errorf("recommendations %+v, want the initial 4 at t=1000 first", st.Recommendations)
	}
	if _, ok := stepWith(d, ReasonScaleDownStabilized, 4); !ok {
		t.Errorf("no stabilisation step to 4:\n%s", stepsText(d))
	}
	// t=1002: window (982, 1002] still holds 4 (both 1000 entries) → 4.
	expect(t, Decide(p, queueObs(4, 8), &st, at(1002)), 4, ReasonScaleDownStabilized)
	// t=1020: window (1000, 1020] excludes its start, so the 1000 entries
	// (4 and 2) are out; it holds 2 (1002) and this 2 → 2. base: the last
	// output (4 at 1002) is 18 s old <= 20 s → 4; min(max(4, 2), 2) = 2.
	// Rate limit 100 % per 15 s from 4: trunc(4 × 0) = 0 → 2.
	expect(t, Decide(p, queueObs(4, 8), &st, at(1020)), 2, ReasonMetric)
}

// With a scaleUp window the initial recommendation holds a scale-up too:
// the lowest in the window is current (the HPA does the same).
func TestInitialRecommendationHoldsScaleUp(t *testing.T) {
	p := queuePolicy(4)
	p.Behavior.ScaleUp = rules(30, autoscalingv2.MaxChangePolicySelect, pods(4, 15))
	mustValidate(t, p)
	var st State
	// t=1000, 2 replicas, queue 16: ratio 16/8 = 2 → ceil(16/4) = 4. The up
	// window (970, 1000] holds the initial 2 and this 4: lowest 2 →
	// min(max(2, 2), 4) = 2, stabilized.
	expect(t, Decide(p, queueObs(2, 16), &st, at(1000)), 2, ReasonScaleUpStabilized)
}

// What is not a first decision, and what is not recorded.
func TestInitialRecommendationOnlyFirst(t *testing.T) {
	p := queuePolicy(4)
	p.Behavior.ScaleDown = rules(20, autoscalingv2.MaxChangePolicySelect, percent(100, 15))
	mustValidate(t, p)
	// A state with a previous decision (last_at set) but no recommendation
	// (it ended at no-data): not a first decision. 4 replicas, queue 8 → 2;
	// the window holds only this 2; base: 10 s old → 4; → 2.
	st := State{LastDesired: 4, LastAt: at(990)}
	expect(t, Decide(p, queueObs(4, 8), &st, at(1000)), 2, ReasonMetric)
	// A nil state is a one-shot decision (decide without --state): no
	// history, nothing recorded → 2.
	expect(t, Decide(p, queueObs(4, 8), nil, at(1000)), 2, ReasonMetric)
	// At zero replicas nothing is recorded: held 8 activates ceil(8/4) = 2.
	z := queuePolicy(4)
	z.Min = 0
	z.Behavior.ScaleUp = rules(30, autoscalingv2.MaxChangePolicySelect, pods(4, 15))
	mustValidate(t, z)
	var fresh State
	obs := queueObs(0, 0)
	obs.Held = 8
	expect(t, Decide(z, obs, &fresh, at(1000)), 2, ReasonActivate)
	if len(fresh.Recommendations) != 1 || fresh.Recommendations[0].Replicas != 2 {
		t.Errorf("recommendations %v, want only this decision's 2", fresh.Recommendations)
	}
}
