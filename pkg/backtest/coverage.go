package backtest

import (
	"slices"
	"time"
)

// Gap is a span without a sample of any series of the success counter.
type Gap struct {
	From time.Time
	To   time.Time
}

// Duration is To - From.
func (g Gap) Duration() time.Duration { return g.To.Sub(g.From) }

// Coverage says how much of the range had data.
type Coverage struct {
	// Fraction is the share of the range outside gaps, 0..1.
	Fraction float64
	// Gaps are the spans longer than Threshold between consecutive samples
	// (any series), and before the first / after the last sample.
	Gaps []Gap
	// Threshold is the longest silence still read as data.
	Threshold time.Duration
	// Interpolated is the number of steps whose arrivals come from a
	// counter increase spread over a gap rather than from samples.
	Interpolated int
	// Requested is the range asked for when the data covered less of it at
	// either end and the range shrank to the data (nil otherwise).
	Requested *Gap
}

// coverage finds the gaps in the union of the series' sample timestamps.
// threshold 0 means automatic: 3 × the median spacing of a series' samples
// (the scrape interval, or the step when it is longer), at least 2 steps.
func coverage(g Grid, series []Series, threshold time.Duration) Coverage {
	var ts []int64
	var spacings []int64
	for _, s := range series {
		for i, p := range s.Points {
			ts = append(ts, p.T.UnixMilli())
			if i > 0 {
				spacings = append(spacings, p.T.Sub(s.Points[i-1].T).Milliseconds())
			}
		}
	}
	if threshold <= 0 {
		threshold = 2 * g.Step
		if len(spacings) > 0 {
			slices.Sort(spacings)
			if m := 3 * time.Duration(spacings[len(spacings)/2]) * time.Millisecond; m > threshold {
				threshold = m
			}
		}
	}
	cov := Coverage{Threshold: threshold}
	start, end := g.Start, g.End()
	if len(ts) == 0 {
		cov.Gaps = []Gap{{start, end}}
		return cov
	}
	slices.Sort(ts)
	ts = slices.Compact(ts)
	prev := start.Add(-g.Step) // a series present at start is covered from start
	if first := time.UnixMilli(ts[0]); first.Sub(start) <= threshold {
		prev = first
	} else {
		cov.Gaps = append(cov.Gaps, Gap{start, first})
		prev = first
	}
	for _, ms := range ts[1:] {
		t := time.UnixMilli(ms)
		if t.Sub(prev) > threshold {
			cov.Gaps = append(cov.Gaps, Gap{prev, t})
		}
		prev = t
	}
	if end.Sub(prev) > threshold {
		cov.Gaps = append(cov.Gaps, Gap{prev, end})
	}
	var missing time.Duration
	for _, gp := range cov.Gaps {
		// Only the part inside the range counts: a gap can begin at a
		// sample before start (timestamp() looks back).
		from, to := gp.From, gp.To
		if from.Before(start) {
			from = start
		}
		if to.After(end) {
			to = end
		}
		if to.After(from) {
			missing += to.Sub(from)
		}
	}
	cov.Fraction = min(max(1-missing.Seconds()/end.Sub(start).Seconds(), 0), 1)
	return cov
}

// inGap marks the grid points (0..N) that fall strictly inside a gap.
func inGap(g Grid, gaps []Gap) []bool {
	out := make([]bool, g.N+1)
	for _, gp := range gaps {
		// Only the points from just before the gap to just after it.
		lo := max(0, int(gp.From.Sub(g.Start)/g.Step))
		hi := min(g.N, int(gp.To.Sub(g.Start)/g.Step)+1)
		for i := lo; i <= hi; i++ {
			t := g.At(i)
			if t.After(gp.From) && t.Before(gp.To) {
				out[i] = true
			}
		}
	}
	return out
}
