package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

// TestBudgetSameOutputs: backtest and profile size their replays to the
// memory budget (planReplays through replay.Config.Size);
// which replays run together changes no figure, and a lowered bound only
// where a backlog reaches it. Their stdout under no limit and
// under a budget with 1 MiB free (one replay at a time, each at the
// floor's 65,536 requests in the system, more than a 6 h of the week ever
// holds) is byte-identical. The run's own timings (query_s, replay_s) are
// left out of the comparison.
func TestBudgetSameOutputs(t *testing.T) {
	timings := regexp.MustCompile(`(?m)^\s*"(query|replay)_s": [0-9.e+-]+,?\n`)
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week")
	}
	srv, truth := synthweektest.Serve(t, synthweek.Config{Scrape: 2 * time.Minute})
	day := truth.Start.Add(4 * 24 * time.Hour)
	for _, args := range [][]string{
		{"backtest", "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`,
			"--start", fmt.Sprint(day.Unix()), "--end", fmt.Sprint(day.Add(6 * time.Hour).Unix()), "--step", "2m",
			"--policy", "queue:24", "--policy", "fixed:6", "--policy", "recommended", "--output", "json"},
		{"profile", "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`,
			"--start", fmt.Sprint(day.Unix()), "--end", fmt.Sprint(day.Add(24 * time.Hour).Unix()), "--step", "2m", "--output", "json"},
	} {
		var outs [2]string
		for i, avail := range []int64{-1, 1 << 20} {
			if avail >= 0 {
				budgetFor(t, avail)
			}
			var out, errb bytes.Buffer
			if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
				t.Fatalf("%s, budget %d: exit %d: %s", args[0], avail, code, errb.String())
			}
			outs[i] = timings.ReplaceAllString(out.String(), "")
		}
		if outs[0] != outs[1] {
			t.Errorf("%s: stdout under a 1 MiB budget differs from without one:\n%s\nwant\n%s", args[0], outs[1], outs[0])
		}
	}
}
