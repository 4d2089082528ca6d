package serve

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/tune"
)

// TestTuningFailedBackOffSurvivesRestart: with --state-dir, a failed
// in-process run keeps its retry time and the count of failures in a row
// over a restart, as a successful run keeps its time. Before, a failure
// marked nothing to save (and a target without a result had no file to
// save), so a serve restarted during the back-off ran at once, its count
// back at 1. Every 24h, runs failing after 10 minutes (retryDelay: 15m,
// 30m, 1h from each end):
//
//	12:00-12:10 fails, failures 1, due 12:10 + 15m = 12:25
//	restart at 12:20: not run at 12:20 nor 12:24; run at 12:25
//	12:25-12:35 fails, failures 2, due 12:35 + 30m = 13:05
//	restart at 12:50: not run at 13:04; run at 13:05
//	13:05-13:15 fails, failures 3 (1h), due 14:15
//	restart at 13:20 with every 12h (the operator's fix, as a reload
//	that changes the target): run at once, its back-off afresh
//	13:20-13:30 fails, failures 1, due 13:45
//
// The failure is said at ERROR at a new process's first run (the
// throttle of repeats, failRepeat, is not saved: a restart is a new log,
// which would otherwise say nothing of it for up to an hour), and at
// DEBUG when it repeats within the hour in one process (13:45, 25 minutes
// after 13:20's).
//
// infscale_tuning_last_run_successful is 0 from each restart that kept
// failures (the last run failed; before, 1 until the next run failed, and
// InfscaleTuningErrors resolved meanwhile), 1 from the restart with the
// config changed (its runs have not failed yet).
func TestTuningFailedBackOffSurvivesRestart(t *testing.T) {
	day := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	state := t.TempDir()
	api := &failingSlowAPI{now: day.Add(12 * time.Hour)}
	var tn *Tuning
	var said func() string
	start := func(every string) {
		var log buftest.Buffer
		_, tn, _, _ = slowTuningIn(t, api, every, state)
		tn.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		said = log.String
	}
	stepAt := func(hh, mm int) bool { return api.stepAt(tn, day, hh, mm, 10*time.Minute, nil) }
	for _, c := range []struct {
		restart string // every to restart with first, "" none
		hh, mm  int
		ok      float64 // infscale_tuning_last_run_successful after the restart
		run     bool
		said    string // the failure's line, when run
		level   string // its level
	}{
		{"24h", 12, 0, 1, true, "failures=1 retry_in=15m0s", "ERROR"},
		{"24h", 12, 20, 0, false, "", ""}, // before: run at once, failures=1 again
		{"", 12, 24, 0, false, "", ""},
		{"", 12, 25, 0, true, "failures=2 retry_in=30m0s", "ERROR"}, // a new process's first: said
		{"24h", 12, 50, 0, false, "", ""},
		{"", 13, 4, 0, false, "", ""},
		{"", 13, 5, 0, true, "failures=3 retry_in=1h0m0s", "ERROR"},
		{"12h", 13, 20, 1, true, "failures=1 retry_in=15m0s", "ERROR"},
		{"", 13, 44, 0, false, "", ""},
		{"", 13, 45, 0, true, "failures=2 retry_in=30m0s", "DEBUG"}, // the same 25m after 13:20's, no restart between
	} {
		if c.restart != "" {
			api.mu.Lock()
			api.now = day.Add(time.Duration(c.hh)*time.Hour + time.Duration(c.mm)*time.Minute)
			api.mu.Unlock()
			start(c.restart)
			if got := testutil.ToFloat64(tn.lastOK.WithLabelValues("chat")); got != c.ok {
				t.Errorf("%02d:%02d restart: infscale_tuning_last_run_successful %v, want %v", c.hh, c.mm, got, c.ok)
			}
		}
		mark := len(said())
		if ran := stepAt(c.hh, c.mm); ran != c.run {
			t.Errorf("%02d:%02d: ran %v, want %v", c.hh, c.mm, ran, c.run)
		}
		if got := said()[mark:]; c.run && (!strings.Contains(got, c.said) || !strings.Contains(got, "level="+c.level+" msg=\"tuning failed")) {
			t.Errorf("%02d:%02d: log %q, want %s at %s", c.hh, c.mm, got, c.said, c.level)
		}
	}
}

// TestTuningFailedBackOffWithResultSurvivesRestart: the same for a target
// whose state file holds a result (restored with it): the failure's retry
// replaces the successful run's time in the file. Every 24h; the file's
// last run yesterday 11:00, so due today 11:00: the 12:00 run goes,
// fails at 12:10 (failures 1, due 12:25). A restart at 12:20 keeps the
// result and does not run until 12:25 (before: the file still said
// yesterday 11:00, and it ran at once), whose failure is the second in a
// row (30m).
func TestTuningFailedBackOffWithResultSurvivesRestart(t *testing.T) {
	day := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	state := t.TempDir()
	c := tune.Candidate{Metric: "queue", Target: 8}
	sv := tuneSaved{Result: &tune.TargetResult{Target: "chat", At: day.Add(-13 * time.Hour), SLOTTFT: 2, Period: 15, Policy: c.Policy(), Candidate: c,
		Outcome: tune.Outcome{Holds: true, MaxMissPct: 1}}, Mode: config.TuneShadow, State: TuneStateShadow, LastRun: day.Add(-13 * time.Hour)}
	b, err := json.Marshal(sv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(state, "tune"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "tune", "chat.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	api := &failingSlowAPI{}
	var tn *Tuning
	var said func() string
	for _, c := range []struct {
		restart bool
		hh, mm  int
		run     bool
		said    string // the failure's line, when run
	}{
		{true, 12, 0, true, "failures=1 retry_in=15m0s"},
		{true, 12, 20, false, ""}, // before: run at once
		{false, 12, 24, false, ""},
		{false, 12, 25, true, "failures=2 retry_in=30m0s"},
	} {
		at := day.Add(time.Duration(c.hh)*time.Hour + time.Duration(c.mm)*time.Minute)
		api.mu.Lock()
		api.now, api.took = at, 10*time.Minute
		api.mu.Unlock()
		if c.restart {
			var log buftest.Buffer
			_, tn, _, _ = slowTuningIn(t, api, "24h", state)
			tn.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
			said = log.String
			if s, p := tuneState(tn, "chat"); s != TuneStateShadow || p != "queue:8" {
				t.Errorf("%02d:%02d restart: state %q %q, want shadow queue:8 (the file's result)", c.hh, c.mm, s, p)
			}
			// 0 once a failure is kept (the 12:20 restart), 1 before.
			if got, want := testutil.ToFloat64(tn.lastOK.WithLabelValues("chat")), map[bool]float64{true: 1, false: 0}[c.hh == 12 && c.mm == 0]; got != want {
				t.Errorf("%02d:%02d restart: infscale_tuning_last_run_successful %v, want %v", c.hh, c.mm, got, want)
			}
		}
		mark := len(said())
		tn.Step(context.Background())
		if ran := !api.Now().Equal(at); ran != c.run {
			t.Errorf("%02d:%02d: ran %v, want %v", c.hh, c.mm, ran, c.run)
		}
		if got := said()[mark:]; c.run && !strings.Contains(got, c.said) {
			t.Errorf("%02d:%02d: log %q, want %s", c.hh, c.mm, got, c.said)
		}
	}
}
