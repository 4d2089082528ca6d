package replay

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSpanOfMatchesDivision checks the cached period spans of the demand
// and TTFT windows against the division they replace, int64(t/period):
// at random times, and at the edges and the floats on either side of
// them, for periods that are and are not exact in binary.
func TestSpanOfMatchesDivision(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, period := range []float64{1, 15, 0.1, 1.0 / 3, 7.3, 30, 60, 0.25, 13.7} {
		check := func(x float64) {
			id := int64(x / period)
			var sp struct{ lo, hi float64 }
			sp.lo, sp.hi = spanOf(id, period)
			if !(x >= sp.lo && x < sp.hi) {
				t.Fatalf("period %g: %v (index %d) not in its span [%v, %v)", period, x, id, sp.lo, sp.hi)
			}
			// The edges are exact: the floats just outside are in the next periods.
			if below := math.Nextafter(sp.lo, math.Inf(-1)); sp.lo > 0 && int64(below/period) != id-1 {
				t.Fatalf("period %g: %v just below span [%v, %v) of index %d has index %d", period, below, sp.lo, sp.hi, id, int64(below/period))
			}
			if int64(sp.hi/period) != id+1 {
				t.Fatalf("period %g: the end %v of index %d's span has index %d", period, sp.hi, id, int64(sp.hi/period))
			}
			if int64(sp.lo/period) != id {
				t.Fatalf("period %g: the start %v of index %d's span has index %d", period, sp.lo, id, int64(sp.lo/period))
			}
		}
		for range 20000 {
			check(rng.Float64() * 1e7)
			check(rng.Float64() * 100)
		}
		for id := int64(0); id < 5000; id++ {
			edge := float64(id) * period
			for _, x := range []float64{edge, math.Nextafter(edge, 0), math.Nextafter(edge, math.Inf(1))} {
				check(x)
			}
		}
	}
	// By hand: 0.3/0.1 rounds to 2.9999999999999996, so period 0.1's
	// index 3 starts one float above 0.3, at 0.30000000000000004.
	if lo, _ := spanOf(3, 0.1); lo != 0.30000000000000004 || int64(math.Nextafter(lo, 0)/0.1) != 2 {
		t.Fatalf("spanOf(3, 0.1) starts at %v: want 0.30000000000000004 (0.3/0.1 = 2.9999999999999996)", lo)
	}
	if lo, hi := spanOf(-1, 15); lo != hi {
		t.Fatalf("spanOf(-1, 15) = [%v, %v): want empty", lo, hi)
	}
}

// TestBucketIndex checks the bucket lookup of both bucket sets against the
// first bound at least v (Prometheus's le), at random values, each bound
// and the floats beside it, and NaN, negative and huge values (+Inf
// bucket for NaN).
func TestBucketIndex(t *testing.T) {
	for _, b := range []*buckets{ttftBuckets, queueBuckets} {
		linear := func(v float64) int {
			for j, x := range b.bounds {
				if v <= x {
					return j
				}
			}
			return len(b.bounds)
		}
		var vs []float64
		for _, x := range b.bounds {
			vs = append(vs, x, math.Nextafter(x, 0), math.Nextafter(x, math.Inf(1)))
		}
		for e := bucketMinExp - 2; e <= bucketMaxExp+2; e++ {
			x := math.Ldexp(1, e)
			vs = append(vs, x, math.Nextafter(x, 0), math.Nextafter(x, math.Inf(1)))
		}
		rng := rand.New(rand.NewPCG(3, 4))
		for range 100000 {
			vs = append(vs, math.Exp(rng.Float64()*22-10))
		}
		vs = append(vs, 0, math.Copysign(0, -1), -1, math.NaN(), math.Inf(1), math.Inf(-1), 1e300, 5e-324)
		for _, v := range vs {
			if got, want := b.index(v), linear(v); got != want {
				t.Fatalf("index(%v) = %d: want %d (bounds %v)", v, got, want, b.bounds)
			}
		}
	}
	// By hand: 0.3 s is in le=0.5 (index 9), 0.1 in le=0.1 (index 7), 3000 s in +Inf.
	if got := []int{ttftBuckets.index(0.3), ttftBuckets.index(0.1), ttftBuckets.index(3000)}; got[0] != 9 || got[1] != 7 || got[2] != len(ttftBuckets.bounds) {
		t.Fatalf("ttft index(0.3, 0.1, 3000) = %v: want 9, 7, %d", got, len(ttftBuckets.bounds))
	}
	// vLLM's queue time: 0.002 s and 0.3 s in le=0.3 (index 0), 0.31 in le=0.5, 7000 s in le=7680 (20), 8000 in +Inf.
	if got := []int{queueBuckets.index(0.002), queueBuckets.index(0.3), queueBuckets.index(0.31), queueBuckets.index(7000), queueBuckets.index(8000)}; got[0] != 0 || got[1] != 0 || got[2] != 1 || got[3] != 20 || got[4] != 21 {
		t.Fatalf("queue index(0.002, 0.3, 0.31, 7000, 8000) = %v: want 0, 0, 1, 20, 21", got)
	}
}

// TestSpanBelow checks checkSpan's fast bound: the largest t with
// t/p <= MaxPeriods, so the next float above fails the test.
func TestSpanBelow(t *testing.T) {
	for _, p := range []float64{1, 15, 0.1, 1.0 / 3, 7.3, 30, 1e-3, 86400} {
		lim := spanBelow(p)
		if !(lim/p <= MaxPeriods) {
			t.Fatalf("spanBelow(%g) = %v: %v periods, over %d", p, lim, lim/p, MaxPeriods)
		}
		if next := math.Nextafter(lim, math.Inf(1)); next/p <= MaxPeriods {
			t.Fatalf("spanBelow(%g) = %v: %v is within the span too", p, lim, next)
		}
	}
	// By hand: with a 1 s period the bound is MaxPeriods seconds itself.
	if got := spanBelow(1); got != MaxPeriods {
		t.Fatalf("spanBelow(1) = %v: want %d", got, MaxPeriods)
	}
	if got := spanBelow(0); got != 0 {
		t.Fatalf("spanBelow(0) = %v: want 0", got)
	}
}

// TestFifoOrder checks the ring buffer against a plain slice queue through
// growth and wrap-around: pops come out in push order.
func TestFifoOrder(t *testing.T) {
	var q fifo
	var want []pending
	rng := rand.New(rand.NewPCG(5, 6))
	next := int32(0)
	for step := range 20000 {
		if q.n != len(want) {
			t.Fatalf("step %d: %d queued, want %d", step, q.n, len(want))
		}
		if len(want) > 0 && rng.IntN(3) == 0 {
			got := q.pop()
			if got != want[0] {
				t.Fatalf("step %d: popped %+v, want %+v", step, got, want[0])
			}
			want = want[1:]
			continue
		}
		p := pending{arrival: float64(next), prompt: next, output: next + 1}
		next++
		q.push(p)
		want = append(want, p)
	}
}

// TestLeastLoadedKey checks the small fleet's branch-free pick against the
// scan with routeLess on random fleets (ties on the count: the lowest id).
func TestLeastLoadedKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		s := &sim{}
		n := 1 + rng.IntN(routeScan)
		for j := range n {
			r := &replica{id: rng.IntN(50) + 100*j}
			r.waiting.n = rng.IntN(4)
			s.route = append(s.route, r)
		}
		if got, want := s.leastLoaded(), s.leastLoadedScan(); got != want {
			t.Fatalf("leastLoaded picks id %d (%d outstanding), want id %d (%d)", got.id, got.outstanding(), want.id, want.outstanding())
		}
	}
	// By hand: counts 2, 1, 1 with ids 5, 9, 3: the id 3.
	s := &sim{}
	for _, x := range []struct{ id, n int }{{5, 2}, {9, 1}, {3, 1}} {
		r := &replica{id: x.id}
		r.waiting.n = x.n
		s.route = append(s.route, r)
	}
	if got := s.leastLoaded(); got.id != 3 {
		t.Fatalf("leastLoaded picks id %d, want 3", got.id)
	}
}
