package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/promtest"
)

// TestProfileSkipsGaugeGaps: one vLLM pod finishes a request a second for
// two days, scraped every minute, from a real Prometheus (promtool
// backfill); its running and waiting gauges have no sample from 06:00 to
// 18:00 on the first day, the success counter all along. Backtest reports
// that span as a gauge gap (the gauges' last sample at 05:59 carried by the
// 5-minute lookback to 06:03, the next at 18:00): the steps ending 06:04 ..
// 18:00 are interpolated, so the hours 06:00 .. 17:00 (06:00 keeps 3 of its
// 60 steps, under half) have no data. profile's hours skip them as they
// skip a counter's gap: 48 - 12 = 36 hours, 1.5 days. Before, profile
// skipped the counter's gaps alone and read 2 days.
func TestProfileSkipsGaugeGaps(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(48 * time.Hour)
	gap0, gap1 := start.Add(6*time.Hour), start.Add(18*time.Hour)
	history := promtest.VLLMHistory(start, end, func(at time.Time) bool { return at.Before(gap0) || !at.Before(gap1) })
	prom := promtest.Start(t, promtest.Options{DataDir: promtest.Backfill(t, history), Flags: []string{"--storage.tsdb.retention.time=10y"}})

	args := []string{"profile", "--prometheus-url", prom.URL, "--selector", `{namespace="llm"}`,
		"--start", fmt.Sprint(start.Unix()), "--end", fmt.Sprint(end.Unix()), "--step", "1m",
		"--no-simulate", "--output", "json"}
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var p struct {
		Days float64 `json:"days"`
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if p.Days != 1.5 {
		t.Errorf("days %g, want 1.5 (36 hours with data: 06:00 .. 17:00 of the first day in the gauges' gap)", p.Days)
	}
}
