package replay

import (
	"context"
	"math"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestLowerBoundByHand works docs/simulate.md's example out by hand. lin:
// prefill 10,000 tokens/s (c = 0.1 ms a token), cold start 60 s, no
// request overhead; SLO 2 s, period 15 s, so the grid is half-seconds.
//
//   - A: one request at 600 s, 1000 prompt tokens: its prefill (0.1 s) ends
//     by 602, so a replica serves within [600, 602], asked for 60 s before:
//     alive over [602 - 0.1 - 60, 600 + 0.1] = [541.9, 600.1]. The
//     half-second cells wholly inside are [542, 600): 58 s. Period
//     [600, 615) holds the 0.1 s of prefill work and no forced cell: 0.1.
//   - B: 400 such requests at 1200 s: 40 replica-seconds of prefill within
//     [1200, 1202], so some instant there has 40 / 2 = 20 serving replicas,
//     each alive since 60 s before it: 20 over [1142, 1200], 1160
//     replica-seconds; period [1200, 1215) adds its 40 s of work.
//   - C: one request of 30,000 tokens (3 s of prefill > the 2 s SLO) and
//     one of 99,990 + 20 tokens (over lin's 100,000-token KV cache) can
//     never be met: 2 unmeetable, no replica time.
//
// Bound: 58 + 0.1 + 1160 + 40 = 1258.1 replica-seconds.
func TestLowerBoundByHand(t *testing.T) {
	reqs := []trace.Request{{Arrival: 600, Prompt: 1000, Output: 3}}
	for range 400 {
		reqs = append(reqs, trace.Request{Arrival: 1200, Prompt: 1000, Output: 3})
	}
	reqs = append(reqs, trace.Request{Arrival: 1250, Prompt: 30000, Output: 3}, trace.Request{Arrival: 1260, Prompt: 99990, Output: 20})
	src := trace.FromSlice("hand", 1300, reqs)
	cfg := Config{Model: lin{}}.Defaults()
	sp, err := newSpeed(lin{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := lowerBound(context.Background(), env{cfg: cfg, sp: sp, src: src})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(b.ReplicaSeconds-1258.1) > 1e-3 || b.Unmeetable != 2 {
		t.Errorf("bound %.4f replica-seconds, %d unmeetable; want 1258.1 and 2", b.ReplicaSeconds, b.Unmeetable)
	}
	// The bound is beside optimal's row, and optimal costs no less.
	res := runPolicies(t, src, Config{Model: lin{}}, "optimal")
	lb := res[0].LowerBound
	if lb == nil || math.Abs(lb.ReplicaSeconds-1258.1) > 1e-3 {
		t.Fatalf("optimal's LowerBound %+v; want 1258.1 replica-seconds", lb)
	}
	if res[0].Misses() < lb.Unmeetable || (res[0].Misses() == lb.Unmeetable && res[0].ReplicaSeconds < lb.ReplicaSeconds) {
		t.Errorf("optimal: %d misses at %.1f replica-seconds, below its bound", res[0].Misses(), res[0].ReplicaSeconds)
	}
}
