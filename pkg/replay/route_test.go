package replay

import (
	"math"
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

// TestEventEarliest checks the event set against a scan of every replica's
// next event (earliest time, ties the lowest id) over random reschedules
// to earlier, later, equal and no times (+Inf: removed) on up to three
// times heapScanMax replicas, so that it turns heap and back many times.
func TestEventEarliest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := &sim{}
	reps := make([]*replica, 3*heapScanMax)
	for i := range reps {
		reps[i] = &replica{id: i, heapIdx: -1, next: math.Inf(1)}
	}
	crossings, was := 0, false
	for step := range 50000 {
		r := reps[rng.IntN(len(reps))]
		var tm float64
		remove := 0.2 // blocks of 500 steps that mostly add, then mostly remove
		if step/500%2 == 1 {
			remove = 0.7
		}
		switch u := rng.Float64(); {
		case u < remove:
			tm = math.Inf(1)
		case u < remove+(1-remove)/4:
			tm = float64(rng.IntN(5)) // many ties
		default:
			tm = rng.Float64() * 10
		}
		s.reschedule(r, tm)
		var want *replica
		pending := 0
		for _, q := range reps {
			if math.IsInf(q.next, 1) {
				continue
			}
			pending++
			if want == nil || q.next < want.next || (q.next == want.next && q.id < want.id) {
				want = q
			}
		}
		if pending != len(s.heap) {
			t.Fatalf("step %d: %d pending events, the set holds %d", step, pending, len(s.heap))
		}
		if want == nil {
			if !math.IsInf(s.nextEvent(), 1) {
				t.Fatalf("step %d: no pending event, nextEvent %v", step, s.nextEvent())
			}
			continue
		}
		if got := s.heap[s.evMin].r; got != want || s.nextEvent() != want.next {
			t.Fatalf("step %d, %d pending: earliest %d at %v, want %d at %v", step, pending, got.id, s.nextEvent(), want.id, want.next)
		}
		if h := len(s.heap) > heapScanMax; h != was {
			crossings++
			was = h
		}
	}
	if crossings < 10 {
		t.Fatalf("the set crossed heapScanMax %d times: both forms were not exercised", crossings)
	}
}
