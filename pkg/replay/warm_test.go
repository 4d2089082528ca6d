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

// TestWarmStartWithinMax: the warm start never gives a policy more replicas
// than its max. At 100 req/s of the reference lengths a replica holds
// 100 × ~2.1 s ≈ 210 requests in flight against the oracle's 0.7 × 64 ≈ 45
// per replica, so the oracle's warm fleet would be about 5; every policy
// below caps at 2, so it starts with at most 2 and never asks for more.
func TestWarmStartWithinMax(t *testing.T) {
	src := trace.Synthetic{Rate: 100, Duration: 120, Prompt: trace.ReferenceShape.Prompt, Output: trace.ReferenceShape.Output, Seed: 1}.Source()
	cfg := Config{Model: referenceModel(t), Timeline: true}
	specs := []string{"queue:24,max=2", "knative:16,max=2", "oracle,max=2", "hpa(queue:24,max=2)", "hpa(queue:24),max=2"}
	for _, r := range runPolicies(t, src, cfg, specs...) {
		if r.Peak > 2 || r.Timeline[0].Ready+r.Timeline[0].Starting > 2 {
			t.Errorf("%s: peak %d, %d replicas at the first tick; want at most max=2", r.Policy, r.Peak, r.Timeline[0].Ready+r.Timeline[0].Starting)
		}
	}
}

// TestWarmStartIgnoresUnservable: a request that can never fit the KV cache
// (the reference replica holds 396,728 tokens; this one asks for 10^8) is
// rejected on arrival, so the oracle (and the warm start it sizes) needs no
// replica for it: one small request besides needs one replica.
func TestWarmStartIgnoresUnservable(t *testing.T) {
	src := trace.FromSlice("huge", 0, []trace.Request{{Arrival: 0, Prompt: 100_000_000, Output: 10}, {Arrival: 1, Prompt: 100, Output: 10}})
	cfg := Config{Model: referenceModel(t)}
	for _, r := range runPolicies(t, src, cfg, "queue:24", "oracle", "knative:16") {
		if r.Peak != 1 || r.Rejected != 1 || r.Met != 1 {
			t.Errorf("%s: peak %d, rejected %d, met %d; want peak 1, the huge request rejected, the small one met", r.Policy, r.Peak, r.Rejected, r.Met)
		}
	}
}

// TestWarmStartInherited: recommended inherits its warm start (the fleet
// its first decision finds, docs/recommend.md "The inherited fleet") and
// holds it for the hold's break-even, two cold starts (2 × 91 s = 182 s on
// the reference replica), before releasing it. 30 req/s for 30 s warm it
// to at least 2 replicas (TestWarmStart); the traffic then stops, the
// demand asks for 1 and a dip opens by 45 s at the latest, so the fleet
// is still held at 180 s (open at most 180 - 30 = 150 s < 182 s) and
// released by 300 s (open at least 300 - 45 - 15 = 240 s, a period late).
func TestWarmStartInherited(t *testing.T) {
	rd, err := trace.Synthetic{Rate: 30, Duration: 30, Prompt: trace.ReferenceShape.Prompt, Output: trace.ReferenceShape.Output, Seed: 3}.Source().Open()
	if err != nil {
		t.Fatal(err)
	}
	var reqs []trace.Request
	for {
		q, err := rd.Next()
		if err != nil {
			break
		}
		reqs = append(reqs, q)
	}
	rd.Close()
	reqs = append(reqs, trace.Request{Arrival: 400, Prompt: 100, Output: 10})
	cfg := Config{Model: referenceModel(t), Timeline: true}
	r := runPolicies(t, trace.FromSlice("burst then silence", 400, reqs), cfg, "recommended")[0]
	at := func(sec float64) Sample {
		for _, s := range r.Timeline {
			if s.T == sec {
				return s
			}
		}
		t.Fatalf("no sample at %g s", sec)
		return Sample{}
	}
	if w := r.Timeline[0].Ready; w < 2 {
		t.Fatalf("warm start %d, want >= 2", w)
	}
	if s := at(180); s.Ready+s.Starting != r.Timeline[0].Ready {
		t.Errorf("at 180 s: %d replicas, want the warm %d held (break-even 182 s)", s.Ready+s.Starting, r.Timeline[0].Ready)
	}
	if s := at(300); s.Desired != 1 {
		t.Errorf("at 300 s: desired %d, want 1 (the hold expired)", s.Desired)
	}
}
