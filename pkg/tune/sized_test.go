package tune

import (
	"context"
	"testing"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/trace"
)

// TestSizedReusesRequests: tune --trace FILE read the file once up front
// (its count known) and, under a tight budget, sized counted it again (one
// more pass over the file). Given Requests, Size's requests() is that
// count times the largest bursts stress rounded up (bursts x2.5: 3; 5
// requests: 15) without opening the trace; without it, one pass counts
// the trace's 5 requests (15 again).
func TestSizedReusesRequests(t *testing.T) {
	opened := 0
	src := trace.NewSource("five.csv", 40, func() (trace.Reader, error) {
		opened++
		return trace.FromSlice("five", 40, make([]trace.Request, 5)).Open()
	})
	for _, c := range []struct {
		requests int64
		opens    int
	}{{5, 0}, {0, 1}} {
		opened = 0
		var got int64
		cfg := Config{Requests: c.requests, Workers: 2, Stress: []Stress{{Name: "bursts x2.5", Rate: 1, Bursts: 2.5}},
			Replay: replay.Config{Size: func(n, pools int, search bool, requests func() int64) replay.Sizing {
				got = requests()
				return replay.Sizing{AtOnce: n, Backlog: replay.MaxBacklog}
			}}}
		cfg.sized(context.Background(), src, 1)
		if got != 15 || opened != c.opens {
			t.Errorf("Requests %d: requests() = %d after %d passes; want 15 after %d", c.requests, got, opened, c.opens)
		}
	}
}
