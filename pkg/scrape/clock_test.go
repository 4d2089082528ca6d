package scrape

import (
	"math"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/clocktest"
	"github.com/infscale/infscale/pkg/modelserver"
)

// TestRateAcrossSuspend: two scrapes 15 s apart on the monotonic clock,
// but serve's machine was suspended 10 min in between (the wall clock,
// set on resume, moved 10 min 15 s; CLOCK_MONOTONIC, time.Now's reading,
// does not count a suspend). The pod served 2 req/s all along: its counter
// grew 2 x 615 = 1230. Divided by the monotonic 15 s it read 82 req/s, a
// 41x surge that scaled up at once. Over which span the counter grew is
// not known (a forward NTP step looks alike), so no rate: unknown, the
// next scrape has a baseline again. After a step back the monotonic span
// is the true one: 2 req/s. A scrape pair whose clocks agree
// within a second (NTP slews both alike) is read as before: 2 req/s.
func TestRateAcrossSuspend(t *testing.T) {
	page := func(requests float64, at time.Time) *Page {
		p := readString(t, "process_start_time_seconds 1000\nvllm:request_success_total{finished_reason=\"stop\"} "+
			ftoa(requests)+"\n", modelserver.VLLM)
		p.Source, p.Time = "pod-0", at
		return p
	}
	t0 := time.Now()
	prev := page(10000, t0)
	if r := Rate(prev, page(10030, t0.Add(15*time.Second))); math.Abs(r.Requests-2) > 1e-9 || r.Interval != 15*time.Second {
		t.Fatalf("clocks agree: %v req/s over %v, want 2 over 15s", r.Requests, r.Interval)
	}
	resumed := clocktest.WallMoved(t, t0.Add(15*time.Second), 10*time.Minute)
	if w, m := resumed.Round(0).Sub(t0.Round(0)), resumed.Sub(t0); w != 615*time.Second || m != 15*time.Second {
		t.Fatalf("wallMoved: wall %v mono %v", w, m)
	}
	if r := Rate(prev, page(10000+2*615, resumed)); !math.IsNaN(r.Requests) || r.Interval != 0 {
		t.Errorf("across a 10 min suspend: %v req/s over %v, want unknown (NaN), no interval", r.Requests, r.Interval)
	}
	// A step back (NTP by -5 min): the monotonic 15 s is the span the
	// counter grew over, 30 requests: 2 req/s.
	if r := Rate(prev, page(10030, clocktest.WallMoved(t, t0.Add(15*time.Second), -5*time.Minute))); math.Abs(r.Requests-2) > 1e-9 {
		t.Errorf("across a step back: %v req/s, want 2", r.Requests)
	}
	// Within a second: the same rate as on agreeing clocks.
	if r := Rate(prev, page(10030, clocktest.WallMoved(t, t0.Add(15*time.Second), 900*time.Millisecond))); math.Abs(r.Requests-2) > 1e-9 {
		t.Errorf("clocks 0.9 s apart: %v req/s, want 2", r.Requests)
	}
}
