package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
)

// TestSynthWeekBackfills: `infscale synth-week` writes 2 days ending at
// the hour of --end (2026-12-01T10:17Z: 2026-11-29T10:00Z .. 2026-12-01T10:00Z) into a TSDB a real Prometheus serves; the deployment's
// spec series is there at both ends, and a second run into the same
// directory is refused (exit 2) rather than adding blocks to it.
func TestSynthWeekBackfills(t *testing.T) {
	if testing.Short() {
		t.Skip("runs promtool and Prometheus")
	}
	promtool := promtest.Binary(t, promtest.Promtool)
	data := filepath.Join(t.TempDir(), "data")
	var out, errb bytes.Buffer
	args := []string{"synth-week", "--data", data, "--promtool", promtool, "--days", "2", "--scrape", "2m", "--end", "2026-12-01T10:17:00Z"}
	if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// The spike (day 3) and the gap (day 5) lie outside 2 days: not named.
	for _, want := range []string{"2026-11-29T10:00:00Z .. 2026-12-01T10:00:00Z", "no spike (it needs --days 3), no scrape gap (it needs --days 5)", "--storage.tsdb.path=" + data, "infscale backtest --prometheus-url", "infscale profile"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	srv := promtest.Start(t, promtest.Options{DataDir: data, Flags: []string{"--storage.tsdb.retention.time=10y"}})
	api := srv.API(t)
	for _, at := range []time.Time{time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)} {
		v, _, _, err := api.Query(context.Background(), `kube_deployment_spec_replicas{namespace="llm",deployment="chat"}`, at)
		if err != nil {
			t.Fatal(err)
		}
		if vec, ok := v.(model.Vector); !ok || len(vec) != 1 || vec[0].Value < 1 {
			t.Errorf("spec replicas at %s: %v, want one series >= 1", at.Format(time.RFC3339), v)
		}
	}

	out.Reset()
	errb.Reset()
	if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != exitInvalid || !strings.Contains(errb.String(), "not empty") {
		t.Errorf("second run into %s: exit %d, %q; want 2 and not empty", data, code, errb.String())
	}
	if _, err := os.Stat(data); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryDeprecated: `infscale history`, synth-week's old name, still
// runs it (here to its --days check, exit 2) after one line on stderr
// naming the new name; help lists synth-week only.
func TestHistoryDeprecated(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"history", "--data", t.TempDir(), "--days", "0"}, strings.NewReader(""), &out, &errb)
	want := "infscale: history is deprecated and goes in the next release; use synth-week\ninfscale: --days 0: want 1..90\n"
	if code != exitInvalid || errb.String() != want {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, errb.String(), want)
	}
	out.Reset()
	if code := run(context.Background(), []string{"--help"}, nil, &out, &errb); code != exitOK || !strings.Contains(out.String(), "synth-week") || strings.Contains(out.String(), "\n  history") {
		t.Errorf("--help (exit %d) lists history, or not synth-week:\n%s", code, out.String())
	}
}

// TestSynthWeekBeforeEpoch: days that would start before 1970 are refused
// before promtool runs (--end 0 wrote 1969-12-31, which backtest's and
// profile's --start, unix seconds from 0, cannot ask for).
func TestSynthWeekBeforeEpoch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "week")
	wantRefused(t, []string{"synth-week", "--data", dir, "--promtool", "/bin/true", "--days", "2", "--end", "86400"}, nil,
		"--end 1970-01-02T00:00:00Z: its 2 days would start at 1969-12-31T00:00:00Z, before 1970: want --end at or after 1970-01-03T00:00:00Z")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("--data %s: %v, want nothing created", dir, err)
	}
}

// TestSynthWeekBadEnd: an --end that is no time names the value given, as
// backtest's and profile's --end do (it said "--end want unix seconds ...").
func TestSynthWeekBadEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "week")
	wantRefused(t, []string{"synth-week", "--data", dir, "--promtool", "/bin/true", "--end", "yesterday"}, nil,
		"--end yesterday: want unix seconds (1700000000), RFC3339 (2026-01-05T00:00:00Z) or a relative time (-7d, now)")
}

// TestSynthWeekInterruptLeavesNoTemp: an interrupt while promtool runs
// kills it, so the temporary directory it makes (promtool tsdb
// create-blocks-from makes a "head*" directory in $TMPDIR and removes it
// only when it finishes) would be left in $TMPDIR, one per interrupted run.
// promtool runs with TMPDIR inside synth-week's own temporary directory,
// removed with it. The fake promtool makes its directory and waits.
func TestSynthWeekInterruptLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	tmpdir := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmpdir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmpdir)
	started := filepath.Join(dir, "started")
	fake := filepath.Join(dir, "promtool")
	script := "#!/bin/sh\nmkdir \"${TMPDIR:-/tmp}/head123\" && touch " + started + " && exec sleep 30\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- run(ctx, []string{"synth-week", "--data", filepath.Join(dir, "data"), "--promtool", fake, "--days", "1", "--scrape", "2m"}, strings.NewReader(""), &out, &errb)
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fake promtool did not start")
		}
	}
	cancel()
	if code := <-done; code != exitInterrupted {
		t.Fatalf("exit %d, stderr %q; want 130", code, errb.String())
	}
	if left, _ := os.ReadDir(tmpdir); len(left) != 0 {
		t.Errorf("$TMPDIR holds %v after the interrupt; want nothing left", left)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".data.*")); len(left) != 0 {
		t.Errorf("left beside --data: %v", left)
	}
}

// TestDayCount: synth-week's summary said "synth-week: 1 days (...)" for
// --days 1.
func TestDayCount(t *testing.T) {
	for n, want := range map[int]string{1: "1 day", 2: "2 days", 7: "7 days", 90: "90 days"} {
		if got := dayCount(n); got != want {
			t.Errorf("dayCount(%d) = %q, want %q", n, got, want)
		}
	}
}
