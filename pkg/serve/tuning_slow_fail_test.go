package serve

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/pkg/config"
)

// failingSlowAPI is a Prometheus whose every query fails after taking
// took on the test's clock; during, when set, runs once at the first
// query (a reload during the run).
type failingSlowAPI struct {
	mu     sync.Mutex
	now    time.Time
	took   time.Duration
	during func()
}

func (a *failingSlowAPI) Now() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.now
}

func (a *failingSlowAPI) query() error {
	a.mu.Lock()
	a.now, a.took = a.now.Add(a.took), 0
	during := a.during
	a.during = nil
	a.mu.Unlock()
	if during != nil {
		during()
	}
	return errors.New("server error: 503 Service Unavailable")
}

func (a *failingSlowAPI) Instant(context.Context, string, time.Time) (model.Vector, []string, error) {
	return nil, nil, a.query()
}

func (a *failingSlowAPI) Range(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, []string, error) {
	return nil, nil, a.query()
}

// slowTuningAt is an in-process tune: target (every: every) on api's clock.
func slowTuningAt(t *testing.T, api *failingSlowAPI, every string) (*Loop, *Tuning, *buftest.Buffer, func(every string) *config.File) {
	t.Helper()
	return slowTuningIn(t, api, every, "")
}

// stepAt runs one Step of tn at hh:mm of day, its runs taking took and
// calling during while they run (nil: nothing), and reports whether a run
// started (the clock moved on by it).
func (a *failingSlowAPI) stepAt(tn *Tuning, day time.Time, hh, mm int, took time.Duration, during func()) bool {
	at := day.Add(time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute)
	a.mu.Lock()
	a.now, a.took, a.during = at, took, during
	a.mu.Unlock()
	tn.Step(context.Background())
	return !a.Now().Equal(at)
}

// slowTuningIn is slowTuningAt with serve's --state-dir state ("": none).
func slowTuningIn(t *testing.T, api *failingSlowAPI, every, state string) (*Loop, *Tuning, *buftest.Buffer, func(every string) *config.File) {
	t.Helper()
	cfgAt := func(every string) *config.File {
		f := tuneTestConfig(t, "http://127.0.0.1:1", "shadow", "2s")
		d, err := model.ParseDuration(every)
		if err != nil {
			t.Fatal(err)
		}
		f.Targets[0].Tune.Every = d
		return f
	}
	reg := prometheus.NewRegistry()
	l := newLoop(t, LoopOptions{Source: &fakeSource{}, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: api.Now})
	tn := NewTuning(reg)
	var log buftest.Buffer
	tn.API, tn.Period, tn.Now, tn.Log, tn.StateDir = api, 15*time.Second, api.Now, slog.New(slog.NewTextHandler(&log, nil)), state
	l.SetTuning(tn)
	if err := l.SetConfig(context.Background(), cfgAt(every)); err != nil {
		t.Fatal(err)
	}
	return l, tn, &log, cfgAt
}

const slowRunWarning = "tuning run took tune.every or longer"

// TestTuningFailedRunLongerThanEvery: an in-process run that fails after
// 90 minutes, with tune.every 1h, is warned of as a slow successful run
// is, saying it failed: it will be as long when it succeeds, and such
// runs go back to back. Before, only a run that succeeded was warned of.
// A failed run of 30 minutes is not.
func TestTuningFailedRunLongerThanEvery(t *testing.T) {
	api := &failingSlowAPI{now: time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC), took: 30 * time.Minute}
	_, tn, log, _ := slowTuningAt(t, api, "1h")
	tn.Step(context.Background())
	if !strings.Contains(log.String(), "tuning failed") {
		t.Fatalf("log %q: want the run failed", log.String())
	}
	if strings.Contains(log.String(), slowRunWarning) {
		t.Errorf("a failed 30-minute run: log %q; want no warning", log.String())
	}
	// Due again 15 minutes after its end (12:30), at 12:45; 90 minutes
	// long this time.
	api.mu.Lock()
	api.now, api.took = api.now.Add(15*time.Minute), 90*time.Minute
	api.mu.Unlock()
	tn.Step(context.Background())
	if n := strings.Count(log.String(), slowRunWarning); n != 1 || !strings.Contains(log.String(), "target=chat took=1h30m0s every=1h failed=true") {
		t.Errorf("a failed 90-minute run: log %q; want one warning naming chat, took=1h30m0s, every=1h, failed=true", log.String())
	}
}

// TestTuningSlowRunJudgedOnItsOwnEvery: a run started under tune.every
// 1h, during which a reload sets every to 2h, took 90 minutes: over the
// every it ran under, so it is warned of, naming every=1h. Before, it was
// measured against the reloaded 2h and said nothing. The other way, a run
// started under 2h whose reload sets 1h, taking 90 minutes, is within its
// own every: no warning (before: warned of, naming the reloaded 1h).
func TestTuningSlowRunJudgedOnItsOwnEvery(t *testing.T) {
	for _, c := range []struct {
		every, reloaded string
		warn            string // "": none
	}{
		{"1h", "2h", "took=1h30m0s every=1h failed=true"},
		{"2h", "1h", ""},
	} {
		t.Run(c.every+" to "+c.reloaded, func(t *testing.T) {
			api := &failingSlowAPI{now: time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC), took: 90 * time.Minute}
			l, tn, log, cfgAt := slowTuningAt(t, api, c.every)
			api.during = func() {
				if err := l.SetConfig(context.Background(), cfgAt(c.reloaded)); err != nil {
					t.Error(err)
				}
			}
			tn.Step(context.Background())
			got := strings.Count(log.String(), slowRunWarning)
			switch {
			case c.warn == "" && got != 0:
				t.Errorf("log %q: want no slow-run warning", log.String())
			case c.warn != "" && (got != 1 || !strings.Contains(log.String(), c.warn)):
				t.Errorf("log %q: want one slow-run warning with %s", log.String(), c.warn)
			}
		})
	}
}

// TestRetryDelay: tuneRetry (15m) doubled on each failure after the
// first, capped at every, worked by hand: with every 24h 15m, 30m, 1h,
// 2h, 4h, 8h, 16h, then 24h (32h capped) for good; with every 1h 15m,
// 30m, then 1h (60m reaches the cap at the third).
func TestRetryDelay(t *testing.T) {
	day := 24 * time.Hour
	for _, c := range []struct {
		failures int
		every    time.Duration
		want     time.Duration
	}{
		{1, day, 15 * time.Minute},
		{2, day, 30 * time.Minute},
		{3, day, time.Hour},
		{4, day, 2 * time.Hour},
		{5, day, 4 * time.Hour},
		{6, day, 8 * time.Hour},
		{7, day, 16 * time.Hour},
		{8, day, day},
		{1000, day, day},
		{1, time.Hour, 15 * time.Minute},
		{2, time.Hour, 30 * time.Minute},
		{3, time.Hour, time.Hour},
		{4, time.Hour, time.Hour},
		{1000, 90 * day, 90 * day}, // no overflow: 15m x 2^999 never computed
	} {
		if got := retryDelay(c.failures, c.every); got != c.want {
			t.Errorf("retryDelay(%d, %s) = %s, want %s", c.failures, c.every, got, c.want)
		}
	}
}

// TestTuningFailedRunsBackOff: in-process runs that each fail after 30
// minutes, with tune.every 1h, are tried again 15m, 30m, then 1h after
// each one's end. Before, the retry was due 15 minutes after the run's
// start, passed when a 30-minute run ended: the failing runs followed one
// another back to back, the tuner busy with them all the time, and no
// warning said so (a run shorter than every is not slow).
//
//	run  start  end    failures  retry (from the end)  due
//	1    12:00  12:30  1         15m                   12:45
//	2    12:45  13:15  2         30m                   13:45
//	3    13:45  14:15  3         1h (60m, the cap)     15:15
//	4    15:15  15:45  4         1h (120m capped)      16:45
func TestTuningFailedRunsBackOff(t *testing.T) {
	day := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	api := &failingSlowAPI{now: day.Add(12 * time.Hour)}
	_, tn, _, _ := slowTuningAt(t, api, "1h")
	var log buftest.Buffer
	tn.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	stepAt := func(hh, mm int) bool { return api.stepAt(tn, day, hh, mm, 30*time.Minute, nil) }
	// infscale_tuning_last_run_successful is 1 before the first run and 0
	// from the first failure on, between runs too (the alert's hold
	// between failures hours apart).
	if got := testutil.ToFloat64(tn.lastOK.WithLabelValues("chat")); got != 1 {
		t.Errorf("before a run: infscale_tuning_last_run_successful %v, want 1", got)
	}
	for _, c := range []struct {
		hh, mm int
		run    bool
		said   string // the failure's line, when run
	}{
		{12, 0, true, "failures=1 retry_in=15m0s"},
		{12, 30, false, ""}, // before: run again here, back to back
		{12, 44, false, ""},
		{12, 45, true, "failures=2 retry_in=30m0s"},
		{13, 44, false, ""},
		{13, 45, true, "failures=3 retry_in=1h0m0s"},
		{15, 14, false, ""},
		{15, 15, true, "failures=4 retry_in=1h0m0s"},
		{16, 44, false, ""},
		{16, 45, true, "failures=5 retry_in=1h0m0s"},
	} {
		mark := len(log.String())
		if ran := stepAt(c.hh, c.mm); ran != c.run {
			t.Errorf("%02d:%02d: ran %v, want %v", c.hh, c.mm, ran, c.run)
		}
		if said := log.String()[mark:]; c.run && !strings.Contains(said, c.said) {
			t.Errorf("%02d:%02d: log %q, want %s", c.hh, c.mm, said, c.said)
		}
		if got := testutil.ToFloat64(tn.lastOK.WithLabelValues("chat")); got != 0 {
			t.Errorf("%02d:%02d: infscale_tuning_last_run_successful %v, want 0", c.hh, c.mm, got)
		}
	}
	if strings.Contains(log.String(), slowRunWarning) {
		t.Errorf("30-minute runs under every 1h: log %q, want no slow-run warning", log.String())
	}
}

// TestTuningFailedBackOffResetByReload: a reload that changes a target
// whose runs failed (the operator's fix) has it tried at the next look,
// its back-off afresh. Every 24h, runs failing after 10 minutes: the
// first 12:00-12:10, due 12:25 (15m); the second 12:25-12:35, due 13:05
// (30m). A reload at 12:40 setting every 12h: run at 12:40, 12:40-12:50,
// the first failure again, due 13:05 (15m). A reload that changes nothing
// keeps the back-off: the next is not run at 12:55.
func TestTuningFailedBackOffResetByReload(t *testing.T) {
	day := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	api := &failingSlowAPI{now: day.Add(12 * time.Hour)}
	l, tn, log, cfgAt := slowTuningAt(t, api, "24h")
	stepAt := func(hh, mm int) bool { return api.stepAt(tn, day, hh, mm, 10*time.Minute, nil) }
	ctx := context.Background()
	for _, c := range []struct {
		hh, mm int
		reload string // every to reload with first, "" none
		run    bool
	}{
		{12, 0, "", true},
		{12, 24, "", false},
		{12, 25, "", true},
		{12, 40, "12h", true}, // before the reload's reset: due only at 13:05
		{12, 55, "12h", false},
		{13, 4, "", false},
		{13, 5, "", true},
	} {
		if c.reload != "" {
			if err := l.SetConfig(ctx, cfgAt(c.reload)); err != nil {
				t.Fatal(err)
			}
		}
		if ran := stepAt(c.hh, c.mm); ran != c.run {
			t.Errorf("%02d:%02d: ran %v, want %v", c.hh, c.mm, ran, c.run)
		}
	}
	if !strings.Contains(log.String(), "failures=1 retry_in=15m0s") {
		t.Errorf("log %q: want the first failure's line", log.String())
	}
}

// TestTuningFailedRunOfReloadedTarget: a run that fails after a reload
// changed its target during it failed on the config the reload replaced:
// it does not count against the new one, which is tried at the next look,
// as a result tuned on replaced terms is (docs/tune.md: a reload that
// changes the target has it tried at the next minute's look). Every 24h,
// runs failing after 10 minutes: 12:00-12:10 fails (due 12:25, 15m),
// 12:25-12:35 fails (due 13:05, 30m); the 13:05 run is reloaded with
// every 12h (the fix) during it and fails at 13:15. The new target runs at
// 13:16 (before: its first failure, due 13:30), and its failure there is
// the first of its own, due 15m after its end (13:26 + 15m = 13:41). The
// 13:15 failure's line says it is tried at the next look (Tick, 1m).
func TestTuningFailedRunOfReloadedTarget(t *testing.T) {
	day := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	api := &failingSlowAPI{now: day.Add(12 * time.Hour)}
	l, tn, _, cfgAt := slowTuningAt(t, api, "24h")
	var log buftest.Buffer
	tn.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	stepAt := func(hh, mm int, during func()) bool { return api.stepAt(tn, day, hh, mm, 10*time.Minute, during) }
	reload := func() {
		if err := l.SetConfig(context.Background(), cfgAt("12h")); err != nil {
			t.Error(err)
		}
	}
	for _, c := range []struct {
		hh, mm int
		during func()
		run    bool
		said   string // the failure's line, when run
	}{
		{12, 0, nil, true, "failures=1 retry_in=15m0s"},
		{12, 25, nil, true, "failures=2 retry_in=30m0s"},
		{13, 5, reload, true, "failures=0 retry_in=1m0s"},
		{13, 16, nil, true, "failures=1 retry_in=15m0s"}, // before: not until 13:30
		{13, 40, nil, false, ""},
		{13, 41, nil, true, "failures=2 retry_in=30m0s"},
	} {
		mark := len(log.String())
		if ran := stepAt(c.hh, c.mm, c.during); ran != c.run {
			t.Errorf("%02d:%02d: ran %v, want %v", c.hh, c.mm, ran, c.run)
		}
		if said := log.String()[mark:]; c.run && !strings.Contains(said, c.said) {
			t.Errorf("%02d:%02d: log %q, want %s", c.hh, c.mm, said, c.said)
		}
	}
}

// TestTuningFailedRunOfRemovedTarget: a reload that takes a target's tune:
// block away during a run that then fails deletes its tuning series, and
// the failure does not bring infscale_tuning_errors_total back: it came
// back at 1 and stayed, a series of a target no longer tuned.
func TestTuningFailedRunOfRemovedTarget(t *testing.T) {
	api := &failingSlowAPI{now: time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC), took: 10 * time.Minute}
	l, tn, _, cfgAt := slowTuningAt(t, api, "24h")
	api.during = func() {
		f := cfgAt("24h")
		f.Targets[0].Tune = nil
		if err := l.SetConfig(context.Background(), f); err != nil {
			t.Error(err)
		}
	}
	tn.Step(context.Background())
	if n := testutil.CollectAndCount(tn.errorsVec) + testutil.CollectAndCount(tn.lastOK); n != 0 {
		t.Errorf("%d tuning series of the untuned target; want none", n)
	}
}
