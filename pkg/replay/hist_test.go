package replay

import (
	"math"
	"testing"
)

func TestHistQuantile(t *testing.T) {
	var h hist
	// 1..1000 ms: the p50 is the 500th value, 0.5 s; the p95 the 950th, 0.95 s.
	for i := 1; i <= 1000; i++ {
		h.add(float64(i) / 1000)
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 0.5}, {0.95, 0.95}, {0.001, 0.001}, {1, 1}} {
		if got := h.quantile(c.q); math.Abs(got-c.want)/c.want > 0.002 {
			t.Errorf("q%v = %v, want %v within 0.2%%", c.q, got, c.want)
		}
	}
	var e hist
	if !math.IsNaN(e.quantile(0.5)) {
		t.Error("empty histogram: want NaN")
	}
}

func TestWindowQuantile(t *testing.T) {
	w := newWindow(ttftBuckets, 60, 15)
	// Nine TTFTs of 0.03 s (bucket (0.02, 0.04]) and one of 3 s (bucket
	// (2.5, 5]) at 10 s. histogram_quantile(0.5): rank 5 in the first
	// bucket of 9: 0.02 + 0.02 × 5/9 = 0.031111; (0.95): rank 9.5, in
	// (2.5, 5] with 9 below: 2.5 + 2.5 × 0.5/1 = 3.75.
	for range 9 {
		w.add(10, 0.03)
	}
	w.add(10, 3)
	if got := w.quantile(14, 0.5); math.Abs(got-0.031111) > 1e-6 {
		t.Errorf("p50 %v, want 0.031111", got)
	}
	if got := w.quantile(14, 0.95); math.Abs(got-3.75) > 1e-9 {
		t.Errorf("p95 %v, want 3.75", got)
	}
	// 80 s later (window 60 s) they have left the window: unknown.
	if got := w.quantile(90, 0.95); !math.IsNaN(got) {
		t.Errorf("after the window: %v, want NaN", got)
	}
}

// TestQueueWindowQuantile: queue times in vLLM's request_queue_time
// buckets read as production reads them. Twenty waits of 2 ms, all in
// (0, 0.3]: histogram_quantile(0.95) interpolates from 0, rank 19 of 20:
// 0.3 × 19/20 = 0.285 s, whatever the waits were. Add one of 0.45 s
// ((0.3, 0.5]): rank 19.95 of 21 lies in the first bucket (20 at or
// below 0.3): 0.3 × 19.95/20 = 0.29925.
func TestQueueWindowQuantile(t *testing.T) {
	w := newWindow(queueBuckets, 60, 15)
	for range 20 {
		w.add(10, 0.002)
	}
	if got := w.quantile(14, 0.95); math.Abs(got-0.285) > 1e-12 {
		t.Errorf("p95 %v, want 0.285", got)
	}
	w.add(11, 0.45)
	if got := w.quantile(14, 0.95); math.Abs(got-0.29925) > 1e-12 {
		t.Errorf("p95 %v, want 0.29925", got)
	}
}
