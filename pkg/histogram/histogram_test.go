package histogram

import (
	"math"
	"testing"
)

var inf = math.Inf(1)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.IsNaN(want) {
		if !math.IsNaN(got) {
			t.Errorf("%s = %v, want NaN", what, got)
		}
		return
	}
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestCounterIncrease: Prometheus's reset rule (docs of rate(): "breaks in
// monotonicity such as counter resets due to target restarts are
// automatically adjusted for"): 100 -> 150 is +50; 150 -> 40 is a reset,
// +40; a known restart makes 100 -> 130 read +130, not +30.
func TestCounterIncrease(t *testing.T) {
	for _, c := range []struct {
		prev, cur float64
		restarted bool
		inc       float64
		reset     bool
	}{
		{100, 150, false, 50, false},
		{150, 150, false, 0, false},
		{150, 40, false, 40, true},
		{100, 130, true, 130, true},
		{0, 0, false, 0, false},
	} {
		inc, reset := CounterIncrease(c.prev, c.cur, c.restarted)
		if inc != c.inc || reset != c.reset {
			t.Errorf("CounterIncrease(%v, %v, %v) = %v, %v; want %v, %v", c.prev, c.cur, c.restarted, inc, reset, c.inc, c.reset)
		}
	}
}

func hist(counts ...float64) []Bucket {
	bounds := []float64{0.1, 0.5, inf}
	out := make([]Bucket, len(counts))
	for i, c := range counts {
		out[i] = Bucket{bounds[i], c}
	}
	return out
}

// TestIncrease: (10, 10, 10) -> (50, 100, 110) grew by (40, 90, 100); a
// bucket lower than before, or a known restart, makes the new histogram
// the increase; another layout without a restart has none.
func TestIncrease(t *testing.T) {
	inc, reset, ok := Increase(hist(10, 10, 10), hist(50, 100, 110), false)
	if !ok || reset || inc[0].Count != 40 || inc[1].Count != 90 || inc[2].Count != 100 {
		t.Errorf("plain increase %v reset %v ok %v, want 40, 90, 100", inc, reset, ok)
	}
	inc, reset, ok = Increase(hist(50, 100, 110), hist(5, 100, 120), false)
	if !ok || !reset || inc[0].Count != 5 || inc[2].Count != 120 {
		t.Errorf("a bucket went down: %v reset %v ok %v, want the new histogram", inc, reset, ok)
	}
	inc, reset, ok = Increase(hist(10, 10, 10), hist(50, 100, 110), true)
	if !ok || !reset || inc[0].Count != 50 {
		t.Errorf("restart: %v reset %v ok %v, want the new histogram", inc, reset, ok)
	}
	other := []Bucket{{1, 10}, {inf, 20}}
	if _, _, ok := Increase(hist(10, 10, 10), other, false); ok {
		t.Error("another layout without a restart must have no increase")
	}
	if sum, ok := Add(hist(1, 2, 3), other); ok || sum[2].Count != 3 {
		t.Errorf("Add across layouts: %v %v, want acc unchanged, false", sum, ok)
	}
	if sum, ok := Add(hist(1, 2, 3), hist(1, 1, 1)); !ok || sum[2].Count != 4 {
		t.Errorf("Add: %v %v, want (2, 3, 4)", sum, ok)
	}
}

// TestQuantile against hand interpolation: increases 40, 90, 100 over
// (0, 0.1], (0.1, 0.5], (0.5, +Inf]: p95 has rank 95 in the +Inf bucket,
// read as the highest finite bound 0.5; p50 rank 50 in (0.1, 0.5]:
// 0.1 + 0.4 × (50-40)/50 = 0.18; p20 rank 20 in (0, 0.1]: 0.1 × 20/40 =
// 0.05. No observation, no +Inf bucket, one bucket, q outside [0, 1]: NaN.
func TestQuantile(t *testing.T) {
	h := hist(40, 90, 100)
	near(t, "p95", Quantile(0.95, h), 0.5)
	near(t, "p50", Quantile(0.5, h), 0.18)
	near(t, "p20", Quantile(0.2, h), 0.05)
	near(t, "p100", Quantile(1, h), 0.5)
	near(t, "empty", Quantile(0.5, hist(0, 0, 0)), math.NaN())
	near(t, "no +Inf", Quantile(0.5, []Bucket{{0.1, 1}, {0.5, 2}}), math.NaN())
	near(t, "one bucket", Quantile(0.5, []Bucket{{inf, 2}}), math.NaN())
	near(t, "q > 1", Quantile(1.5, h), math.NaN())
	near(t, "q NaN", Quantile(math.NaN(), h), math.NaN())
	// A dip (extrapolation noise) is raised to the bucket below: (40, 38,
	// 100) reads as (40, 40, 100): p50 rank 50 is in +Inf: 0.5.
	dip := hist(40, 38, 100)
	near(t, "dip", Quantile(0.5, dip), 0.5)
	if dip[1].Count != 38 {
		t.Errorf("Quantile changed its argument: %v, want (40, 38, 100)", dip)
	}
}

// TestFractionAbove: 100 observations, 40 <= 0.1, 90 <= 0.5: above 0.3,
// 0.3 lies halfway through (0.1, 0.5], below = 40 + 50/2 = 65: 0.35; above
// 0.5, the +Inf bucket's 10: 0.1; above 2 (past the last finite bound),
// still 0.1; above 0.05, below = 20: 0.8.
func TestFractionAbove(t *testing.T) {
	h := hist(40, 90, 100)
	near(t, "above 0.3", FractionAbove(0.3, h), 0.35)
	near(t, "above 0.5", FractionAbove(0.5, h), 0.1)
	near(t, "above 2", FractionAbove(2, h), 0.1)
	near(t, "above 0.05", FractionAbove(0.05, h), 0.8)
	near(t, "empty", FractionAbove(1, hist(0, 0, 0)), math.NaN())
}

// TestFractionAboveEdge: the same 100 observations (40 <= 0.1, 90 <=
// 0.5): above 0.3, only the +Inf bucket is wholly above it: 0.1 (not
// FractionAbove's 0.35); at the bound 0.5: 0.1, and at 0.1: 0.6, as
// FractionAbove; above 0.05: the buckets above 0.1, 0.6; above 2 (inside
// +Inf): none proven, 0.
func TestFractionAboveEdge(t *testing.T) {
	h := hist(40, 90, 100)
	near(t, "above 0.3", FractionAboveEdge(0.3, h), 0.1)
	near(t, "above 0.5", FractionAboveEdge(0.5, h), 0.1)
	near(t, "above 0.1", FractionAboveEdge(0.1, h), 0.6)
	near(t, "above 0.05", FractionAboveEdge(0.05, h), 0.6)
	near(t, "above 2", FractionAboveEdge(2, h), 0)
	near(t, "empty", FractionAboveEdge(1, hist(0, 0, 0)), math.NaN())
}

// TestFractionAboveAtMost: the same 100 observations (40 <= 0.1, 90 <=
// 0.5): above 0.3, all but the 40 wholly at or below 0.1 may be: 0.6 (the
// edge's 0.1 and the linear 0.35 lie between); at the bounds 0.5 and 0.1:
// 0.1 and 0.6, as FractionAbove; above 0.05: all 100 may be, 1; above 2
// (inside +Inf): the +Inf bucket's 10, 0.1.
func TestFractionAboveAtMost(t *testing.T) {
	h := hist(40, 90, 100)
	near(t, "above 0.3", FractionAboveAtMost(0.3, h), 0.6)
	near(t, "above 0.5", FractionAboveAtMost(0.5, h), 0.1)
	near(t, "above 0.1", FractionAboveAtMost(0.1, h), 0.6)
	near(t, "above 0.05", FractionAboveAtMost(0.05, h), 1)
	near(t, "above 2", FractionAboveAtMost(2, h), 0.1)
	near(t, "empty", FractionAboveAtMost(1, hist(0, 0, 0)), math.NaN())
}

// TestMerge: a replica of an old server version ({0.5, 1, +Inf}: 10 requests
// within 0.5 s) beside one of a new version with an extra bound ({0.5, 1,
// 20, +Inf}: 10 requests in (1, 20]). The old one counts at 20 its count at
// 1 (10, all of its observations: its +Inf holds 10 too), so the sum is
// 0.5: 10 + 0, 1: 10 + 0, 20: 10 + 10, +Inf: 10 + 10; its p95 (rank 19 of
// 20, in (1, 20] holding 10 above 10) is 1 + 19 × 9/10 = 18.1 s. Add gave
// up on the second (the old one's p95, 0.475 s, stood for both), PromQL's
// sum by (le) counts 20: 10 only. Bounds on one side only (0.1, 2) take the
// other's count below them (0 below its first); equal layouts are Add.
func TestMerge(t *testing.T) {
	old := []Bucket{{0.5, 10}, {1, 10}, {inf, 10}}
	cur := []Bucket{{0.5, 0}, {1, 0}, {20, 10}, {inf, 10}}
	got := Merge(old, cur)
	want := []Bucket{{0.5, 10}, {1, 10}, {20, 20}, {inf, 20}}
	if len(got) != len(want) {
		t.Fatalf("Merge = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Merge = %v, want %v", got, want)
			break
		}
	}
	near(t, "merged p95", Quantile(0.95, got), 18.1)
	if m := Merge(got, nil); len(m) != 4 || m[2].Count != 20 {
		t.Errorf("Merge with nothing = %v, want the first", m)
	}

	// a: {0.1: 2, 1: 5, +Inf: 6}, b: {0.5: 3, 2: 4, +Inf: 4}:
	// 0.1: 2 + 0, 0.5: 2 + 3, 1: 5 + 3, 2: 5 + 4, +Inf: 6 + 4.
	got = Merge([]Bucket{{0.1, 2}, {1, 5}, {inf, 6}}, []Bucket{{0.5, 3}, {2, 4}, {inf, 4}})
	want = []Bucket{{0.1, 2}, {0.5, 5}, {1, 8}, {2, 9}, {inf, 10}}
	if len(got) != len(want) {
		t.Fatalf("Merge = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Merge = %v, want %v", got, want)
			break
		}
	}
	sum, _ := Add(hist(1, 2, 3), hist(1, 1, 1))
	if m := Merge(hist(1, 2, 3), hist(1, 1, 1)); len(m) != 3 || m[0] != sum[0] || m[1] != sum[1] || m[2] != sum[2] {
		t.Errorf("Merge of equal layouts = %v, want Add's %v", m, sum)
	}
	if m := Merge(nil, old); len(m) != 3 || &m[0] == &old[0] || m[0] != old[0] {
		t.Errorf("Merge(nil, b) = %v, want a copy of b", m)
	}
}
