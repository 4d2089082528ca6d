package recommend

import (
	"strings"
	"testing"
)

// TestGuardSaysUntilWhen: a step the runaway guard held says how long the
// hold lasts. TestGuardTTFT's run (ttft target 1 s, drain 30 s, settle
// 90 s): at t=15 1 of 4 ready, 3 coming: held until they serve, then 30 s
// (90 s for a trailing quantile); at t=90 all serve since t=75 at most:
// 15 s, so 30 − 15 = 15 s more for a backlog signal, 90 − 15 = 75 s =
// 1m15s for the quantile, this ttft step's own (it said "held 15s more
// (1m15s for a trailing quantile)", the backlog's first); at t=150, 75 s:
// only the quantile, 90 − 75 = 15 s more.
func TestGuardSaysUntilWhen(t *testing.T) {
	p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalTTFT, Target: 1}}, Min: 1, Max: 100})
	var st State
	Decide(p, ttftObs(1, 1, 3.9), &st, at(0))
	for _, tc := range []struct {
		now  int64
		obs  Observation
		tail string
	}{
		{15, ttftObs(4, 1, 7.3), "guard: 1 of the 4 replicas asked for ready, 3 coming (1 + 3 = 4): the signal has not seen their capacity; the runaway guard holds until they serve, then 30s more (1m30s for a trailing quantile): hold 4"},
		{75, ttftObs(4, 1, 16), "; the runaway guard holds until they serve, then 30s more (1m30s for a trailing quantile): hold 4"},
		{90, ttftObs(4, 4, 21.6), "guard: the 4 replicas asked for serve since 15s at most (drain 30s, settle 1m30s for a trailing quantile): the signal has not seen their capacity yet; a trailing quantile is held 1m15s more: hold 4"},
		{150, ttftObs(4, 4, 20), "(drain 30s, settle 1m30s for a trailing quantile): the signal has not seen their capacity yet; a trailing quantile is held 15s more: hold 4"},
	} {
		d := Decide(p, tc.obs, &st, at(tc.now))
		expect(t, d, 4, ReasonGuard)
		if s := d.Steps[0]; s.Reason != ReasonGuard || !strings.HasSuffix(s.Text, tc.tail) {
			t.Errorf("t=%d: step %q, want it to end %q", tc.now, s.Text, tc.tail)
		}
	}
}

// TestGuardSaysNotRead: replicas present but not read (neither reporting
// nor unready: a failed scrape, a starting server's 503) count as serving
// for the guard, and its step says so rather than claiming they serve.
// queue:4, 2 replicas, queue 16 at t=0: ceil(16/4) = 4 (limit max(2+4,
// 2×2) = 6), 2 coming. t=15: 4 current, 2 reporting, 2 missing, queue 40:
// usage 40/(2×4) = 5 says up, the missing at 0: 40/(4×4) = 2.5 → ceil(2.5 ×
// 4) = 10 > 4; nothing unready, so nothing is coming and all 4 count from
// the last decision (t=0), 15 s < drain 30 s: hold 4.
func TestGuardSaysNotRead(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	var st State
	expect(t, Decide(p, queueObs(2, 16), &st, at(0)), 4, ReasonMetric)
	obs := queueObs(4, 40)
	obs.Reporting = 2
	d := Decide(p, obs, &st, at(15))
	expect(t, d, 4, ReasonGuard)
	want := "guard: the 4 replicas asked for serve since 15s at most, 2 of them not read this cycle (counted as serving, not as coming) (drain 30s"
	if !strings.Contains(d.Steps[0].Text, want) {
		t.Errorf("step %q, want it to contain %q", d.Steps[0].Text, want)
	}
	// The queue, a backlog, is held for the drain: 30 − 15 = 15 s more.
	if tail := "the signal has not seen their capacity yet; held 15s more: hold 4"; !strings.HasSuffix(d.Steps[0].Text, tail) {
		t.Errorf("step %q, want it to end %q", d.Steps[0].Text, tail)
	}
}
