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
	tn.API, tn.Period, tn.Now, tn.Log = api, 15*time.Second, api.Now, slog.New(slog.NewTextHandler(&log, nil))
	l.SetTuning(tn)
	if err := l.SetConfig(context.Background(), cfgAt(every)); err != nil {
		t.Fatal(err)
	}
	return l, tn, &log, cfgAt
}

const slowRunWarning = "tuning run took tune.every or longer"

// TestTuningFailedRunLongerThanEvery: an in-process run that fails after
// 90 minutes, with tune.every 1h, is retried as it ends (its retry is
// due 15 minutes after its start): back to back as a slow successful
// run, and warned of the same way, saying it failed. Before, only a run
// that succeeded was warned of. A failed run of 30 minutes is not.
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
	// Due again (its retry 15 minutes after its start, 12:15, passed at
	// 12:30), 90 minutes long this time.
	api.mu.Lock()
	api.took = 90 * time.Minute
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
