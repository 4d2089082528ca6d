package replay

import (
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestWarmStart: a trace that starts in the middle of traffic (30 req/s from
// second 0) starts every policy with the oracle's fleet for the first cold
// start, so none pays a cold start at second 0; fixed:N starts at N.
func TestWarmStart(t *testing.T) {
	src := trace.Synthetic{Rate: 30, Duration: 600, Prompt: trace.ReferenceShape.Prompt, Output: trace.ReferenceShape.Output, Seed: 3}.Source()
	cfg := Config{Model: referenceModel(t), Timeline: true}
	res := runPolicies(t, src, cfg, "queue:16,lookahead=90", "oracle", "fixed:1")
	for _, r := range res[:2] {
		// 30 req/s × ~2.1 s in the system ≈ 60 requests: more than one
		// replica at the oracle's 70% of 64 slots.
		if r.Timeline[0].Ready < 2 || r.Misses() != 0 {
			t.Errorf("%s: %d ready at the first tick, %d misses; want a warm fleet (>= 2) and no misses", r.Policy, r.Timeline[0].Ready, r.Misses())
		}
	}
	if f := res[2]; f.Timeline[0].Ready != 1 || f.Peak != 1 {
		t.Errorf("fixed:1: %d ready, peak %d; want exactly 1", f.Timeline[0].Ready, f.Peak)
	}
}
