package replay

import (
	"math"
	"testing"

	"github.com/infscale/infscale/pkg/recommend"
)

func kpaObs(ready int, conc float64) recommend.Observation {
	return recommend.Observation{Current: ready, Reporting: ready, Running: conc, Waiting: 0, Held: math.NaN()}
}

// TestKnativePanicAndZero follows knative's autoscaler.go Scale by hand.
func TestKnativePanicAndZero(t *testing.T) {
	p, err := ParsePolicy("knative:10")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := p.build(env{})
	k := c.(*knativeCtl)
	now := 0.0
	tick := func(ready int, conc float64) int {
		now += kpaTick
		return k.Decide(now, kpaObs(ready, conc))
	}
	// 30 ticks (60 s) at concurrency 20 with 2 ready: stable 20/10 = 2.
	var got int
	for range 30 {
		got = tick(2, 20)
	}
	if got != 2 {
		t.Fatalf("steady: %d, want 2", got)
	}
	// A burst of 3 ticks at 60: panic window (6 s = 3 ticks) average 60,
	// dppc 6, 6/2 ready = 3 >= 2: panic. Stable: (27×20 + 3×60)/30 = 24,
	// dspc 3. Panic takes the larger: 6.
	for range 3 {
		got = tick(2, 60)
	}
	if got != 6 {
		t.Fatalf("burst: %d, want 6 (panic)", got)
	}
	// Concurrency falls to 20 with 6 ready: panic average (60+60+20)/3 =
	// 46.7, dppc 5, 5/6 < 2, not over; but panic mode lasts 60 s after the
	// last crossing and never scales down: still 6.
	if got = tick(6, 20); got != 6 {
		t.Fatalf("after the burst: %d, want 6 (no decrease in panic)", got)
	}
	// 30 more ticks at 20 with 6 ready: panic ends (60 s after), stable
	// average 20 -> dspc 2, within floor(6/2) = 3 as the most a tick
	// removes: 3.
	for range 30 {
		got = tick(6, 20)
	}
	if got != 3 {
		t.Fatalf("after panic: %d, want 3 (max-scale-down-rate 2 from 6 ready)", got)
	}
	// 30 ticks at 5 with 3 ready: stable 5/10 -> dspc 1, floor(3/2) = 1;
	// panic (20+20+5)/3 = 15 at the first: dppc 2, 2/3 < 2.
	for range 30 {
		got = tick(3, 5)
	}
	if got != 1 {
		t.Fatalf("light: %d, want 1", got)
	}
	// Idle with 1 ready: floor(1/2) = 0 allows zero; the stable average
	// (30-k)×5/30 keeps dspc at 1 for 29 idle ticks, and is 0 at the 30th,
	// 60 s after the last activity (past the 30 s grace period): 0.
	for range 29 {
		got = tick(1, 0)
	}
	if got != 1 {
		t.Fatalf("idle 58 s: %d, want 1 (the stable window still holds activity)", got)
	}
	if got = tick(1, 0); got != 0 {
		t.Fatalf("idle 60 s: %d, want 0", got)
	}
	// A held request at zero activates one replica.
	o := recommend.Observation{Current: 0, Held: 1, Running: math.NaN(), Waiting: math.NaN()}
	now += kpaTick
	if got = k.Decide(now, o); got != 1 {
		t.Fatalf("held at zero: %d, want 1", got)
	}
}
