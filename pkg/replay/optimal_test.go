package replay

import (
	"math"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestOptimalOneRequest works the schedule out by hand. lin's cold start is
// 60 s, so with a 15 s period a replica is asked for 4 periods ahead. One
// request at second 600 (1000 prompt tokens: first token 0.1 s later):
// nothing arrives within the first cold start, so the schedule starts with
// no replica (the descent lowers the greedy's warm start of one, which cost
// 15 s); one replica is asked for at 540 (ready at 600, when the request
// arrives; at 525 it would idle 15 s for nothing) and dropped by the tick
// at 600, which comes after the arrival (events at one instant: replicas,
// the arrival, the tick): it drains, serving the request (prefill 0.1 s,
// then 2 decode steps of 0.0071001 and 0.0071002 s, as in TestOneRequest)
// and leaves at 600.1142003. Replica time 60.1142003 s, no miss (the
// certified bound is 58.2 s less the grid's rounding: 58.1); the oracle,
// planning 15 s buckets over a cold start + a period, asks at 525 (105 s).
func TestOptimalOneRequest(t *testing.T) {
	reqs := []trace.Request{{Arrival: 600, Prompt: 1000, Output: 3}}
	src := trace.FromSlice("one", 700, reqs)
	res := runPolicies(t, src, Config{Model: lin{}, Timeline: true}, "optimal", "oracle")
	opt, orc := res[0], res[1]
	if opt.Misses() != 0 || math.Abs(opt.ReplicaSeconds-60.1142003) > 1e-6 {
		t.Errorf("optimal: %d misses, %.7f replica-seconds; want 0 and 60.1142003", opt.Misses(), opt.ReplicaSeconds)
	}
	for _, s := range opt.Timeline {
		want := 0
		if s.T >= 540 && s.T < 600 {
			want = 1
		}
		if s.Desired != want {
			t.Errorf("optimal at %g s: desired %d, want %d", s.T, s.Desired, want)
		}
	}
	if orc.Misses() != 0 || !near(orc.ReplicaSeconds, 105) {
		t.Errorf("oracle: %d misses, %g replica-seconds; want 0 and 105", orc.Misses(), orc.ReplicaSeconds)
	}
}

// TestOptimalBoundsOracle: on the reference trace (seed 1, and at twice its
// rate) the hindsight optimum misses no more than the oracle and, when both
// miss nothing, costs no more.
func TestOptimalBoundsOracle(t *testing.T) {
	for _, k := range []float64{1, 2} {
		src := trace.RateScale(trace.Reference(1), k)
		res := runPolicies(t, src, Config{Model: referenceModel(t)}, "optimal", "oracle")
		opt, orc := res[0], res[1]
		if opt.Misses() > orc.Misses() || (opt.Misses() == orc.Misses() && opt.ReplicaSeconds > orc.ReplicaSeconds) {
			t.Errorf("x%g: optimal %d misses at %.1f replica-min, oracle %d at %.1f: want optimal no worse", k,
				opt.Misses(), opt.ReplicaMinutes(), orc.Misses(), orc.ReplicaMinutes())
		}
	}
}

func TestParseOptimal(t *testing.T) {
	if _, err := ParsePolicy("optimal"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"optimal:3", "optimal,max=2"} {
		if _, err := ParsePolicy(s); err == nil {
			t.Errorf("%s: accepted, want an error", s)
		}
	}
}
