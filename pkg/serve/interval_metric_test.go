package serve

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
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

// hookWriter calls hook at its first Write (an audit line: written after
// the cycle's decisions were exported, before the cycle ends).
type hookWriter struct {
	once sync.Once
	hook func()
}

func (w *hookWriter) Write(p []byte) (int, error) {
	w.once.Do(w.hook)
	return len(p), nil
}

// TestDecisionIntervalFollowsRunsTicker: a reload that lengthens the
// period (15 s to 1 h) while a cycle writes, after its decisions were
// exported, sets Run's ticker to the new period when the cycle ends; the
// gauge must follow then, not at the next cycle an hour later. Before, it
// said 15 s for that hour while the last decision aged: at its scrape
// InfscaleDecisionsStale (3 x 15 s, at least 120 s) paged 2 minutes in,
// though the target was decided on time.
func TestDecisionIntervalFollowsRunsTicker(t *testing.T) {
	src := &fakeSource{}
	src.set("chat", load(2, 10, 0))
	cfg, err := config.Parse([]byte(loopConfig), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(prometheus.NewRegistry(), "test")
	var l *Loop
	audit := &hookWriter{hook: func() { l.SetInterval(time.Hour) }}
	l = newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Audit: audit})
	if err := l.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	got := 0.0
	for time.Now().Before(deadline) {
		if got = gaugeValue(t, m, "decision_interval_seconds", "chat"); got == 3600 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got != 3600 {
		t.Errorf("decision_interval_seconds %v after the first cycle of Run with the period reloaded to 1 h during it, want 3600 (the next cycle is an hour away)", got)
	}
	if got := gaugeValue(t, m, "decision_interval_seconds", "other"); got != 3600 {
		t.Errorf("other (never decided): %v, want 3600", got)
	}
}
