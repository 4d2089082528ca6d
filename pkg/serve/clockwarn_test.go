package serve

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
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
		var logs buftest.Buffer
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

// TestClockGaugeHelpSaysBounds: the offset gauge's help names both bounds
// of evalTime's following (as docs/metrics.md's row does): serve ahead by
// more than clockTolerance and at most promql.MaxAnswerSkew. Without the
// second it said a serve 10 min ahead evaluates at Prometheus's now.
func TestClockGaugeHelpSaysBounds(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg, "test").PrometheusClock(-time.Second)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "infscale_prometheus_clock_offset_seconds" {
			continue
		}
		for _, want := range []string{fmt.Sprintf("over %.0f s", clockTolerance.Seconds()), fmt.Sprintf("at most %.0f min", promql.MaxAnswerSkew.Minutes())} {
			if !strings.Contains(mf.GetHelp(), want) {
				t.Errorf("help %q does not say %q", mf.GetHelp(), want)
			}
		}
		return
	}
	t.Fatal("no infscale_prometheus_clock_offset_seconds")
}

// TestClockGaugeThroughKubeSource: with a scaleTargetRef target serve's
// source is a KubeSource around the PrometheusSource; the offset gauge and
// the warning came only from a bare PrometheusSource, so that setup (apply:
// true, the common one) exported neither. And a reload to a source that
// tells no clock (embedded mode) leaves no stale gauge: docs/metrics.md
// says absent in embedded mode.
func TestClockGaugeThroughKubeSource(t *testing.T) {
	cfg, err := config.Parse([]byte(loopConfig), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	var logs buftest.Buffer
	l := newLoop(t, LoopOptions{Source: &KubeSource{Inner: &offsetSource{off: -30 * time.Second}}, Metrics: NewMetrics(reg, "test"),
		Interval: 15 * time.Second, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	l.Cycle(context.Background())
	if v, ok := gauge(t, reg, "infscale_prometheus_clock_offset_seconds", nil); !ok || v != -30 {
		t.Errorf("through a KubeSource: infscale_prometheus_clock_offset_seconds %v (present %v), want -30", v, ok)
	}
	if !strings.Contains(logs.String(), "serve's clock is ahead of Prometheus's") {
		t.Errorf("through a KubeSource: no clock warning in the log:\n%s", logs.String())
	}
	l.SetSource(&fakeSource{})
	l.Cycle(context.Background())
	if v, ok := gauge(t, reg, "infscale_prometheus_clock_offset_seconds", nil); ok {
		t.Errorf("after a reload to a source without a clock: infscale_prometheus_clock_offset_seconds %v, want absent", v)
	}
}
