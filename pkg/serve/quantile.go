package serve

import (
	"math"

	"github.com/infscale/infscale/pkg/scrape"
)

// histogramQuantile is PromQL's histogram_quantile over the increase of a
// classic histogram between two scrapes (prev, cur): linear interpolation
// inside the bucket holding rank q × count, the lowest bucket starting at 0
// when its bound is positive, the +Inf bucket answered by the highest finite
// bound. NaN when no observation happened between the scrapes, when the
// buckets differ or when a counter went down (a restart).
func histogramQuantile(q float64, prev, cur *scrape.Histogram) float64 {
	if cur == nil || len(cur.Buckets) == 0 || q < 0 || q > 1 {
		return math.NaN()
	}
	inc := make([]scrape.Bucket, len(cur.Buckets))
	for i, b := range cur.Buckets {
		inc[i] = b
		if prev != nil {
			if len(prev.Buckets) != len(cur.Buckets) || prev.Buckets[i].UpperBound != b.UpperBound || prev.Buckets[i].Count > b.Count {
				return math.NaN()
			}
			inc[i].Count = b.Count - prev.Buckets[i].Count
		}
	}
	last := inc[len(inc)-1]
	if !math.IsInf(last.UpperBound, 1) || last.Count <= 0 {
		return math.NaN()
	}
	rank := q * last.Count
	for i, b := range inc {
		if b.Count < rank {
			continue
		}
		if math.IsInf(b.UpperBound, 1) {
			if i == 0 {
				return math.NaN()
			}
			return inc[i-1].UpperBound
		}
		lower, below := 0.0, 0.0
		if i > 0 {
			lower, below = inc[i-1].UpperBound, inc[i-1].Count
		} else if b.UpperBound <= 0 {
			return b.UpperBound
		}
		if b.Count == below {
			return b.UpperBound
		}
		return lower + (b.UpperBound-lower)*(rank-below)/(b.Count-below)
	}
	return math.NaN()
}
