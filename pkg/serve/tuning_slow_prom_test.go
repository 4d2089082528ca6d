package serve

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
	"github.com/infscale/infscale/pkg/tune"
)

// slowClock is a clock that a run's first range query moves on by
// advance (set before each run): a run of that long on serve's clock.
type slowClock struct {
	promql.API
	mu      sync.Mutex
	now     time.Time
	advance time.Duration
	// during, when set, runs once at the next range query (a reload
	// during a run).
	during func()
}

func (c *slowClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *slowClock) Range(ctx context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	c.mu.Lock()
	c.now, c.advance = c.now.Add(c.advance), 0
	during := c.during
	c.during = nil
	c.mu.Unlock()
	if during != nil {
		during()
	}
	return c.API.Range(ctx, q, start, end, step)
}

// TestTuningRunLongerThanEvery: an in-process run that takes tune.every
// (1h) or longer has the next run due as it ends: runs go back to back,
// and nothing said so. A run of 90 minutes is warned of, naming the
// target, how long it took and every; a second such run is not warned of
// again (once per target and every), and a run of 30 minutes never is.
func TestTuningRunLongerThanEvery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week and tunes on it")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{})
	ctx := context.Background()
	cfg := tuneTestConfig(t, srv.URL, "shadow", "2s")
	src, err := NewPrometheusSource(cfg.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	clock := &slowClock{API: src.Evaluator.API, now: tr.End.Add(-6 * time.Hour)}
	reg := prometheus.NewRegistry()
	loop := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock.Now})
	tn := NewTuning(reg)
	var log buftest.Buffer
	tn.API, tn.Period, tn.Now, tn.Log = clock, 15*time.Second, clock.Now, slog.New(slog.NewTextHandler(&log, nil))
	tn.Options = tune.TargetOptions{Workers: 2, Space: tune.Space{
		Metrics: []tune.MetricSpace{{Name: "queue", Targets: []float64{0.25, 0.5}, Integer: true, PerBatch: true}},
		Dims:    tune.DefaultSpace.Dims,
	}}
	// Each run's replays are sized through Size (serve --
	// ReplaySize, planReplays): asked for Workers (2) replays of one
	// pool, answered with what no budget changes.
	var sized []int
	tn.Size = func(_ io.Writer, n, pools int, search bool, _ func() int64) replay.Sizing {
		if search {
			t.Errorf("Size(%d, %d): a tuning run's replays search; none do", n, pools)
		}
		sized = append(sized, n*10+pools)
		return replay.Sizing{AtOnce: n, Backlog: replay.MaxBacklog}
	}
	loop.SetTuning(tn)
	if err := loop.SetConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	const warning = "tuning run took tune.every or longer"
	// 30 minutes: the next run an hour after this one's start, 30
	// minutes after its end.
	clock.advance = 30 * time.Minute
	tn.Step(ctx)
	if strings.Contains(log.String(), warning) {
		t.Errorf("a 30-minute run: log %q; want no warning", log.String())
	}
	// 30 minutes on: the run due (an hour since the last start), and 90
	// minutes long.
	clock.mu.Lock()
	clock.now, clock.advance = clock.now.Add(30*time.Minute), 90*time.Minute
	clock.mu.Unlock()
	tn.Step(ctx)
	if n := strings.Count(log.String(), warning); n != 1 || !strings.Contains(log.String(), "target=chat took=1h30m0s every=1h") {
		t.Errorf("a 90-minute run: log %q; want one warning naming chat, took=1h30m0s and every=1h", log.String())
	}
	// Due at once (its start 90 minutes ago): another 90 minutes, not said
	// again.
	clock.advance = 90 * time.Minute
	tn.Step(ctx)
	if n := strings.Count(log.String(), warning); n != 1 {
		t.Errorf("a second 90-minute run: %d warnings, want the first only; log %q", n, log.String())
	}
	if n := strings.Count(log.String(), "msg=\"target tuned\""); n != 3 {
		t.Errorf("%d runs, want 3; log %q", n, log.String())
	}
	if len(sized) != 3 || sized[0] != 21 || sized[1] != 21 || sized[2] != 21 {
		t.Errorf("Size asked %v (n*10 + pools per run), want 21 for each of the 3 runs", sized)
	}
	// A reload to every 2h; 30 minutes on, the run is due (2h since the
	// last start) and takes 90 minutes, during which a reload sets every
	// to 80m. Measured against its own every, 2h, it is not slow (it was
	// measured against the reloaded 80m, and warned of naming it).
	everyAt := func(d time.Duration) *config.File {
		f := tuneTestConfig(t, srv.URL, "shadow", "2s")
		f.Targets[0].Tune.Every = model.Duration(d)
		return f
	}
	if err := loop.SetConfig(ctx, everyAt(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	clock.mu.Lock()
	clock.now, clock.advance = clock.now.Add(30*time.Minute), 90*time.Minute
	clock.during = func() {
		if err := loop.SetConfig(ctx, everyAt(80*time.Minute)); err != nil {
			t.Error(err)
		}
	}
	clock.mu.Unlock()
	tn.Step(ctx)
	if n := strings.Count(log.String(), "msg=\"target tuned\""); n != 4 {
		t.Errorf("%d runs, want 4 (the run across the reload); log %q", n, log.String())
	}
	if n := strings.Count(log.String(), warning); n != 1 {
		t.Errorf("a 90-minute run under every 2h, reloaded to 80m during it: %d warnings, want the first only; log %q", n, log.String())
	}
}

// failingClock is a slowClock whose range queries fail while fail is set
// (Prometheus down): a run then fails at its first query.
type failingClock struct {
	*slowClock
	fail atomic.Bool
}

func (c *failingClock) Range(ctx context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	if c.fail.Load() {
		return nil, nil, errors.New("server error: 503 Service Unavailable")
	}
	return c.slowClock.Range(ctx, q, start, end, step)
}

// TestTuningBackOffEndsOnSuccess: with tune.every 1h, two failed runs
// back off 15m then 30m (due at t0+15m, t0+45m); the run at t0+45m
// succeeds, the next due an hour after its start, t0+1h45m; that one
// fails, the first failure of a new series: tried again in 15m
// (failures=1), not in the 1h the third failure in a row would wait.
func TestTuningBackOffEndsOnSuccess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week and tunes on it")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{})
	ctx := context.Background()
	cfg := tuneTestConfig(t, srv.URL, "shadow", "2s")
	src, err := NewPrometheusSource(cfg.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	t0 := tr.End.Add(-6 * time.Hour)
	clock := &failingClock{slowClock: &slowClock{API: src.Evaluator.API, now: t0}}
	reg := prometheus.NewRegistry()
	loop := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock.Now})
	tn := NewTuning(reg)
	var log buftest.Buffer
	tn.API, tn.Period, tn.Now, tn.Log = clock, 15*time.Second, clock.Now, slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tn.Options = tune.TargetOptions{Workers: 2, Space: tune.Space{
		Metrics: []tune.MetricSpace{{Name: "queue", Targets: []float64{0.25}, Integer: true, PerBatch: true}},
		Dims:    tune.DefaultSpace.Dims,
	}}
	loop.SetTuning(tn)
	if err := loop.SetConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   time.Duration
		fail bool
		said string
	}{
		{0, true, "failures=1 retry_in=15m0s"},
		{15 * time.Minute, true, "failures=2 retry_in=30m0s"},
		{45 * time.Minute, false, `msg="target tuned"`},
		{105 * time.Minute, true, "failures=1 retry_in=15m0s"},
	} {
		// infscale_tuning_last_run_successful: 0 after each failed run, 1
		// after the one that succeeded.
		clock.mu.Lock()
		clock.now = t0.Add(c.at)
		clock.mu.Unlock()
		clock.fail.Store(c.fail)
		mark := len(log.String())
		tn.Step(ctx)
		if said := log.String()[mark:]; !strings.Contains(said, c.said) {
			t.Errorf("t0+%v: log %q, want %s", c.at, said, c.said)
		}
		want := 1.0
		if c.fail {
			want = 0
		}
		if got := testutil.ToFloat64(tn.lastOK.WithLabelValues("chat")); got != want {
			t.Errorf("t0+%v: infscale_tuning_last_run_successful %v, want %v", c.at, got, want)
		}
	}
}
