package backtest

import (
	"math"
	"slices"
	"testing"
)

// TestNewHistogramSameBoundTwoSpellings: Prometheus 3 stores a classic
// histogram's le as a float ("1.0") where 2.x stored it as scraped ("1"),
// so over a history spanning the upgrade sum by (le) answers both
// spellings of one bound. They are one bucket and add up, as PromQL's
// histogram_quantile coalesces buckets of the same bound; before, the
// second read as a bucket below the first ("bucket le=1 count 5 below the
// previous bucket's 10") and the whole history was refused. Before the
// upgrade 40 requests (10 <= 1 s, 30 <= 2.5 s), after it 20 (5, 15): 2.5
// and +Inf are spelled alike and came summed.
func TestNewHistogramSameBoundTwoSpellings(t *testing.T) {
	h, err := NewHistogram([]string{"1", "2.5", "+Inf", "1.0"}, []float64{10, 45, 60, 5})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 2.5, math.Inf(1)}; !slices.Equal(h.Bounds, want) {
		t.Errorf("bounds %v, want %v", h.Bounds, want)
	}
	if want := []float64{15, 45, 60}; !slices.Equal(h.Cumulative, want) {
		t.Errorf("cumulative %v, want %v", h.Cumulative, want)
	}
}
