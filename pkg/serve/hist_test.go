package serve

import (
	"math"

	"github.com/infscale/infscale/pkg/scrape"
)

// mkHist is a histogram with cumulative counts at le 0.1, 0.5, +Inf.
func mkHist(a, b, c float64) *scrape.Histogram {
	return &scrape.Histogram{Buckets: []scrape.Bucket{{UpperBound: 0.1, Count: a}, {UpperBound: 0.5, Count: b}, {UpperBound: math.Inf(1), Count: c}}, Count: c}
}
