package backtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/infscale/infscale/pkg/promql"
)

// Options tune Reconstruct. The zero value is usable.
type Options struct {
	// GapThreshold is the longest silence between samples still read as
	// data; 0 means automatic (3 × the scrape spacing, at least 2 steps).
	GapThreshold time.Duration
}

// Workload is the reconstructed traffic and what actually ran.
type Workload struct {
	Grid Grid
	// Arrivals[j] is the requests that arrived in step j (1..N), expected
	// counts (not integers); Arrivals[0] is 0.
	Arrivals []float64
	// Requests is the sum of Arrivals.
	Requests float64
	// Coverage reports the gaps.
	Coverage Coverage
	// Prompt and Output are the token-length distributions.
	Prompt, Output Tokens
	// Replicas is the replica count per grid point, the last known value
	// held across gaps (the first known one before it); nil without data.
	Replicas []float64
	// TTFT and TTFTHourly are the observed TTFT (History's).
	TTFT       *Histogram
	TTFTHourly []HourValue
}

// ErrNoTraffic means the success counter had no series in the range,
// series that never increased (no request completed: the in-flight
// gauges' changes alone are no traffic), or completions that were all
// requests in flight at the range's start.
var ErrNoTraffic = errors.New("no request completed in the range")

// ErrTooManyRequests is Reconstruct's error for a range whose arrivals
// total more than MaxReconstructed requests. The caller says how to
// shorten its range.
var ErrTooManyRequests = errors.New("too many requests to replay")

// MaxReconstructed bounds the requests a range's history reconstructs:
// 2^33 (8,589,934,592), a week at 14,000 req/s on average, beyond any one
// Deployment's traffic. A replay runs 2 to 3 million requests a second on
// one core, so each policy's replay of that many takes an hour or more (a
// backtest replays about seven, tune hundreds of windows and a dozen
// whole ranges); a week at 444 req/s, 2.7e8 requests, takes about two
// minutes a policy and is replayed.
const MaxReconstructed = 1 << 33

// MaxArrivalRate bounds the reconstructed arrival rate of a step, in
// requests per second. One target serving more is not plausible (a large
// vLLM fleet serves hundreds); a step above it means the series are not
// what the server profile says (a counter that jumped, a gauge of another
// unit), and replaying it would draw that many requests into memory.
const MaxArrivalRate = 100_000.0

// Reconstruct rebuilds the arrival process from h (see the package doc).
// Errors: ErrNoTraffic; token distributions that cannot be derived.
func Reconstruct(h History, opts Options) (Workload, error) {
	g := h.Grid
	series := make([]Series, len(h.Success))
	for i, s := range h.Success {
		series[i] = Series{Labels: s.Labels, Points: distinct(finite(s.Points))}
	}
	w := Workload{Grid: g, TTFT: h.TTFT, TTFTHourly: h.TTFTHourly}
	w.Coverage = coverage(g, series, opts.GapThreshold)
	if len(series) == 0 {
		return w, fmt.Errorf("%w: the success counter has no samples", ErrNoTraffic)
	}
	// History that starts after the range's start or ends before its end
	// (a new target, a Prometheus with less retention than asked): the
	// range shrinks to the data, so that nothing is invented before the
	// first sample or after the last one.
	if i0, i1 := trimmed(g, w.Coverage); i0 > 0 || i1 < g.N {
		w.Coverage.Requested = &Gap{From: g.Start, To: g.End()}
		g = Grid{Start: g.At(i0), Step: g.Step, N: i1 - i0}
		h.InFlight = sliceOr(h.InFlight, i0, i1)
		h.Replicas = sliceOr(h.Replicas, i0, i1)
		w.Grid = g
		req := w.Coverage.Requested
		w.Coverage = coverage(g, series, opts.GapThreshold)
		w.Coverage.Requested = req
	}
	// The in-flight gauges' own gaps (the counter sampled, running and
	// waiting not: a scrape job or a store that kept the one and lost the
	// other) count against the coverage too; the arrivals across them use
	// interpolated in-flight values, as across a counter's gap.
	w.Coverage.GaugeGaps = gaugeGaps(g, h.InFlight, h.Replicas, w.Coverage.Threshold)
	w.Coverage.Fraction = covered(g.Start, g.End(), w.Coverage.Gaps, w.Coverage.GaugeGaps)
	inc := counterIncrease(g, series, w.Coverage)
	// No completion at all: the arrivals would be the in-flight gauges'
	// changes alone, a trace of garbage (a NaN or flat counter beside
	// moving gauges), not the traffic.
	completed := 0.0
	for _, v := range inc[1:] {
		completed += v
	}
	if !(completed >= 0.5) {
		return w, fmt.Errorf("%w: the success counter has %d series, none increases", ErrNoTraffic, len(series))
	}
	gap := inGap(g, w.Coverage.Gaps)
	gaugeGap := inGap(g, w.Coverage.GaugeGaps)
	q := fill(h.InFlight, gap, 0)
	w.Arrivals = make([]float64, g.N+1)
	carry := 0.0
	st := g.Step.Seconds()
	for j := 1; j <= g.N; j++ {
		v := inc[j] + q[j] - q[j-1] + carry
		if !(v/st <= MaxArrivalRate) { // also NaN and +Inf
			return w, fmt.Errorf("step %s..%s: %.4g requests arrived (completions %.4g, in flight %.4g -> %.4g), %.4g req/s, above the %g req/s one target can plausibly serve: the success counter or the in-flight gauges are not request counts (check the selector and the server profile)",
				g.At(j-1).Format(time.RFC3339), g.At(j).Format(time.RFC3339), v, inc[j], q[j-1], q[j], v/st, MaxArrivalRate)
		}
		carry = 0
		if v < 0 {
			carry, v = v, 0
		}
		w.Arrivals[j] = v
		w.Requests += v
		if gap[j] || gap[j-1] || gaugeGap[j] || gaugeGap[j-1] {
			w.Coverage.Interpolated++
		}
	}
	if w.Requests < 0.5 {
		return w, fmt.Errorf("%w: the success counter's %.0f completions are the requests in flight at the start, none arrived", ErrNoTraffic, completed)
	}
	if w.Requests > MaxReconstructed {
		// Each step's rate is plausible, but replaying them all would take
		// hours per policy. The caller names its range's knob
		// (--start/--end, tune.history).
		return w, fmt.Errorf("%w: the range's reconstructed arrivals total %.4g requests, more than the %d (2^33) a replay of history takes (each policy's replay would take an hour or more)", ErrTooManyRequests, w.Requests, int64(MaxReconstructed))
	}
	w.Prompt = Tokens{Hist: h.Prompt, Mean: h.PromptMean}
	w.Output = Tokens{Hist: h.Output, Mean: h.OutputMean}
	if h.Prompt != nil {
		w.Prompt.Mean = histMean(h.Prompt, h.PromptMean)
	}
	if h.Output != nil {
		w.Output.Mean = histMean(h.Output, h.OutputMean)
	}
	if !w.Prompt.Valid() || !w.Output.Valid() {
		return w, noLengths(w.Prompt.Valid(), w.Output.Valid())
	}
	if h.Replicas != nil {
		w.Replicas = hold(h.Replicas)
	}
	return w, nil
}

// histMean prefers the counters' mean; without it, the midpoints' mean.
func histMean(h *Histogram, counters float64) float64 {
	if counters > 0 {
		return counters
	}
	var sum, lo, clo float64
	for i, ub := range h.Bounds {
		mid := ub
		if math.IsInf(ub, 1) {
			mid = 1.5 * lo
		} else {
			mid = (lo + ub) / 2
		}
		sum += (h.Cumulative[i] - clo) * mid
		lo, clo = ub, h.Cumulative[i]
	}
	return sum / h.Count()
}

// fill returns vs with unknown points (NaN or inside a gap) filled by
// linear interpolation between the known neighbours, the nearest known
// value at the ends, and def when nothing is known.
func fill(vs []float64, unknown []bool, def float64) []float64 {
	out := make([]float64, len(unknown))
	known := func(i int) bool { return i < len(vs) && !unknown[i] && !math.IsNaN(vs[i]) }
	last := -1
	for i := range out {
		if !known(i) {
			continue
		}
		out[i] = vs[i]
		switch {
		case last < 0:
			for k := 0; k < i; k++ {
				out[k] = vs[i]
			}
		case i-last > 1:
			for k := last + 1; k < i; k++ {
				out[k] = vs[last] + (vs[i]-vs[last])*float64(k-last)/float64(i-last)
			}
		}
		last = i
	}
	if last < 0 {
		for i := range out {
			out[i] = def
		}
		return out
	}
	for k := last + 1; k < len(out); k++ {
		out[k] = vs[last]
	}
	return out
}

// hold returns vs with NaN points replaced by the last known value (the
// first known one before it); all NaN stays all NaN.
func hold(vs []float64) []float64 {
	out := make([]float64, len(vs))
	last := math.NaN()
	for i, v := range vs {
		if !math.IsNaN(v) {
			if math.IsNaN(last) {
				for k := 0; k < i; k++ {
					out[k] = v
				}
			}
			last = v
		}
		out[i] = last
	}
	return out
}

// ReplicaSeconds integrates Replicas over the range, each point's value
// holding for one step (points 0..N-1); NaN without a replica timeline.
func (w Workload) ReplicaSeconds() float64 {
	if len(w.Replicas) == 0 || math.IsNaN(w.Replicas[0]) {
		return math.NaN()
	}
	s := 0.0
	for i := 0; i < w.Grid.N; i++ {
		s += w.Replicas[i]
	}
	return s * w.Grid.Step.Seconds()
}

// Peak is the most replicas at any point (NaN without a timeline).
func (w Workload) Peak() float64 {
	p := math.NaN()
	for _, v := range w.Replicas {
		if math.IsNaN(p) || v > p {
			p = v
		}
	}
	return p
}

// Known reports per step (index j = 1..N; 0 unused) whether its arrivals
// come from samples: false when either end of the step lies inside a
// counter gap (Coverage.Gaps: its arrivals are interpolated from the
// counters' increase) or an in-flight gauge gap (Coverage.GaugeGaps: the
// in-flight change in them is interpolated), the steps
// Coverage.Interpolated counts.
func (w Workload) Known() []bool {
	gap := inGap(w.Grid, w.Coverage.Gaps)
	gaugeGap := inGap(w.Grid, w.Coverage.GaugeGaps)
	out := make([]bool, w.Grid.N+1)
	for j := 1; j <= w.Grid.N; j++ {
		out[j] = !gap[j] && !gap[j-1] && !gaugeGap[j] && !gaugeGap[j-1]
	}
	return out
}

// trimmed returns the grid points [i0, i1] that hold data: a gap that
// starts at the range's start moves i0 to the step holding its end, a gap
// that ends at the range's end moves i1 to the step after its start.
// At least one step remains.
func trimmed(g Grid, cov Coverage) (i0, i1 int) {
	i0, i1 = 0, g.N
	if len(cov.Gaps) == 0 {
		return i0, i1
	}
	if first := cov.Gaps[0]; first.From.Equal(g.Start) {
		i0 = int(first.To.Sub(g.Start) / g.Step)
	}
	if last := cov.Gaps[len(cov.Gaps)-1]; last.To.Equal(g.End()) {
		d := last.From.Sub(g.Start)
		i1 = int(d / g.Step)
		if d%g.Step != 0 {
			i1++
		}
	}
	i0 = min(max(i0, 0), g.N-1)
	i1 = max(min(i1, g.N), i0+1)
	return i0, i1
}

// sliceOr returns vs[i0 : i1+1], or vs when it is shorter (absent data).
func sliceOr(vs []float64, i0, i1 int) []float64 {
	if len(vs) <= i1 {
		return vs
	}
	return vs[i0 : i1+1]
}

// DiagnoseNoTraffic says why t's history over g has no traffic
// (promql.DiagnoseSelector: the selector matches nothing, its series lie
// outside g, another server's series, renamed ones), asking api for the
// names t.Selector matches when api is a promql.Namer; "" when it cannot tell (no Namer, no
// selector, the names query failed) or the selector holds the server's
// series.
func DiagnoseNoTraffic(ctx context.Context, api promql.API, t Target, g Grid) string {
	n, ok := api.(promql.Namer)
	if !ok || len(t.Selector) == 0 {
		return ""
	}
	return promql.DiagnoseSelector(ctx, n, t.Server, t.Selector, g.Start, g.End(), "in the range")
}

// noLengths is the error of a range without prompt or output lengths: it
// names the side missing (the table "What backtest reads" of
// docs/backtest.md has each server's histogram and counter), and the side
// read. It said "neither the token histograms nor the token counters have
// data" when only the prompt's were missing.
func noLengths(prompt, output bool) error {
	switch {
	case !prompt && !output:
		return errors.New("no token lengths: neither the prompt and output length histograms nor the prompt and generation token counters have data in the range (docs/backtest.md, What it queries)")
	case !prompt:
		return errors.New("no prompt lengths: neither the prompt length histogram nor the prompt token counter has data in the range (the output lengths have; docs/backtest.md, What it queries)")
	default:
		return errors.New("no output lengths: neither the output length histogram nor the generation token counter has data in the range (the prompt lengths have; docs/backtest.md, What it queries)")
	}
}
