package serve

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/internal/syncbuf"
	"github.com/infscale/infscale/pkg/config"
)

// offsetSource is a fakeSource telling a fixed Prometheus clock offset.
type offsetSource struct {
	fakeSource
	off time.Duration
}

func (s *offsetSource) ClockOffset() (time.Duration, bool) { return s.off, true }

// TestClockWarningSaysWhereEvaluated: the clock warning says at whose now
// the queries are evaluated. Serve 30 s ahead: at Prometheus's (evalTime
// follows it). Serve 10 min ahead, past the 5 min evalTime follows: at
// serve's own, where Prometheus has nothing yet; the warning said
// Prometheus's then too.
func TestClockWarningSaysWhereEvaluated(t *testing.T) {
	cfg, err := config.Parse([]byte(loopConfig), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		off        time.Duration
		want, dont string
	}{
		{-30 * time.Second, "evaluated at Prometheus's now", "at serve's now"},
		{-10 * time.Minute, "at serve's now", "evaluated at Prometheus's now"},
	} {
		var logs syncbuf.Buffer
		src := &offsetSource{off: c.off}
		l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(prometheus.NewRegistry(), "test"), Interval: 15 * time.Second,
			Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err := l.SetConfig(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		l.Cycle(context.Background())
		got := logs.String()
		if !strings.Contains(got, "serve's clock is ahead of Prometheus's") || !strings.Contains(got, c.want) || strings.Contains(got, c.dont) {
			t.Errorf("serve %v ahead: log\n%s\nwant the clock warning saying %q, not %q", -c.off, got, c.want, c.dont)
		}
	}
}
