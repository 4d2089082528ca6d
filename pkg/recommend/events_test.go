package recommend

import (
	"slices"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// A scaleDown period (60 s) longer than the scaleUp one (15 s), as in the
// HPA docs' example: the HPA keeps a scale-up event in its slot until a
// later scale-up takes it (storeScaleEvent), so a scale-down's period start
// subtracts it even when it is older than 15 s. Queue target 1 (desired =
// queue), a decision every 15 s, the workload at the last output. By hand:
//
//	  0 s 4 on 4: keep 4
//	 15 s 6: +2 (limit 4+2); 30 s, 45 s: keep 6
//	 60 s 1: start 6 - 2 added at 15 s = 4: 1 pod per 60 s: 3
//	 75 s 5 on 3: limit 3+2: 5; its +2 takes the 15 s event's slot; 90 s: keep 5
//	105 s 6 on 5: limit 5+2: 6; its +1 takes the 75 s event's slot
//	120 s 1 on 6: start 6 - 1 = 4 (the +2 at 75 s is gone): 4
func TestScaleEventSlots(t *testing.T) {
	p := queuePolicy(1)
	p.Behavior.ScaleUp = &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 15}}}
	p.Behavior.ScaleDown = &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(0)),
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}}
	mustValidate(t, p)
	var st State
	cur := 4
	var got []int
	for i, q := range []float64{4, 6, 6, 6, 1, 5, 5, 6, 1} {
		cur = Decide(p, queueObs(cur, q), &st, at(int64(i*15))).Desired
		got = append(got, cur)
	}
	if want := []int{4, 6, 6, 6, 3, 5, 5, 6, 4}; !slices.Equal(got, want) {
		t.Fatalf("replicas %v, want %v", got, want)
	}
	if err := st.Validate(); err != nil {
		t.Fatalf("the state Decide wrote: %v", err)
	}
}

// Scale events are kept in the HPA's slots, not in time order: a state
// file holding them so is valid.
func TestStateEventsSlotOrder(t *testing.T) {
	st := State{LastAt: at(105), ScaleUpEvents: []ScaleEvent{{At: at(105), Change: 1}, {At: at(90), Change: 2}}}
	if err := st.Validate(); err != nil {
		t.Fatalf("events in slot order: %v", err)
	}
}

// OutsideBounds: the HPA sets a count outside [min, max] to the bound
// before reading a metric, recording current as its first recommendation
// and the change as a scale event. By hand, min 3, max 10: 1 → 3 (+2 at
// 0 s); at 10 s queue 8 on 3: the +2 is in the 15 s period, start 1:
// limit max(1+4, 2) = 5. 12 → 10; 5 is within: no change.
func TestOutsideBounds(t *testing.T) {
	p := queuePolicy(1)
	p.Min = 3
	mustValidate(t, p)
	var st State
	if n, ok := p.OutsideBounds(&st, 1, at(0)); !ok || n != 3 {
		t.Fatalf("OutsideBounds(1) = %d, %v; want 3, true", n, ok)
	}
	if len(st.Recommendations) != 1 || st.Recommendations[0].Replicas != 1 || len(st.ScaleUpEvents) != 1 || st.ScaleUpEvents[0].Change != 2 {
		t.Fatalf("state %+v: want the initial 1 recorded and a +2 event", st)
	}
	if d := Decide(p, queueObs(3, 8), &st, at(10)); d.Desired != 5 {
		t.Fatalf("queue 8 on 3 after 1 → 3: %d (%s), want 5", d.Desired, d.Reason)
	}
	if n, ok := p.OutsideBounds(&st, 5, at(20)); ok || n != 5 {
		t.Fatalf("OutsideBounds(5) = %d, %v; want 5, false", n, ok)
	}
	if n, ok := p.OutsideBounds(&State{}, 12, at(0)); !ok || n != 10 {
		t.Fatalf("OutsideBounds(12) = %d, %v; want 10, true", n, ok)
	}
}
