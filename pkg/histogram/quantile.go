package histogram

import (
	"math"

	"github.com/prometheus/prometheus/promql"
)

// Quantile is the q-quantile (0 <= q <= 1) of the cumulative buckets bs
// (upper bounds increasing, +Inf last) as PromQL's histogram_quantile reads
// classic buckets: promql.BucketQuantile, on a copy (it sorts and merges
// its argument). NaN when q is outside [0, 1] (where BucketQuantile gives
// an infinite latency), bs has fewer than two buckets or no +Inf bucket,
// or holds no observation (a latency signal abstains when no request
// finished).
func Quantile(q float64, bs []Bucket) float64 {
	if !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	pb := make(promql.Buckets, len(bs))
	for i, b := range bs {
		pb[i] = promql.Bucket{UpperBound: b.UpperBound, Count: b.Count}
	}
	v, _, _, _, _, _ := promql.BucketQuantile(q, pb)
	return v
}

// FractionAbove is the share (0..1) of the observations in bs above x,
// interpolating linearly inside the bucket holding x as Quantile does (the
// lowest bucket starts at 0; above the highest finite bound, all of the
// +Inf bucket). NaN without observations or without a +Inf bucket.
func FractionAbove(x float64, bs []Bucket) float64 {
	b, n := counted(bs)
	if b == nil {
		return math.NaN()
	}
	lo, clo := 0.0, 0.0
	for _, c := range b {
		if x <= c.UpperBound {
			if math.IsInf(c.UpperBound, 1) {
				return (n - clo) / n
			}
			below := clo + (c.Count-clo)*(x-lo)/(c.UpperBound-lo)
			return (n - below) / n
		}
		lo, clo = c.UpperBound, c.Count
	}
	return 0
}

// FractionAboveEdge is the share (0..1) of the observations in bs that
// the buckets prove above x: those in the buckets wholly above it, above
// the lowest bucket bound at or above x (none when x is above the highest
// finite bound). At a bucket bound it is FractionAbove; inside a bucket it
// counts none of that bucket, where FractionAbove's linear split guesses
// (vLLM's TTFT bucket (1, 2.5] around a 2 s SLO: a third of it, where
// TTFTs there bunch near 1 s). NaN as FractionAbove.
func FractionAboveEdge(x float64, bs []Bucket) float64 {
	b, n := counted(bs)
	if b == nil {
		return math.NaN()
	}
	for _, c := range b {
		if x <= c.UpperBound {
			return (n - c.Count) / n
		}
	}
	return 0
}

// FractionAboveAtMost is the most the share (0..1) of the observations
// in bs above x can be: all but those in buckets wholly at or below x (up
// to the highest bucket bound at or below x). With FractionAboveEdge it
// bounds FractionAbove's guess; at a bucket bound all three agree. NaN as
// FractionAbove.
func FractionAboveAtMost(x float64, bs []Bucket) float64 {
	b, n := counted(bs)
	if b == nil {
		return math.NaN()
	}
	below := 0.0
	for _, c := range b {
		if c.UpperBound > x {
			break
		}
		below = c.Count
	}
	return (n - below) / n
}

// Straddled is the bucket (lo, hi] of the upper bounds (increasing; a
// last +Inf or none) that holds x strictly inside it, lo < x < hi: lo 0
// below the first bound, hi +Inf above the last finite one. Its
// observations may lie on either side of x. ok is false when x is a bound,
// or not a finite number > 0.
func Straddled(x float64, bounds []float64) (lo, hi float64, ok bool) {
	if !(x > 0) || math.IsInf(x, 1) {
		return 0, 0, false
	}
	for _, ub := range bounds {
		switch {
		case ub == x:
			return 0, 0, false
		case ub > x:
			return lo, ub, true
		}
		lo = ub
	}
	return lo, math.Inf(1), true
}

// counted is bs made monotonic and its observation count n; nil without
// a +Inf bucket or without observations.
func counted(bs []Bucket) (b []Bucket, n float64) {
	if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].UpperBound, 1) {
		return nil, 0
	}
	b = monotonic(bs)
	if n = b[len(b)-1].Count; !(n > 0) {
		return nil, 0
	}
	return b, n
}

// monotonic returns a copy of bs whose counts never decrease with the
// upper bound (increase() extrapolation and float noise can dip a bucket
// below the previous one; PromQL raises it).
func monotonic(bs []Bucket) []Bucket {
	b := make([]Bucket, len(bs))
	copy(b, bs)
	for i := 1; i < len(b); i++ {
		b[i].Count = math.Max(b[i].Count, b[i-1].Count)
	}
	return b
}
