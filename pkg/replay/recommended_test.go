package replay

import (
	"context"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/trace"
)

// TestRecommendedHoldsAt30 is DESIGN's drop: the queue policy fell from 7
// to 3 replicas at second 690 "while traffic was still 30 req/s". At 30
// req/s the reference replica's work is 30 × (320/24750 + 256 × 8.4 ms /
// 64) ≈ 30 × 0.0465 = 1.4 replicas busy, 1.4/0.9 = 1.56: two replicas.
// Under recommended the hold (450-705 s, after the ramp's replicas
// started) never has fewer than 2 desired, nor a miss, on any of seeds
// 1-10 (the ramp's overshoot to 3 may come back to 2).
func TestRecommendedHoldsAt30(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		pol, err := ParsePolicy("recommended")
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), trace.Reference(seed), pol, Config{Model: referenceModel(t), Timeline: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range res.Timeline {
			if s.T < 450 || s.T > 705 {
				continue
			}
			if s.Desired < 2 || s.Misses > 0 {
				t.Errorf("seed %d: at %gs desired %d, %d misses: want >= 2 and none during the hold", seed, s.T, s.Desired, s.Misses)
			}
		}
	}
}

// TestGuardNoRunaway is the runaway on the reference trace: without
// the guard ttft:1 and waiting:1 multiply every period while the 91 s cold
// start runs and reach max (100). With it neither goes past 2.5x optimal's
// peak; ttft:1 stays within 2x. (waiting:1's first decision, 5 waiting at
// target 1 while the lone replica saturates, asks for 5 at once: a single
// multiplication, which the guard does not hold.)
func TestGuardNoRunaway(t *testing.T) {
	res := runPolicies(t, trace.Reference(1), Config{Model: referenceModel(t)},
		"optimal", "ttft:1", "waiting:1", "ttft:1,guard=off", "waiting:1,guard=off")
	opt := res[0].Peak
	for _, r := range res[1:3] {
		if 2*r.Peak > 5*opt {
			t.Errorf("%s: peak %d, want <= 2.5 x optimal's %d", r.Policy, r.Peak, opt)
		}
	}
	if res[1].Peak > 2*opt {
		t.Errorf("ttft:1: peak %d, want <= 2 x optimal's %d", res[1].Peak, opt)
	}
	for _, r := range res[3:] {
		if r.Peak != 100 {
			t.Errorf("%s: peak %d, want the runaway to max 100", r.Policy, r.Peak)
		}
	}
}

// recommended prices an early replica at its own scale-down window: the
// preset's downwindow is RecommendedDownWindow (60 s), so on the
// reference replica's 91 s cold start its ramp bound is the normal
// quantile of 91/151 = 0.6026, 0.2602 standard errors (by hand in
// pkg/recommend's TestRampBound).
func TestRecommendedDownWindow(t *testing.T) {
	p, err := ParsePolicy(Recommended)
	if err != nil {
		t.Fatal(err)
	}
	sd := p.Recommend.Behavior.ScaleDown
	if sd == nil || sd.StabilizationWindowSeconds == nil || time.Duration(*sd.StabilizationWindowSeconds)*time.Second != RecommendedDownWindow {
		t.Fatalf("the preset's scale-down window %+v: want RecommendedDownWindow %v", sd, RecommendedDownWindow)
	}
}
