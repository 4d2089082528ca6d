package recommend

import (
	"testing"
	"time"
)

func lookaheadPolicy(t *testing.T) *Policy {
	p := queuePolicy(4)
	p.Max = 100
	p.Lookahead = 90 * time.Second
	// Allow fast growth so the lookahead, not the rate limit, shows.
	p.Behavior.ScaleUp = rules(0, "Max", percent(1000, 15))
	return mustValidate(t, p)
}

// A rising queue: 12, 18, 24 at t = 0, 15, 30 (0.4 requests/s).
func TestLookaheadRising(t *testing.T) {
	p := lookaheadPolicy(t)
	var st State
	// t=0: one sample, no trend: projected 12 → ceil(12/4) = 3, the same as
	// the present.
	expect(t, Decide(p, queueObs(1, 12), &st, at(0)), 3, ReasonMetric)
	// t=15 at 3: slope (18−12)/15 = 0.4/s; projected 18 + 0.4 × 90 = 54 →
	// ceil(54/4) = ceil(13.5) = 14 > present ceil(18/4) = 5. Limit
	// ceil(3 × 11) = 33.
	expect(t, Decide(p, queueObs(3, 18), &st, at(15)), 14, ReasonLookahead)
	// t=30 at 14: least squares over (−30, 12), (−15, 18), (0, 24): mean t
	// −15, mean 18, Σ(dt·dy) = 90 + 0 + 90 = 180, Σdt² = 450: slope 0.4;
	// projected 24 + 36 = 60; ratio 60/(4 × 14) = 1.071 is within the
	// tolerance: 14, above the present ceil(24/4) = 6 (ratio 0.43).
	expect(t, Decide(p, queueObs(14, 24), &st, at(30)), 14, ReasonLookahead)
	if len(st.Demand) != 3 {
		t.Errorf("demand history %d samples, want 3", len(st.Demand))
	}
	// t=300: the samples before 300 − 180 = 120 are pruned: only t=300.
	Decide(p, queueObs(14, 24), &st, at(300))
	if len(st.Demand) != 1 {
		t.Errorf("demand history %d samples after 270 s, want 1 (2 × lookahead = 180 s)", len(st.Demand))
	}
}

// A falling trend never lowers the recommendation.
func TestLookaheadFallingOnlyUpward(t *testing.T) {
	p := lookaheadPolicy(t)
	var st State
	Decide(p, queueObs(10, 40), &st, at(0))
	// slope (20 − 40)/15 < 0: projected = 20; present ceil(20/4) = 5 but the
	// down window (300 s) holds 10.
	d := Decide(p, queueObs(10, 20), &st, at(15))
	expect(t, d, 10, ReasonScaleDownStabilized)
	// Steps: the metric's, then the lookahead's (one metric): projected 20
	// + 0 × 90 = 20, ceil(20/4) = 5, not above the present 5; it changed
	// nothing, so it carries no reason.
	if len(d.Steps) < 2 {
		t.Fatalf("no lookahead step:\n%s", stepsText(d))
	}
	if s := d.Steps[1]; s.Stage != StageLookahead || s.Reason != 0 || s.Value != 5 || d.Raw[0].Replicas != 5 {
		t.Errorf("a falling trend raised: %s %d (raw %d):\n%s", s.Reason, s.Value, d.Raw[0].Replicas, stepsText(d))
	}
}

// A decision repeated at the same instant replaces that instant's demand
// sample instead of counting it twice in the trend.
func TestLookaheadSameInstant(t *testing.T) {
	p := queuePolicy(4)
	p.Max, p.Lookahead = 50, 90*time.Second
	mustValidate(t, p)
	var st State
	Decide(p, queueObs(1, 12), &st, at(1000))
	Decide(p, queueObs(3, 12), &st, at(1015))
	Decide(p, queueObs(3, 18), &st, at(1015))
	if len(st.Demand) != 2 || st.Demand[1].Demand != 18 {
		t.Fatalf("demand %+v, want 2 samples, the last 18", st.Demand)
	}
	// slope (18 − 12) / 15 s = 0.4/s; projected 18 + 0.4 × 90 = 54 → ceil(54/4) = 14.
	d := Decide(p, queueObs(3, 18), &st, at(1015))
	if len(st.Demand) != 2 || d.Raw[0].Replicas != 5 {
		t.Errorf("demand %+v raw %+v", st.Demand, d.Raw[0])
	}
	found := false
	for _, s := range d.Steps {
		if s.Reason == ReasonLookahead && s.Value == 14 {
			found = true
		}
	}
	if !found {
		t.Errorf("no lookahead step of 14:\n%s", stepsText(d))
	}
}
