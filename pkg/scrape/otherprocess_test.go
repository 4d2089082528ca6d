package scrape

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
)

// TestRateOtherProcess: one URL in front of two pods (a Service) answers
// each scrape with either pod's page. Pod A started at t0-1h and has
// served 100,000 requests, pod B started at t0-2h with 500,000. Read as
// restarts, every flip counted the new pod's whole count as one interval's
// increase: 500,000 / 15 s = 33,333 requests a second (under the 1e6 bound,
// so it decided). A process that started before the previous page was read
// (or before the previous page's process) is another process: no baseline
// (NaN), never a rate. Two pages of one pod are a rate again: (100,150 -
// 100,000) / 15 = 10. A real restart (started at t0+50 s, between the
// scrapes at t0+45 and t0+60) is still a reset: 30 / 15 = 2.
func TestRateOtherProcess(t *testing.T) {
	page := func(sec int, start, requests float64) *Page {
		p := readString(t, fmt.Sprintf("process_start_time_seconds %.0f\nvllm:request_success_total{finished_reason=\"stop\"} %g\n", start, requests), modelserver.VLLM)
		p.Time = t0.Add(time.Duration(sec) * time.Second)
		return p
	}
	a0 := float64(t0.Unix() - 3600)
	b0 := float64(t0.Unix() - 7200)
	pages := []*Page{
		page(0, a0, 100000),
		page(15, b0, 500000),                // B after A: B started before A's process
		page(30, a0, 100000),                // A after B: A started an hour before the scrape at 15 s
		page(45, a0, 100150),                // A again: 150 / 15
		page(60, float64(t0.Unix()+50), 30), // A restarted at t0+50 s: 30 / 15
	}
	want := []struct {
		rate  float64
		other bool
	}{{math.NaN(), true}, {math.NaN(), true}, {10, false}, {2, false}}
	for i, w := range want {
		r := Rate(pages[i], pages[i+1])
		checkFloat(t, fmt.Sprintf("t=%ds req/s", 15*(i+1)), r.Requests, w.rate)
		if r.OtherProcess != w.other {
			t.Errorf("t=%ds: OtherProcess %v, want %v", 15*(i+1), r.OtherProcess, w.other)
		}
	}
	// Starts unknown (no process_start_time_seconds): nothing to tell, the
	// decrease is a reset as before.
	if OtherProcess(t0, math.NaN(), a0) || OtherProcess(t0, a0, math.NaN()) || OtherProcess(time.Time{}, a0, b0+1) {
		t.Error("OtherProcess with an unknown start or time")
	}
	// A restart whose start reads up to RestartSlack before the previous
	// scrape (the two clocks) is a restart; a second more is another process.
	prev := float64(t0.Unix() - 3600)
	if OtherProcess(t0, prev, float64(t0.Add(-RestartSlack).Unix())) || !OtherProcess(t0, prev, float64(t0.Add(-RestartSlack-time.Second).Unix())) {
		t.Error("RestartSlack boundary")
	}
	// The TTFT histogram's increase follows the same rule.
	if HistogramIncrease(ttftPage(t, 0, fmt.Sprint(a0), 10, 20, 20), ttftPage(t, 15, fmt.Sprint(b0), 100, 200, 300)) != nil {
		t.Error("histogram increase across two processes")
	}
}
