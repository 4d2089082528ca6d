package recommend

import (
	"testing"
	"time"
)

// TestIsReversal: up at t=0, then down at 299 s reverses it within the
// 300 s window; at 300 s exactly the window has passed: no reversal; two
// ups never reverse; nothing before the first change.
func TestIsReversal(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	up := ScaleChange{At: t0, Direction: 1}
	down := func(s int) ScaleChange { return ScaleChange{At: t0.Add(time.Duration(s) * time.Second), Direction: -1} }
	for _, c := range []struct {
		name       string
		prev, next ScaleChange
		window     time.Duration
		want       bool
	}{
		{"down 299 s after up", up, down(299), ReversalWindow, true},
		{"down 300 s after up", up, down(300), ReversalWindow, false},
		{"up after up", up, ScaleChange{At: t0.Add(time.Second), Direction: 1}, ReversalWindow, false},
		{"no previous change", ScaleChange{}, down(1), ReversalWindow, false},
		{"a compressed window", up, down(13), 12 * time.Second, false},
	} {
		if got := IsReversal(c.prev, c.next, c.window); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if ReversalWindow != 300*time.Second {
		t.Errorf("ReversalWindow %v, want the HPA's default scale-down window 300 s", ReversalWindow)
	}
}
