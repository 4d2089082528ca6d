package recommend

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// TestRateLimitClampedToCurrentSaysSo: the HPA never lets a policy's limit
// go below current scaling up (above it scaling down); when that clamp is
// what binds, the step says so, or its limit does not give its output.
// Up: Pods 1 per 60 s after a +5 at t=1000 (a schedule floor, say): at
// t=1015 the period starts at 6 − 5 = 1, the policy allows 1 + 1 = 2, below
// the current 6, so 6; queue 40 / 4 = 10 is limited to 6. Down: Pods 1 per
// 60 s after a −5: the period starts at 2 + 5 = 7, allows 7 − 1 = 6, above
// the current 2, so 2; queue 0 / 4 = 0 is limited to 2.
func TestRateLimitClampedToCurrentSaysSo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		up     bool
		st     State
		obs    Observation
		want   int
		reason Reason
		text   string
	}{
		{"up", true, State{LastDesired: 6, LastAt: at(1000), ScaleUpEvents: []ScaleEvent{{At: at(1000), Change: 5}}},
			queueObs(6, 40), 6, ReasonScaleUpLimit,
			"rate limit: scaleUp limit 2 by selectPolicy Max (the largest change) of (Pods 1 per 60s: 1 + 1 = 2 [period start 1 = current 6 − added 5 + removed 0]), below the current 6, so 6 (no scale-up until the period's scale-ups age out): 10 limited to 6"},
		{"down", false, State{LastDesired: 2, LastAt: at(1000), ScaleDownEvents: []ScaleEvent{{At: at(1000), Change: 5}}},
			queueObs(2, 0), 2, ReasonScaleDownLimit,
			"rate limit: scaleDown limit 6 by selectPolicy Max (the largest change) of (Pods 1 per 60s: 7 − 1 = 6 [period start 7 = current 2 − added 0 + removed 5]), above the current 2, so 2 (no scale-down until the period's scale-downs age out): 0 limited to 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := queuePolicy(4)
			p.Guard = &Guard{Off: true}
			r := rules(0, autoscalingv2.MaxChangePolicySelect, pods(1, 60))
			if tc.up {
				p.Behavior.ScaleUp = r
			} else {
				p.Behavior.ScaleDown = r
			}
			mustValidate(t, p)
			st := tc.st
			d := Decide(p, tc.obs, &st, at(1015))
			expect(t, d, tc.want, tc.reason)
			s, ok := stepWith(d, tc.reason, tc.want)
			if !ok || s.Text != tc.text {
				t.Errorf("want the step\n  %s\n%s", tc.text, stepsText(d))
			}
		})
	}
}
