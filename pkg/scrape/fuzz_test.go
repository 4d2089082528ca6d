package scrape

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
)

// FuzzRead: Read never panics, and a page it returns obeys the absent/finite
// rules. Seeded with every page of shared/testdata (when present) and inline
// pages.
func FuzzRead(f *testing.F) {
	for _, glob := range []string{"metrics/*.prom", "cases/*.prom"} {
		files, _ := filepath.Glob(filepath.Join(sharedTestdata, glob))
		for _, path := range files {
			if b, err := os.ReadFile(path); err == nil {
				f.Add(b, "", uint8(0))
			}
		}
	}
	f.Add([]byte(omPage), "application/openmetrics-text; version=1.0.0", uint8(1))
	f.Add([]byte("vllm:num_requests_running{engine=\"0\"} 1\nvllm:num_requests_waiting NaN\n"), "text/plain", uint8(0))
	f.Add([]byte("# TYPE x histogram\nx_bucket{le=\"+Inf\"} 1\nx_count 1\n# EOF\n"), "", uint8(2))
	f.Add([]byte("sglang:num_running_reqs{tp_rank=\"0\"} 1 1700000000000\n"), "", uint8(3))
	f.Add([]byte("{\"a\":1}"), "", uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, contentType string, server uint8) {
		s := modelserver.Server(int(server) % (len(modelserver.Servers()) + 1))
		p, err := Read(bytes.NewReader(b), contentType, "fuzz", s)
		if err != nil {
			if p != nil {
				t.Fatalf("error %v with a page", err)
			}
			return
		}
		for _, v := range []float64{p.Running, p.Waiting, p.KV, p.PromptTokens, p.GenerationTokens, p.Requests, p.CPUSeconds} {
			if math.IsInf(v, 0) {
				t.Fatalf("infinite signal in %+v", p)
			}
		}
		if p.Suspect != "" && !(p.Waiting > 0) {
			t.Fatalf("suspect without waiting: %+v", p)
		}
		if p.Running < 0 || p.Waiting < 0 || p.KV < 0 || p.KV > 1 || p.MaxRunning < 0 {
			t.Fatalf("a count below 0 or KV outside 0..1: %+v", p)
		}
		if p.Pool != nil && (p.Pool.Ready < 0 || p.Pool.Ready > MaxEndpoints) {
			t.Fatalf("ready endpoints %v outside 0..%d", p.Pool.Ready, MaxEndpoints)
		}
		// Every histogram read is cumulative: bounds increasing, counts
		// never going down (float noise within checkHistogram's tolerance).
		for _, h := range []*Histogram{p.TTFT, p.QueueTime, p.ITL} {
			if h == nil {
				continue
			}
			for i := 1; i < len(h.Buckets); i++ {
				lo, hi := h.Buckets[i-1], h.Buckets[i]
				if !(hi.UpperBound > lo.UpperBound) || hi.Count < lo.Count-1e-9*math.Max(1, math.Abs(lo.Count)) {
					t.Fatalf("%s buckets not cumulative: %v", h.Family, h.Buckets)
				}
			}
		}
		_ = Rate(p, p)
		_ = Aggregate([]*Page{p})
	})
}
