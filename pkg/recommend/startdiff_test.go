package recommend

import (
	"math/rand/v2"
	"testing"
)

// startDiffBrute is startDiff's definition: the longest n <= maxKeep such
// that s0's last n elements are next's first n.
func startDiffBrute(s0, next []int) int {
	for p := 0; p < len(s0); p++ {
		n := len(s0) - p
		if n > len(next) || n > maxKeep {
			continue
		}
		same := true
		for i := range n {
			if s0[p+i] != next[i] {
				same = false
				break
			}
		}
		if same {
			return n
		}
	}
	return 0
}

// TestStartDiff: startDiff finds the longest overlap of s0's end and
// next's start (checked against the definition on every pair of short
// lists over two values), and in time linear in the lists: a restored
// state of 20,000 equal recommendations plus Resume's entry took
// 20,000²/2 comparisons a cycle (330,000 of them, the most a 16 MiB state
// file holds, took a 16.5 s serve cycle, over its 15 s interval).
func TestStartDiff(t *testing.T) {
	eq := func(a, b int) bool { return a == b }
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		s0, next := make([]int, r.IntN(9)), make([]int, r.IntN(9))
		for i := range s0 {
			s0[i] = r.IntN(2)
		}
		for i := range next {
			next[i] = r.IntN(2)
		}
		want := startDiffBrute(s0, next)
		k, head := startDiff(nil, s0, next, eq)
		if k != want || len(head) != len(s0)-want {
			t.Fatalf("startDiff(%v, %v) = %d, head %v; want %d", s0, next, k, head, want)
		}
		for i := range head {
			if head[i] != s0[i] {
				t.Fatalf("startDiff(%v, %v): head %v is not s0's first %d", s0, next, head, len(head))
			}
		}
	}
	const n = 20000
	s0 := make([]int, n+1)
	s0[n] = 1 // Resume's entry, at the restart
	next := make([]int, n+2)
	calls := 0
	k, _ := startDiff(nil, s0, next, func(a, b int) bool { calls++; return a == b })
	if k != 0 || calls > 10*n {
		t.Errorf("%d equal entries and one other: k = %d after %d comparisons; want 0 after at most %d", n, k, calls, 10*n)
	}
	// The cap: an overlap longer than maxKeep counts as its last maxKeep.
	long := make([]int, maxKeep+10)
	if k, head := startDiff(nil, long, long, eq); k != maxKeep || len(head) != 10 {
		t.Errorf("overlap of %d: k = %d, head %d; want %d and 10", len(long), k, len(head), maxKeep)
	}
}
