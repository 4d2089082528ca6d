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

// TestLowerBoundResidentByHand works docs/simulate.md's second example,
// where requests held resident decide the bound: lin as above (128 batch
// slots, a 100,000-token KV cache, the least decode step 7 ms: max(6 ms,
// 0.1 ms × batch) + 1 ms at batch 1-60), a trace of 1,000 s.
//
//   - D: 40 requests at 600.2 s, 1,000 prompt and 4,001 output tokens
//     (5,001 KV tokens each). Each is admitted by 602.2 - 0.1 and holds
//     its slot and KV at least to 600.2 + 0.1 + 4,000 × 0.007 = 628.3: all
//     40 resident over [602.1, 628.3], 200,040 KV tokens, so
//     ceil(200,040 / 100,000) = 3 replicas serve there (slots: 40 / 128,
//     1), each alive since 60 s before: the half-second cells wholly inside
//     are [602.5, 628), so 3 replicas over [542.5, 628): 256.5. (Prefill
//     alone forced 2 over [542.5, 600), 115, and period [600, 615) its 4
//     s of work: 119.)
//   - E: 1,280 requests at 900.2 s, 10 prompt and 201 output tokens. Each
//     holds its slot at least L = 0.001 + 200 × 0.007 = 1.401 s (level
//     Λ = 2 s: L <= 2) within [900.2, 900.2 + 2 + 2]: 1,280 × 1.401 =
//     1,793.28 slot-seconds over 128 slots a replica, 14.01
//     replica-seconds in 4 s, so 4 replicas serve at some instant of it
//     (14.01 / 4 = 3.5), each alive since 60 s before its end: over
//     [844.2, 900.2], cells [844.5, 900), 222. Its 1.28 s of prefill
//     within [900.2, 902.2] force one replica over [842.2, 900.2]: the
//     cells [842.5, 844.5) add 2. Period [900, 915) has no forced cell;
//     the slot-time held in it, 14.01, beats its prefill work (1.28) and
//     KV-time (1,280 × 211 × 1.401 / 100,000 = 3.78). (Before: 57.5 +
//     1.28.)
//
// Bound: 256.5 + 222 + 2 + 14.01 = 494.51 replica-seconds, no miss
// (before the residency rules: 119 + 58.78 = 177.78).
func TestLowerBoundResidentByHand(t *testing.T) {
	var reqs []trace.Request
	for range 40 {
		reqs = append(reqs, trace.Request{Arrival: 600.2, Prompt: 1000, Output: 4001})
	}
	for range 1280 {
		reqs = append(reqs, trace.Request{Arrival: 900.2, Prompt: 10, Output: 201})
	}
	src := trace.FromSlice("resident", 1000, reqs)
	cfg := Config{Model: lin{}}.Defaults()
	sp, err := newSpeed(lin{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := lowerBound(context.Background(), env{cfg: cfg, sp: sp, src: src})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(b.ReplicaSeconds-494.51) > 1e-3 || b.Unmeetable != 0 {
		t.Errorf("bound %.4f replica-seconds, %d unmeetable; want 494.51 and 0", b.ReplicaSeconds, b.Unmeetable)
	}
	if math.Abs(b.residency-(494.51-177.78)) > 1e-3 {
		t.Errorf("the residency rules add %.4f replica-seconds; want 494.51 - 177.78 = 316.73", b.residency)
	}
	res := runPolicies(t, src, Config{Model: lin{}}, "optimal")
	if o := res[0]; o.Misses() == 0 && o.ReplicaSeconds < b.ReplicaSeconds {
		t.Errorf("optimal: no miss at %.1f replica-seconds, below its bound %.1f", o.ReplicaSeconds, b.ReplicaSeconds)
	}
}
