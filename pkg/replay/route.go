package replay

import (
	"math"
	"math/bits"
)

// The router's index: the ready replicas in a min-heap by (outstanding
// requests, id), so that routing an arrival to the least loaded ready
// replica (ties: the lowest id) costs O(log replicas), not a scan of the
// fleet per arrival (which made a burst of n arrivals onto a fleet sized
// for it quadratic in n). Up to routeScan ready replicas the index is
// kept unordered and leastLoaded scans it: the same choice, without a
// sift on every enqueue and phase end of a small fleet.

// routeScan is the fleet size up to which leastLoaded scans (less than
// 16: its key holds the index in 4 bits).
const routeScan = 8

var _ = [16 - routeScan - 1]struct{}{} // routeScan < 16

// routeHeap reports whether s.route is kept in heap order.
func (s *sim) routeHeap() bool { return len(s.route) > routeScan }

func (s *sim) routeLess(a, b *replica) bool {
	oa, ob := a.outstanding(), b.outstanding()
	return oa < ob || (oa == ob && a.id < b.id)
}

func (s *sim) routeSwap(i, j int) {
	h := s.route
	h[i], h[j] = h[j], h[i]
	h[i].rtIdx, h[j].rtIdx = i, j
}

func (s *sim) routeUp(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.routeLess(s.route[i], s.route[p]) {
			return
		}
		s.routeSwap(i, p)
		i = p
	}
}

func (s *sim) routeDown(i int) {
	n := len(s.route)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && s.routeLess(s.route[r], s.route[l]) {
			m = r
		}
		if !s.routeLess(s.route[m], s.route[i]) {
			return
		}
		s.routeSwap(i, m)
		i = m
	}
}

// routeAdd indexes a replica that became ready.
func (s *sim) routeAdd(r *replica) {
	r.rtIdx = len(s.route)
	s.route = append(s.route, r)
	switch {
	case len(s.route) == routeScan+1: // order the index now it is large
		for i := len(s.route)/2 - 1; i >= 0; i-- {
			s.routeDown(i)
		}
	case s.routeHeap():
		s.routeUp(r.rtIdx)
	}
}

// routeRemove drops a replica that stops receiving arrivals (draining).
func (s *sim) routeRemove(r *replica) {
	i := r.rtIdx
	if i < 0 {
		return
	}
	last := len(s.route) - 1
	s.routeSwap(i, last)
	s.route = s.route[:last]
	r.rtIdx = -1
	if i < last && s.routeHeap() {
		s.routeDown(i)
		s.routeUp(i)
	}
}

// routeFix restores the order after r's outstanding count changed.
// It is small enough to inline: a small fleet's index needs no fixing.
func (s *sim) routeFix(r *replica) {
	if r.rtIdx >= 0 && s.routeHeap() {
		s.routeResift(r.rtIdx)
	}
}

func (s *sim) routeResift(i int) {
	s.routeDown(i)
	s.routeUp(i)
}

// leastLoaded is the ready replica with the fewest outstanding requests
// (ties: the lowest id), nil when none is ready.
func (s *sim) leastLoaded() *replica {
	if len(s.route) == 0 {
		return nil
	}
	if !s.routeHeap() {
		// routeLess as one key, outstanding<<40 | id<<4 | index, whose
		// minimum is taken with masks, not a branch (the counts are
		// random: a branch on them mispredicts); the index rides in the low
		// bits (routeScan < 16; ids are unique, so it never decides). A
		// count of 2^24 or an id of 2^36 and more takes the scan with
		// routeLess itself.
		best := uint64(math.MaxUint64)
		for i, r := range s.route {
			o, id := uint64(r.outstanding()), uint64(r.id)
			if o>>24|id>>36 != 0 {
				return s.leastLoadedScan()
			}
			k := o<<40 | id<<4 | uint64(i)
			_, lt := bits.Sub64(k, best, 0) // 1 when k < best
			best ^= (best ^ k) & -lt
		}
		return s.route[best&15]
	}
	return s.route[0]
}

// leastLoadedScan is leastLoaded's scan with routeLess itself.
func (s *sim) leastLoadedScan() *replica {
	best := s.route[0]
	for _, r := range s.route[1:] {
		if s.routeLess(r, best) {
			best = r
		}
	}
	return best
}
