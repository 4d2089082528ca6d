package recommend

import (
	"strings"
	"testing"
	"time"
)

// TestStepDurationsMillisecond: serve decides on the wall clock, so ages in
// a step's text have nanoseconds; they are shown to the millisecond,
// truncated. queue:4 with min 0 (cooldown 300 s), 1 replica idle since the
// first observation at t=1000: 5.064594029 s later it is idle 5.064s (not
// 5.064594029s), below the cooldown, so the last replica stays; 299.9996 s
// later it reads 4m59.999s < 5m0s (rounding would print 5m0s < 5m0s).
func TestStepDurationsMillisecond(t *testing.T) {
	p := queuePolicy(4)
	p.Min = 0
	mustValidate(t, p)
	for _, tc := range []struct {
		after time.Duration
		want  string
	}{
		{5064594029 * time.Nanosecond, "scale to zero: idle 5.064s since the first observation < cooldown 5m0s: keep 1"},
		{299999600 * time.Microsecond, "scale to zero: idle 4m59.999s since the first observation < cooldown 5m0s: keep 1"},
	} {
		idle := queueObs(1, 0)
		idle.Held = 0 // every activity signal known: idle
		var st State
		Decide(p, idle, &st, at(1000))
		d := Decide(p, idle, &st, at(1000).Add(tc.after))
		expect(t, d, 1, ReasonCooldown)
		last := d.Steps[len(d.Steps)-1].Text
		if last != tc.want {
			t.Errorf("after %v: last step %q, want %q\n%s", tc.after, last, tc.want, stepsText(d))
		}
	}
	for d, want := range map[time.Duration]string{90 * time.Second: "1m30s", 300 * time.Second: "5m0s", 500 * time.Microsecond: "500µs", 0: "0s",
		-5064594029 * time.Nanosecond: "-5.064s"} {
		if got := age(d); got != want || strings.Contains(got, "ns") {
			t.Errorf("age(%v) = %q, want %q", d, got, want)
		}
	}
}
