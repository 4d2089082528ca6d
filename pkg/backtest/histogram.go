package backtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/infscale/infscale/pkg/histogram"
)

// Histogram is a classic Prometheus histogram's buckets over some range:
// upper bounds (le) in increasing order, the last +Inf, and the cumulative
// count of observations <= each bound.
type Histogram struct {
	Bounds     []float64
	Cumulative []float64
}

// NewHistogram builds a Histogram from (le label, count) pairs in any
// order. Errors: an le that is not a number, no +Inf bucket, or counts
// that decrease with le by more than rounding (not one histogram).
func NewHistogram(le []string, counts []float64) (*Histogram, error) {
	type b struct{ le, c float64 }
	bs := make([]b, 0, len(le))
	for i, s := range le {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) {
			return nil, fmt.Errorf("bucket le=%q: not a number", s)
		}
		if !(counts[i] >= 0) || math.IsInf(counts[i], 1) {
			return nil, fmt.Errorf("bucket le=%q count %g: want a finite count >= 0", s, counts[i])
		}
		bs = append(bs, b{v, counts[i]})
	}
	slices.SortFunc(bs, func(x, y b) int { return cmpFloat(x.le, y.le) })
	// One bound spelled two ways ("1" and "1.0": Prometheus 3 stores le
	// as a float, 2.x as scraped) is one bucket, summed, as PromQL's
	// histogram_quantile coalesces them.
	for i := 1; i < len(bs); i++ {
		if bs[i].le == bs[i-1].le {
			bs[i-1].c += bs[i].c
			bs = slices.Delete(bs, i, i+1)
			i--
		}
	}
	if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].le, 1) {
		return nil, fmt.Errorf("histogram without a +Inf bucket")
	}
	h := &Histogram{}
	for i, x := range bs {
		c := x.c
		if i > 0 && c < h.Cumulative[i-1] {
			if c < h.Cumulative[i-1]*0.999-1 {
				return nil, fmt.Errorf("bucket le=%g count %g below the previous bucket's %g", x.le, c, h.Cumulative[i-1])
			}
			c = h.Cumulative[i-1] // increase() extrapolation noise
		}
		h.Bounds = append(h.Bounds, x.le)
		h.Cumulative = append(h.Cumulative, c)
	}
	return h, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Count is the number of observations.
func (h *Histogram) Count() float64 { return h.Cumulative[len(h.Cumulative)-1] }

// buckets is h as histogram.Bucket values.
func (h *Histogram) buckets() []histogram.Bucket {
	out := make([]histogram.Bucket, len(h.Bounds))
	for i, ub := range h.Bounds {
		out[i] = histogram.Bucket{UpperBound: ub, Count: h.Cumulative[i]}
	}
	return out
}

// FractionAbove is the share of observations above x, interpolating
// linearly inside the bucket holding x (histogram.FractionAbove). NaN
// without observations.
func (h *Histogram) FractionAbove(x float64) float64 { return histogram.FractionAbove(x, h.buckets()) }

// FractionAboveEdge is the share of observations the buckets prove above
// x: those in buckets wholly above it (histogram.FractionAboveEdge). NaN
// without observations.
func (h *Histogram) FractionAboveEdge(x float64) float64 {
	return histogram.FractionAboveEdge(x, h.buckets())
}

// FractionAboveAtMost is the most the share of observations above x can
// be by the buckets (histogram.FractionAboveAtMost). NaN without
// observations.
func (h *Histogram) FractionAboveAtMost(x float64) float64 {
	return histogram.FractionAboveAtMost(x, h.buckets())
}

// Straddled is the bucket (lo, hi] holding x strictly inside it
// (histogram.Straddled; hi +Inf above the last finite bound). ok is false
// when x is a bound, or not a positive number.
func (h *Histogram) Straddled(x float64) (lo, hi float64, ok bool) {
	return histogram.Straddled(x, h.Bounds)
}

// Quantile is the q-quantile as histogram_quantile reads the buckets
// (histogram.Quantile; the +Inf bucket returns the last finite bound). NaN
// without observations.
func (h *Histogram) Quantile(q float64) float64 { return histogram.Quantile(q, h.buckets()) }

// Tokens is a token-length distribution for the replay: the histogram's
// shape when there is one (a bucket drawn by its share, then a length
// uniform inside it; the +Inf bucket spans (last bound, 2 × last bound]),
// else a fixed Mean.
type Tokens struct {
	Hist *Histogram
	Mean float64
}

// Draw returns a length >= 1 from rng.
func (t Tokens) Draw(rng *rand.Rand) int32 {
	h := t.Hist
	if h == nil || !(h.Count() > 0) {
		return int32(min(max(1, math.Round(t.Mean)), math.MaxInt32))
	}
	u := rng.Float64() * h.Count()
	lo, clo := 0.0, 0.0
	for i, ub := range h.Bounds {
		c := h.Cumulative[i]
		if u < c || i == len(h.Bounds)-1 {
			if math.IsInf(ub, 1) {
				ub = 2 * max(lo, 1)
			}
			v := lo + rng.Float64()*(ub-lo)
			return int32(min(max(1, math.Ceil(v)), math.MaxInt32))
		}
		lo, clo = ub, c
	}
	_ = clo
	return 1
}

// Valid reports whether the distribution can draw lengths.
func (t Tokens) Valid() bool {
	return (t.Hist != nil && t.Hist.Count() > 0) || t.Mean >= 1
}
