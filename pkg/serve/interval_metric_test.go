package serve

import (
	"testing"
	"time"
)

// TestDecisionIntervalExported: infscale_decision_interval_seconds holds
// the period each target is decided at from its first cycle, decided or
// not (InfscaleDecisionsStale's threshold is 3 x it), and follows a
// SetInterval (a reload changing pollingInterval) at the next cycle.
func TestDecisionIntervalExported(t *testing.T) {
	src := &fakeSource{}
	l, m := newTestLoop(t, src, nil) // Interval 15 s
	src.set("chat", load(2, 10, 0))  // other: never read, never decided
	l.Cycle(t.Context())
	for _, tg := range []string{"chat", "other"} {
		if got := gaugeValue(t, m, "decision_interval_seconds", tg); got != 15 {
			t.Errorf("%s: decision_interval_seconds %v, want 15 (the loop's 15 s)", tg, got)
		}
	}
	l.SetInterval(2 * time.Minute)
	l.Cycle(t.Context())
	for _, tg := range []string{"chat", "other"} {
		if got := gaugeValue(t, m, "decision_interval_seconds", tg); got != 120 {
			t.Errorf("%s after SetInterval(2m): decision_interval_seconds %v, want 120", tg, got)
		}
	}
}
