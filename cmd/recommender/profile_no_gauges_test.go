package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/promtest"
)

// TestNoGaugesSays: one vLLM pod finishes a request a second for two
// days, scraped every minute, from a real Prometheus, and exports no
// running or waiting gauge at all (a wrong --server, a scrape that drops
// them). The whole range is one gauge gap: backtest's coverage is 0 with
// one gauge gap of 48h and 48 x 60 = 2880 steps interpolated, and a
// warning names the running query that came back empty; profile has no
// hour with data and says the gaps are the gauges', pointing at the
// running gauge. Before, profile said only "48h0m0s of it in gaps: give
// an earlier --start", which an earlier range cannot fix, and backtest
// gave no warning.
func TestNoGaugesSays(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(48 * time.Hour)
	prom := promtest.Start(t, promtest.Options{DataDir: promtest.Backfill(t, promtest.VLLMHistory(start, end, nil)), Flags: []string{"--storage.tsdb.retention.time=10y"}})
	args := func(cmd string, more ...string) []string {
		return append([]string{cmd, "--prometheus-url", prom.URL, "--selector", `{namespace="llm"}`,
			"--start", fmt.Sprint(start.Unix()), "--end", fmt.Sprint(end.Unix()), "--step", "1m"}, more...)
	}

	var out, errb bytes.Buffer
	if code := run(context.Background(), args("backtest", "--output", "json"), nil, &out, &errb); code != exitOK {
		t.Fatalf("backtest: exit %d: %s", code, errb.String())
	}
	var rep struct {
		Coverage struct {
			Fraction  float64 `json:"fraction"`
			GaugeGaps []struct {
				Duration string `json:"duration"`
			} `json:"gauge_gaps"`
			Interpolated int `json:"interpolated_steps"`
		} `json:"coverage"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if c := rep.Coverage; c.Fraction != 0 || len(c.GaugeGaps) != 1 || c.GaugeGaps[0].Duration != "48h0m0s" || c.Interpolated != 2880 {
		t.Errorf("backtest coverage %+v, want fraction 0, one gauge gap of 48h0m0s, 2880 steps interpolated", c)
	}
	warned := false
	for _, w := range rep.Warnings {
		warned = warned || strings.HasPrefix(w, "running query ") && strings.Contains(w, "returned no samples over 2026-01-05T00:00:00Z..2026-01-07T00:00:00Z")
	}
	if !warned {
		t.Errorf("backtest warnings %q, want one naming the running query that returned no samples", rep.Warnings)
	}

	out.Reset()
	errb.Reset()
	if code := run(context.Background(), args("profile", "--no-simulate"), nil, &out, &errb); code != exitRuntime {
		t.Fatalf("profile: exit %d, want %d: %s", code, exitRuntime, errb.String())
	}
	for _, want := range []string{"48h0m0s of it in gaps, 48h0m0s of it with no running/waiting samples though the success counter had some (backtest's gauge_gaps)",
		": check that the server's running gauge is scraped under the selector (--server); or give an earlier --start"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("profile stderr %q, want it to say %q", errb.String(), want)
		}
	}
}
