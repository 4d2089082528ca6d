package recommend

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// TestScheduleSaysUntilWhen: the step a schedule window raised says when
// the window fired and when it closes. queue:4, 4 replicas, queue 1, no
// scale-down window: ceil(1/4) = 1, raised by the window to 5.
//
//   - "0 8 * * 1-5;12h;5;Europe/Berlin" at Friday 2026-12-04 09:00 UTC
//     (10:00 CET, +01:00): fired 08:00+01:00 that day, open until 20:00+01:00.
//   - "0 * * * *;2h;5" at 09:30 UTC: fired 09:00, open until 11:00, but it
//     fires again at 10:00, before then.
func TestScheduleSaysUntilWhen(t *testing.T) {
	for _, tc := range []struct {
		window string
		now    time.Time
		want   string
	}{
		{"0 8 * * 1-5;12h;5;Europe/Berlin", time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC),
			`schedule "0 8 * * 1-5" for 12h0m0s in Europe/Berlin (fired 2026-12-04T08:00:00+01:00, open until 2026-12-04T20:00:00+01:00) raises min to 5: 1 raised to 5`},
		{"0 * * * *;2h;5", time.Date(2026, 12, 4, 9, 30, 0, 0, time.UTC),
			`schedule "0 * * * *" for 2h0m0s in UTC (fired 2026-12-04T09:00:00Z, open until 2026-12-04T11:00:00Z; it fires again at 2026-12-04T10:00:00Z before that, which keeps it open longer) raises min to 5: 1 raised to 5`},
	} {
		w, err := ParseScheduleWindow(tc.window)
		if err != nil {
			t.Fatal(err)
		}
		p := queuePolicy(4)
		p.Schedule = []ScheduleWindow{w}
		p.Behavior.ScaleDown = &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(0))}
		mustValidate(t, p)
		d := Decide(p, queueObs(4, 1), nil, tc.now)
		expect(t, d, 5, ReasonSchedule)
		if s, ok := stepWith(d, ReasonSchedule, 5); !ok || s.Text != tc.want {
			t.Errorf("%s: want a step %q\n%s", tc.window, tc.want, stepsText(d))
		}
	}
}
