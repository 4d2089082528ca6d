package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
	"github.com/infscale/infscale/pkg/trace"
)

// TestTuneMemoryBudget: tune ran --workers replays at once, each at the
// full backlog bound (512 MiB), checked against nothing; now as simulate
// does (planReplays). With the bound lowered to 1000 requests a replay
// takes at most 1000 x 32 = 32,000 bytes (the trace's 48,000 requests are
// more): a budget of 70,000 bytes holds 2 of --workers 3 at once, the
// report the same as with no limit; one of 16,000 not even one, so one
// at a time with the bound 16,000 / 32 = 500 rounded down to a power of
// two, 256, and a candidate held to one replica (about 10 of these
// requests a second against 40) is warned of as lowered.
func TestTuneMemoryBudget(t *testing.T) {
	lowerBacklog(t, 1000)
	args := []string{"tune", "--trace", "synthetic:poisson,rate=40,duration=20m,prompt=2000,output=400,seed=1",
		"--stress", "none", "--workers", "3", "--output", "json", "--quiet"}
	free, freeErr := simUnder(t, args, 1<<62)
	if strings.Contains(freeErr, "note:") {
		t.Errorf("no limit: stderr %q; want no note of the budget", freeErr)
	}
	two, twoErr := simUnder(t, args, 70_000)
	if two != free {
		t.Errorf("2 at a time: the report differs from the one with no limit")
	}
	if !strings.Contains(twoErr, "note: 3 replays at their backlog bound (1000 requests in the system, 0.0 MiB each) would take more than the 0.1 MiB this process may still take (memory limit 1024.0 MiB, GOMEMLIMIT): running 2 at a time (the figures are the same, the run longer)\n") {
		t.Errorf("2 at a time: stderr %q; want the note running 2 at a time", twoErr)
	}
	_, lowErr := simUnder(t, args, 16_000)
	if !strings.Contains(lowErr, "note: one replay at its backlog bound (1000 requests in the system, 0.0 MiB) takes more than the 0.0 MiB this process may still take (memory limit 1024.0 MiB, GOMEMLIMIT): the policies run one at a time, each keeping at most 256 requests in the system") {
		t.Errorf("low budget: stderr %q; want the note naming 256 requests", lowErr)
	}
	if !strings.Contains(lowErr, "(the replay's memory bound, lowered from 1000 to what the process's memory holds: give it more to replay with the full bound)") {
		t.Errorf("low budget: stderr %q; want a shed warning saying the bound was lowered", lowErr)
	}
}

// TestBacktestProfileMemoryBudget: backtest and profile ran every policy
// (and the actual timeline) at once at the full bound, checked against
// nothing; now as simulate does. With the bound lowered to 1000 requests
// (32,000 bytes a replay; a 6-hour history holds more requests) and
// 16,000 bytes free, not even one fits: one at a time, each keeping at
// most 256 requests (16,000 / 32 = 500, down to a power of two), said
// once after the progress line, and fixed:0 (no replica: every request
// held) warned of at the lowered bound. profile (a day) says the same.
func TestBacktestProfileMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	srv, truth := synthweektest.Serve(t, synthweek.Config{Days: 2, Scrape: 2 * time.Minute})
	lowerBacklog(t, 1000)
	span := func(h time.Duration) []string {
		return []string{"--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`,
			"--start", fmt.Sprint(truth.Start.Unix()), "--end", fmt.Sprint(truth.Start.Add(h).Unix()), "--step", "2m"}
	}
	const note = "note: one replay at its backlog bound (1000 requests in the system, 0.0 MiB) takes more than the 0.0 MiB this process may still take (memory limit 1024.0 MiB, GOMEMLIMIT): the policies run one at a time, each keeping at most 256 requests in the system"
	_, stderr := simUnder(t, append([]string{"backtest", "--quiet", "--policy", "fixed:0", "--policy", "queue:24"}, span(6*time.Hour)...), 16_000)
	if strings.Count(stderr, note) != 1 {
		t.Errorf("backtest: stderr %q\nwant the note naming 256 requests once", stderr)
	}
	if !strings.Contains(stderr, "warning: fixed:0: 256 requests were in the system") || !strings.Contains(stderr, "lowered from 1000 to what the process's memory holds") {
		t.Errorf("backtest: stderr %q\nwant fixed:0's shed warning at 256, saying the bound was lowered", stderr)
	}
	_, stderr = simUnder(t, append([]string{"profile", "--policy", "queue:24,max=1"}, span(24*time.Hour)...), 16_000)
	if !strings.Contains(stderr, note) {
		t.Errorf("profile: stderr %q\nwant the note naming 256 requests", stderr)
	}
}

// TestSimulateCountsOnce: under a budget that holds fewer replays than
// the cores, simulate counted a file trace's requests with a pass of its
// own, after the up-front scan had read every row (a 3-million-row CSV
// read 6 times, now 5). source returns the scan's count, the requests
// the replays read: the file's 5 rows (arrivals 0 to 40 s), 2 of them in
// --window 15:35 (20 and 30); countOr gives it without opening the trace,
// and counts it (traceCount) only when the scan did not (0).
func TestSimulateCountsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "five.csv")
	if err := os.WriteFile(path, []byte("arrival_s,prompt_tokens,output_tokens\n0,10,5\n10,10,5\n20,10,5\n30,10,5\n40,10,5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		window string
		want   int64
	}{{"", 5}, {"15:35", 2}} {
		sim := SimulateCmd{Trace: path, Window: c.window, RateScale: 1, Period: time.Second}
		_, n, err := sim.source(context.Background(), io.Discard)
		if err != nil || n != c.want {
			t.Errorf("--window %q: source counted %d, %v; want %d", c.window, n, err, c.want)
		}
	}
	opened := 0
	src := trace.NewSource("five.csv", 40, func() (trace.Reader, error) {
		opened++
		return trace.FromSlice("five", 40, make([]trace.Request, 5)).Open()
	})
	if n := countOr(context.Background(), src, 2)(); n != 2 || opened != 0 {
		t.Errorf("countOr(2) = %d after %d passes; want 2 without one", n, opened)
	}
	if n := countOr(context.Background(), src, 0)(); n != 5 || opened != 1 {
		t.Errorf("countOr(0) = %d after %d passes; want 5 after one", n, opened)
	}
}

// TestPlanReplaysSearch: optimal's search replayed its seed policies as
// many at once as the cores, each holding a replay's backlog, while the
// budget counted it as one replay (-p optimal --slo-ttft 0.01s on 10
// minutes at 3,000 req/s under GOMEMLIMIT=140MiB peaked at 180.5 MB).
// With the bound at 1000 requests (32,000 bytes a replay) and 2 cores,
// one optimal replay and its second seed take 64,000: a budget of 70,000
// holds them (SearchAtOnce 0: the cores), one of 50,000 does not, so its
// seeds run one at a time (1), the replay itself still at the full bound.
func TestPlanReplaysSearch(t *testing.T) {
	lowerBacklog(t, 1000)
	count := func() int64 { return 48_000 }
	for _, c := range []struct {
		avail int64
		want  int
	}{{70_000, 0}, {50_000, 1}} {
		budgetFor(t, c.avail)
		replayCores = func() int { return 2 }
		if s := planReplays(io.Discard, 1, 1, true, count); s.SearchAtOnce != c.want || s.AtOnce != 1 || s.Backlog != 1000 {
			t.Errorf("budget %d: %+v; want 1 at once at the bound 1000, SearchAtOnce %d", c.avail, s, c.want)
		}
	}
}

// TestPlanReplaysCountsOnlyForSearch: the check that optimal's seeds fit
// beside the replays counted the trace (one more pass) even when no policy
// was optimal. With the bound at 1000 requests (32,000 bytes a replay), 2
// cores and a budget of 70,000: 2 replays (64,000) fit at the full bound,
// so sizing them needs no count; 2 + 1 seed (96,000) do not. Without a
// search the count is never taken and SearchAtOnce stays 0; with one
// (optimal among them) it is taken once and the seeds run one at a time.
func TestPlanReplaysCountsOnlyForSearch(t *testing.T) {
	lowerBacklog(t, 1000)
	budgetFor(t, 70_000)
	replayCores = func() int { return 2 }
	for _, c := range []struct {
		search bool
		counts int
		want   int
	}{{false, 0, 0}, {true, 1, 1}} {
		counted := 0
		count := func() int64 { counted++; return 48_000 }
		s := planReplays(io.Discard, 2, 1, c.search, count)
		if counted != c.counts || s.SearchAtOnce != c.want || s.AtOnce != 2 || s.Backlog != 1000 {
			t.Errorf("search %v: %+v after %d counts; want 2 at once at the bound 1000, SearchAtOnce %d, after %d counts",
				c.search, s, counted, c.want, c.counts)
		}
	}
}
