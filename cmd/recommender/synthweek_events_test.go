package main

import (
	"io"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/synthweek"
)

// TestSynthWeekEventsInside: the summary names only the spike and scrape
// gap inside the days written. They sit at Start + 2 d 10 h (30 min) and
// Start + 4 d 16 h (20 min): with Start 2026-11-30T18:00Z the spike is
// 2026-12-03T04:00 .. 04:30 (ends 2 d 10.5 h in: --days 3 holds it) and the
// gap 2026-12-05T10:00 .. 10:20 (4 d 16 h 20 min in: --days 5).
func TestSynthWeekEventsInside(t *testing.T) {
	start := time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)
	for days, want := range map[int]string{
		1: "no spike (it needs --days 3), no scrape gap (it needs --days 5)",
		3: "a spike 2026-12-03T04:00:00Z .. 2026-12-03T04:30:00Z, no scrape gap (it needs --days 5)",
		5: "a spike 2026-12-03T04:00:00Z .. 2026-12-03T04:30:00Z, a scrape gap 2026-12-05T10:00:00Z .. 2026-12-05T10:20:00Z",
	} {
		truth, err := synthweek.Write(io.Discard, synthweek.Config{Start: start, Days: days, Scrape: 10 * time.Minute, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := weekEvents(truth); got != want {
			t.Errorf("--days %d: %q, want %q", days, got, want)
		}
	}
}
