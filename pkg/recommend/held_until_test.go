package recommend

import (
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// TestStabilizedSaysUntilWhen: a step the stabilisation window held names
// the recommendation holding it and when that leaves the window (a window
// excludes its start, so one recorded at a is inside while a > now − W),
// and the setting that sets it. The time script of docs/recommend.md
// (queue:4, 300 s scaleDown window): total 12 at t=1000 on 1 → 3; total 4
// at t=1015 → 1, held at 3 by the 3 of t=1000: 15 s ago, out in 300 − 15 =
// 285 s = 4m45s; at t=1290 the same 3 is 290 s old, out in 10 s; at t=1305
// it has left: 1, nothing held. A scaleUp window of 60 s on 2 replicas,
// queue 20 → 5 at t=1000 is held at the current 2 (recorded at this first
// decision, 0 s ago, out in 60 s).
func TestStabilizedSaysUntilWhen(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	var st State
	expect(t, Decide(p, queueObs(1, 12), &st, at(1000)), 3, ReasonMetric)
	for _, tc := range []struct {
		now     int64
		desired int
		reason  Reason
		held    string
	}{
		{1015, 3, ReasonScaleDownStabilized, "; held: the last recommendation of 3 or more, 15s ago, leaves the 5m0s window in 4m45s (behavior.scaleDown.stabilizationWindowSeconds)"},
		{1290, 3, ReasonScaleDownStabilized, "; held: the last recommendation of 3 or more, 4m50s ago, leaves the 5m0s window in 10s (behavior.scaleDown.stabilizationWindowSeconds)"},
		{1305, 1, ReasonMetric, ""},
	} {
		d := Decide(p, queueObs(3, 4), &st, at(tc.now))
		expect(t, d, tc.desired, tc.reason)
		s, ok := stepWith(d, tc.reason, tc.desired)
		if tc.held == "" {
			for _, s := range d.Steps {
				if strings.Contains(s.Text, "held:") {
					t.Errorf("t=%d: nothing held, but step %q", tc.now, s.Text)
				}
			}
			continue
		}
		if !ok || s.Stage != StageStabilization || !strings.HasSuffix(s.Text, tc.held) {
			t.Errorf("t=%d: want a stabilisation step ending %q\n%s", tc.now, tc.held, stepsText(d))
		}
	}

	up := queuePolicy(4)
	up.Behavior.ScaleUp = &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(60))}
	mustValidate(t, up)
	var su State
	d := Decide(up, queueObs(2, 20), &su, at(1000))
	expect(t, d, 2, ReasonScaleUpStabilized)
	want := "; held: the last recommendation of 2 or fewer, 0s ago, leaves the 1m0s window in 1m0s (behavior.scaleUp.stabilizationWindowSeconds)"
	if s, ok := stepWith(d, ReasonScaleUpStabilized, 2); !ok || !strings.Contains(s.Text, want) {
		t.Errorf("scaleUp window: want a step with %q\n%s", want, stepsText(d))
	}
}
