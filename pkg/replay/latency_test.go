package replay

import (
	"context"
	"math"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestLatencies works one request out by hand with the lin model: a
// 1,000-token prompt prefills in 1000 / 10000 = 0.1 s (the first token);
// its 2 further tokens take one decode step each at contexts 1,001 and
// 1,002: (0.006 + 1e-7 × 1001) + 0.001 = 7.1001 ms, then 7.1002 ms. So
// TTFT 0.1 s and e2e 0.1142003 s. A second, identical request arriving at
// second 1 (the replica idle again) sees the same.
func TestLatencies(t *testing.T) {
	reqs := []trace.Request{{Arrival: 0, Prompt: 1000, Output: 3}, {Arrival: 1, Prompt: 1000, Output: 3}}
	got, err := Latencies(context.Background(), trace.FromSlice("test", 2, reqs), 1, Config{Model: lin{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d latencies, want 2", len(got))
	}
	for i, l := range got {
		if l.Arrival != float64(i) || math.Abs(l.TTFT-0.1) > 1e-9 || math.Abs(l.E2E-0.1142003) > 1e-9 || l.Output != 3 {
			t.Errorf("request %d: %+v, want arrival %d, TTFT 0.1, e2e 0.1142003", i, l, i)
		}
	}
}
