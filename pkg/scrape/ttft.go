package scrape

import (
	"time"

	hist "github.com/infscale/infscale/pkg/histogram"
)

// HistogramIncrease is the TTFT histogram's increase between two scrapes of
// one source (the histogram of the requests whose first token came in the
// interval), the input of a TTFT quantile like PromQL's
// histogram_quantile(q, increase(..._bucket[w])). The reset rule is
// histogram.Increase's: a decrease of any count or a changed
// process_start_time_seconds means the histogram was reset, and the
// increase is cur's histogram. Nil without a baseline (prev nil, another
// source, no time elapsed, another process: OtherProcess), when either page
// lacks the histogram, or when the bucket layouts differ without a restart.
func HistogramIncrease(prev, cur *Page) *Histogram {
	if prev == nil || cur == nil || prev.Source != cur.Source || prev.TTFT == nil || cur.TTFT == nil ||
		prev.TTFT.Family != cur.TTFT.Family || !cur.Time.After(prev.Time) || OtherProcess(prev.Time, prev.ProcessStart, cur.ProcessStart) {
		return nil
	}
	return IncreaseSince(prev.TTFT, cur.TTFT, Restarted(prev.ProcessStart, cur.ProcessStart))
}

// IncreaseSince is cur - prev for two scrapes of one histogram, by
// histogram.Increase's reset rule: restarted (the process restarted in
// between: Restarted), a lower total count or any lower bucket makes cur
// itself the increase. Nil when either is nil or the bucket layouts differ
// without a restart.
func IncreaseSince(prev, cur *Histogram, restarted bool) *Histogram {
	if prev == nil || cur == nil {
		return nil
	}
	_, countReset := hist.CounterIncrease(prev.Count, cur.Count, false)
	buckets, reset, ok := hist.Increase(prev.Buckets, cur.Buckets, restarted || countReset)
	if !ok {
		return nil
	}
	out := &Histogram{Family: cur.Family, Buckets: buckets, Count: cur.Count, Sum: cur.Sum}
	if !reset {
		out.Count -= prev.Count
		out.Sum -= prev.Sum
	}
	return out
}

// Restarted reports whether process_start_time_seconds changed between two
// scrapes of one replica (both known, unix seconds): every counter of the
// page was reset, even one that already climbed past its old value.
func Restarted(prevStart, curStart float64) bool {
	return finite(prevStart) && finite(curStart) && prevStart != curStart
}

// Quantile is the q-quantile (0 <= q <= 1) of h as PromQL's
// histogram_quantile reads classic buckets (histogram.Quantile). NaN when h
// is nil, has fewer than two buckets, lacks the +Inf bucket, has no
// observations (no request in the window: the signal abstains), or q is
// outside [0, 1].
func (h *Histogram) Quantile(q float64) float64 {
	if h == nil {
		return hist.Quantile(q, nil)
	}
	return hist.Quantile(q, h.Buckets)
}

// RestartSlack is how much earlier than the previous scrape a restarted
// process's process_start_time_seconds may read (the replica's clock
// against the scraper's, the time the previous page took to answer) and
// still be a restart (OtherProcess).
const RestartSlack = 30 * time.Second

// OtherProcess reports whether a page whose process started at curStart
// comes from another process than the page read before it from the same
// source (read at prevAt, its process started at prevStart), not from a
// restart of that process: a restart starts after the page before it was
// read, so curStart is before prevStart, or more than RestartSlack before
// prevAt. Several pods behind one URL (a Service, a load balancer) answer
// so, each scrape another pod's page: the difference of their counters is
// no increase (read as a restart, a pod's whole count since it started
// became one interval's: thousands of requests a second), so there is no
// baseline. False when either start is unknown (NaN, absent) or prevAt is
// zero.
func OtherProcess(prevAt time.Time, prevStart, curStart float64) bool {
	if !finite(prevStart) || !finite(curStart) || prevStart == curStart || prevAt.IsZero() {
		return false
	}
	prevSecs := float64(prevAt.UnixNano()) / 1e9
	return curStart < prevStart || curStart < prevSecs-RestartSlack.Seconds()
}
