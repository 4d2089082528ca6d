package recommend

import (
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// TestRampCap: demand:0.5 on testCapacity (0.15625 replica-s a 100/50
// request), lookahead 30 s, the hold's break-even 60 s and a 60 s
// scale-down window: q = 60 / (60 + 60) = 0.5. Rate 2 req/s from 0 to
// 195 s, then 2, 4, 6 at 210, 225, 240: the slope 2/15 = 0.1333 req/s per
// s is counted (TestHoldTrendCap), its rise over the lookahead 4 req/s:
// uncapped (6 + 4) × 0.15625 / 0.5 = 3.125 -> 4. Three finished ramps
// that rose 0.2, 0.3 and 5 req/s: the 0.5-quantile is the
// ceil(0.5 × 3) = 2nd smallest, 0.3, so (6 + 0.3) × 0.3125 = 1.96875 -> 2.
// With two finished ramps (fewer than minRamps) nothing is capped: 4.
// The trend first counts at 225 s (2, 2, 4 at 195, 210, 225 s: slope
// 1/15 = 0.0667 against 4 × sqrt(2.667/30) / sqrt(450) = 0.0562) and
// opens a ramp at rate 4; 6 and 7 at 240 and 255 s (within its 30 s
// lookahead) raise its Seen to 7; 9 at 270 s is past it: closed at a rise
// of 3.
func TestRampCap(t *testing.T) {
	down := int32(60)
	p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 10,
		Lookahead: 30 * time.Second, Capacity: testCapacity, Hold: &Hold{BreakEven: 60 * time.Second},
		Behavior: autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &down}}})
	run := func(ramps []Ramp) (Decision, *State) {
		st := &State{Ramps: ramps}
		var d Decision
		for s := int64(0); s <= 240; s += 15 {
			rate := 2.0
			if s >= 210 {
				rate = float64(s-195) / 15 * 2
			}
			d = Decide(p, demandObs(2, rate), st, at(s))
		}
		return d, st
	}
	past := []Ramp{
		{At: at(-300), Rate: 1, Seen: 1.2, Done: true},
		{At: at(-250), Rate: 1, Seen: 1.3, Done: true},
		{At: at(-200), Rate: 1, Seen: 6, Done: true},
	}
	if d, _ := run(nil); d.Raw[0].Replicas != 4 {
		t.Errorf("no past ramps: %d replicas, want 4\n%s", d.Raw[0].Replicas, stepsText(d))
	}
	if d, _ := run(past[1:]); d.Raw[0].Replicas != 4 {
		t.Errorf("two past ramps: %d replicas, want 4 (no cap)\n%s", d.Raw[0].Replicas, stepsText(d))
	}
	d, st := run(past)
	if d.Raw[0].Replicas != 2 || !strings.Contains(stepsText(d), "capped at a rise of 0.3 req/s (the 0.5 quantile of the last 3 ramps' rises: the ceil(0.5 × 3) = 2nd smallest of 0.2, 0.3, 5 req/s; q = B 60 s / (B + the scale-down window 60 s)): trend 0.3 / 30 = 0.01), projected (6 + 0.01 × 30)") {
		t.Errorf("three past ramps: %d replicas, want 2 capped at a rise of 0.3\n%s", d.Raw[0].Replicas, stepsText(d))
	}
	if n := len(st.Ramps); n != 4 || st.Ramps[3] != (Ramp{At: at(225), Rate: 4, Seen: 6}) {
		t.Fatalf("ramps after 240 s: %+v, want the three past and one open since 225 s at rate 4, seen 6", st.Ramps)
	}
	for _, o := range []struct {
		s    int64
		rate float64
	}{{255, 7}, {270, 9}} {
		Decide(p, demandObs(2, o.rate), st, at(o.s))
	}
	if r := st.Ramps[3]; r.Seen != 7 || !r.Done {
		t.Errorf("the ramp of 225 s after 270 s: %+v, want seen 7, done", r)
	}
	if err := st.Validate(); err != nil {
		t.Errorf("state after the ramps: %v", err)
	}
}

// TestRampStateValidate: a state file's ramps are checked as its other
// samples are: rates finite and >= 0, oldest first, at most MaxRamps.
func TestRampStateValidate(t *testing.T) {
	bad := State{Ramps: []Ramp{{At: at(10), Rate: -1, Seen: 2}, {At: at(5), Rate: 1, Seen: nan}}}
	err := bad.Validate()
	for _, want := range []string{"ramps[0].rate", "ramps[1].seen", "ramps[1].at"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want an error naming %s", err, want)
		}
	}
	many := State{Ramps: make([]Ramp, MaxRamps+1)}
	for i := range many.Ramps {
		many.Ramps[i] = Ramp{At: at(int64(i)), Rate: 1, Seen: 1}
	}
	if err := many.Validate(); err == nil || !strings.Contains(err.Error(), "ramps: 33 ramps: at most 32") {
		t.Errorf("Validate of %d ramps: %v, want at most %d", MaxRamps+1, err, MaxRamps)
	}
}

// A ramp Decide never writes is refused: seen below rate (Seen starts at
// the rate and only rises; a finished one read as a rise of 0 and pulled
// the cap down). Seen equal to the rate is what a count writes.
func TestRampStateValidateSeenBelowRate(t *testing.T) {
	bad := State{Ramps: []Ramp{{At: at(50), Rate: 5, Seen: 1, Done: true}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "ramps[0].seen: 1 is below rate 5") {
		t.Errorf("Validate: %v, want ramps[0].seen: 1 is below rate 5", err)
	}
	ok := State{LastAt: at(100), Ramps: []Ramp{{At: at(50), Rate: 5, Seen: 5, Done: true}, {At: at(100), Rate: 1, Seen: 1}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate of ramps Decide writes: %v", err)
	}
}
