package replay

import (
	"math/rand/v2"
	"testing"
)

// TestRouteLeastLoaded checks the router's index against a scan of the
// ready replicas (fewest outstanding requests, ties the lowest id) over
// random adds, removals and load changes that cross routeScan both ways.
func TestRouteLeastLoaded(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := &sim{}
	var ready []*replica
	nextID, largest := 0, 0
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op < 2 && len(ready) < 3*routeScan:
			r := &replica{id: nextID, rtIdx: -1}
			nextID++
			r.waiting.n = rng.IntN(4)
			ready = append(ready, r)
			s.routeAdd(r)
		case op < 4 && len(ready) > 0:
			i := rng.IntN(len(ready))
			s.routeRemove(ready[i])
			ready = append(ready[:i], ready[i+1:]...)
		case len(ready) > 0:
			r := ready[rng.IntN(len(ready))]
			r.waiting.n = max(0, r.waiting.n+rng.IntN(3)-1)
			s.routeFix(r)
		}
		largest = max(largest, len(ready))
		var want *replica
		for _, r := range ready {
			if want == nil || r.outstanding() < want.outstanding() ||
				(r.outstanding() == want.outstanding() && r.id < want.id) {
				want = r
			}
		}
		if got := s.leastLoaded(); got != want {
			t.Fatalf("step %d, %d ready: leastLoaded %v, want %v", step, len(ready), id(got), id(want))
		}
	}
	if largest <= routeScan+1 {
		t.Fatalf("at most %d ready: the heap was not exercised", largest)
	}
}

func id(r *replica) int {
	if r == nil {
		return -1
	}
	return r.id
}
