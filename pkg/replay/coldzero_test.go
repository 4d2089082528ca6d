package replay

import (
	"context"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestColdStartZero: a replica that serves the instant it is asked for (a
// cold start of 0, possible through the Go API) has nothing for a hold to
// save, so `recommended`'s hold is off (a break-even of 2 cold starts is
// 0 s, which recommend.Policy refuses). Before, `recommended`,
// `hpa(recommended)` and `optimal` (which seeds its search with both)
// failed on it with "hold.break_even: 0s must be > 0", and
// RecommendedFor(0, 2) wrote "hold=0", which ParsePolicy refuses.
//
// Worked by hand: requests at 0, 20, 40 and 59 s (500 tokens: 0.5 s of
// prefill), a 10 s period, a 60 s trace. At one instant the arrival comes
// before the tick, but a replica asked for at the tick serves the held
// request at once (0.5 s), so the least schedule on the grid keeps the
// warm replica to the tick at 10, asks for one at 20 and at 40, each
// dropped at the next tick, and one at 60 for the request at 59 (1.5 s
// late of its arrival, within the 2 s SLO; free: replica time counts up
// to the trace's end): 10 + 10 + 10 + 0 = 30 replica-seconds, no miss.
// optimal misses none and costs no less; its bound is at most that.
func TestColdStartZero(t *testing.T) {
	m := gridModel{cold: 0, batch: 1, kv: 100000}
	reqs := []trace.Request{{Arrival: 0, Prompt: 500, Output: 1}, {Arrival: 20, Prompt: 500, Output: 1},
		{Arrival: 40, Prompt: 500, Output: 1}, {Arrival: 59, Prompt: 500, Output: 1}}
	src := trace.FromSlice("cold0", 60, reqs)
	for _, spec := range []string{"recommended", "hpa(recommended)", "optimal"} {
		pol, err := ParsePolicy(spec)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), src, pol, Config{Model: m, Period: 10})
		if err != nil {
			t.Errorf("%s on a cold start of 0: %v", spec, err)
			continue
		}
		if spec == "optimal" && (res.Misses() != 0 || res.ReplicaSeconds < 30-1e-9 || res.LowerBound == nil || res.LowerBound.ReplicaSeconds > 30) {
			t.Errorf("optimal: %d misses at %g replica-seconds, bound %+v; want 0 misses at >= 30, a bound <= 30", res.Misses(), res.ReplicaSeconds, res.LowerBound)
		}
	}
	w := RecommendedFor(0, 2)
	if !strings.Contains(w, "hold=off") {
		t.Errorf("RecommendedFor(0, 2) = %q; want hold=off", w)
	}
	if _, err := ParsePolicy(w); err != nil {
		t.Errorf("RecommendedFor(0, 2) = %q does not parse: %v", w, err)
	}
}
