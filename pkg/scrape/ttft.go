package scrape

import (
	"math"
	"sort"
)

// HistogramIncrease is the TTFT histogram's increase between two scrapes of
// one source (the histogram of the requests whose first token came in the
// interval), the input of a TTFT quantile like PromQL's
// histogram_quantile(q, increase(..._bucket[w])). A decrease of any count or
// a changed process_start_time_seconds means the histogram was reset: the
// increase is cur's histogram. Nil without a baseline (prev nil, another
// source, no time elapsed), when either page lacks the histogram, or when
// the bucket layouts differ without a restart.
func HistogramIncrease(prev, cur *Page) *Histogram {
	if prev == nil || cur == nil || prev.Source != cur.Source || prev.TTFT == nil || cur.TTFT == nil ||
		prev.TTFT.Family != cur.TTFT.Family || !cur.Time.After(prev.Time) {
		return nil
	}
	p, c := prev.TTFT, cur.TTFT
	restarted := finite(prev.ProcessStart) && finite(cur.ProcessStart) && prev.ProcessStart != cur.ProcessStart
	reset := restarted || c.Count < p.Count
	if !reset {
		if len(p.Buckets) != len(c.Buckets) {
			return nil
		}
		for i := range c.Buckets {
			if p.Buckets[i].UpperBound != c.Buckets[i].UpperBound {
				return nil
			}
			reset = reset || c.Buckets[i].Count < p.Buckets[i].Count
		}
	}
	out := &Histogram{Family: c.Family, Buckets: make([]Bucket, len(c.Buckets)), Count: c.Count, Sum: c.Sum}
	copy(out.Buckets, c.Buckets)
	if reset {
		return out
	}
	for i := range out.Buckets {
		out.Buckets[i].Count -= p.Buckets[i].Count
	}
	out.Count -= p.Count
	out.Sum -= p.Sum
	return out
}

// MergeHistograms adds histograms of several replicas bucket by bucket (by
// upper bound); nil histograms are skipped; nil when none is left.
func MergeHistograms(hs ...*Histogram) *Histogram {
	var out *Histogram
	byLE := map[float64]float64{}
	for _, h := range hs {
		if h == nil {
			continue
		}
		if out == nil {
			out = &Histogram{Family: h.Family}
		}
		for _, b := range h.Buckets {
			byLE[b.UpperBound] += b.Count
		}
		out.Count = addNaN(out.Count, h.Count)
		out.Sum = addNaN(out.Sum, h.Sum)
	}
	if out == nil {
		return nil
	}
	for le, c := range byLE {
		out.Buckets = append(out.Buckets, Bucket{UpperBound: le, Count: c})
	}
	sort.Slice(out.Buckets, func(i, j int) bool { return out.Buckets[i].UpperBound < out.Buckets[j].UpperBound })
	return out
}

// Quantile is the q-quantile (0 <= q <= 1) of h, interpolated linearly
// within a bucket exactly as Prometheus's histogram_quantile over classic
// buckets (promql.BucketQuantile): a quantile in the +Inf bucket returns the
// highest finite upper bound; the lowest bucket starts at 0 when its upper
// bound is positive. NaN when h is nil, has fewer than two buckets, lacks
// the +Inf bucket, has no observations (no request in the window: the
// signal abstains), or q is outside [0, 1]. Counts are made monotonic first.
func (h *Histogram) Quantile(q float64) float64 {
	if h == nil || !(q >= 0 && q <= 1) || len(h.Buckets) < 2 || !math.IsInf(h.Buckets[len(h.Buckets)-1].UpperBound, 1) {
		return math.NaN()
	}
	b := make([]Bucket, len(h.Buckets))
	copy(b, h.Buckets)
	for i := 1; i < len(b); i++ {
		b[i].Count = math.Max(b[i].Count, b[i-1].Count)
	}
	total := b[len(b)-1].Count
	if !(total > 0) {
		return math.NaN()
	}
	rank := q * total
	i := sort.Search(len(b)-1, func(i int) bool { return b[i].Count >= rank })
	if i == len(b)-1 {
		return b[len(b)-2].UpperBound
	}
	if i == 0 && b[0].UpperBound <= 0 {
		return b[0].UpperBound
	}
	start, end, count := 0.0, b[i].UpperBound, b[i].Count
	if i > 0 {
		start = b[i-1].UpperBound
		count -= b[i-1].Count
		rank -= b[i-1].Count
	}
	return start + (end-start)*(rank/count)
}
