package backtest

import (
	"cmp"
	"math"
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
	// Fraction is the share of the range outside gaps, Gaps and GaugeGaps
	// (their union), 0..1.
	Fraction float64
	// Gaps are the spans longer than Threshold between consecutive samples
	// of the success counter (any series), and before the first / after
	// the last sample.
	Gaps []Gap
	// GaugeGaps are the spans longer than Threshold in which the in-flight
	// gauges (running, and waiting with it) had no sample while the target
	// ran (gaugeGaps), though the counter had: in flight is interpolated
	// there. Fraction leaves them out too.
	GaugeGaps []Gap
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
	cov.Fraction = covered(start, end, cov.Gaps)
	return cov
}

// covered is the share of start..end outside the union of gaps, 0..1:
// only the part of a gap inside the range counts (a counter gap can
// begin at a sample before start: timestamp() looks back), and a span in
// two gaps (a counter's and a gauge's) counts once.
func covered(start, end time.Time, gaps ...[]Gap) float64 {
	// Offsets from start, clipped to the range: durations order with
	// min and max.
	span := end.Sub(start)
	type part struct{ from, to time.Duration }
	var in []part
	for _, gs := range gaps {
		for _, gp := range gs {
			from, to := max(gp.From.Sub(start), 0), min(gp.To.Sub(start), span)
			if to > from {
				in = append(in, part{from, to})
			}
		}
	}
	slices.SortFunc(in, func(a, b part) int { return cmp.Compare(a.from, b.from) })
	var missing, reach time.Duration // reach: the end of the union so far
	for _, p := range in {
		if from := max(p.from, reach); p.to > from {
			missing += p.to - from
		}
		reach = max(reach, p.to)
	}
	return min(max(1-missing.Seconds()/span.Seconds(), 0), 1)
}

// gaugeGaps finds the spans in which the in-flight gauges had no sample:
// runs of grid points whose inFlight is NaN (Prometheus's lookback found
// no running sample), each from the known point before it to the known
// point after it (the range's start or end where there is none), longer
// than threshold, as a counter's gap runs from sample to sample. A point
// at 0 replicas (the replicas query known and 0) is known: no pod runs,
// nothing is in flight. Without in-flight values at all (len 0) there is
// nothing to judge: none.
func gaugeGaps(g Grid, inFlight, replicas []float64, threshold time.Duration) []Gap {
	if len(inFlight) == 0 {
		return nil
	}
	known := func(i int) bool {
		return (i < len(inFlight) && !math.IsNaN(inFlight[i])) || (i < len(replicas) && replicas[i] == 0)
	}
	var gaps []Gap
	last := -1 // the last known point; -1: none yet
	for i := 0; i <= g.N+1; i++ {
		if i <= g.N && !known(i) {
			continue
		}
		if i-last > 1 { // points last+1 .. i-1 unknown
			from, to := g.Start, g.End()
			if last >= 0 {
				from = g.At(last)
			}
			if i <= g.N {
				to = g.At(i)
			}
			if to.Sub(from) > threshold {
				gaps = append(gaps, Gap{from, to})
			}
		}
		last = i
	}
	return gaps
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
