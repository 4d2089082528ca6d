package backtest

import (
	"math"
	"slices"
	"time"

	"github.com/infscale/infscale/pkg/histogram"
)

// Point is one sample of a series as an instant query returned it at a
// grid point: its value and the sample's own timestamp (timestamp()),
// which is older than the grid point by up to Prometheus's lookback delta.
type Point struct {
	// T is the sample's timestamp; V its value.
	T time.Time
	V float64
}

// Series is one series' distinct samples in time order, identified by its
// labels (printed canonically).
type Series struct {
	Labels string
	Points []Point
}

// History is what Fetch reads from Prometheus for one target over a Grid.
// Gauges are fleet totals at each grid point, NaN where the query returned
// nothing.
type History struct {
	Grid Grid
	// Success holds the success counter's series (one per pod and engine).
	Success []Series
	// InFlight is running + waiting summed over pods, per grid point (N+1).
	InFlight []float64
	// Replicas is the replicas query per grid point (N+1), NaN where absent.
	Replicas []float64
	// Prompt and Output are the token-length histograms over the whole
	// range (nil when the server exports none); PromptMean and OutputMean
	// the means from the token counters (NaN when absent).
	Prompt, Output         *Histogram
	PromptMean, OutputMean float64
	// TTFT is the TTFT histogram over the whole range (nil when absent);
	// TTFTHourly the observed p95 TTFT per hour, seconds (NaN: no request).
	TTFT       *Histogram
	TTFTHourly []HourValue
}

// HourValue is a value for the hour ending at T.
type HourValue struct {
	T time.Time
	V float64
}

// counterIncrease attributes the increase of every counter series to the
// grid's steps (out[j] is step j; out[0] unused). Rules: consecutive
// samples a, b add their histogram.CounterIncrease (b.V - a.V, or b.V when
// b.V < a.V: a reset, the counter restarted from 0), spread uniformly over
// (a.T, b.T]. A series' first sample is a baseline, not counted, when it is
// at or before the grid's first point + one step (a series that already
// ran), or when no series has a sample at or before the grid's start (the
// data begins in the range: a Prometheus that keeps less than was asked)
// and it is within cov.Threshold of the first sample of any series (pods
// are scraped at their own offsets; counted in full, each pod's lifetime
// count landed in one step). Otherwise the series is a new pod and its
// first value counts in full (it started from 0): at its first sample, or
// spread over the gap of cov it follows (first seen within cov.Threshold
// after a gap's end: the pod started in the gap, and its count is spread
// as a counter's increase across a gap is). Samples with a NaN value are
// no samples (filtered before: finite). Increases are never negative.
func counterIncrease(g Grid, series []Series, cov Coverage) []float64 {
	out := make([]float64, g.N+1)
	st := g.Step.Seconds()
	first, before := time.Time{}, false
	for _, s := range series {
		if len(s.Points) == 0 {
			continue
		}
		t := s.Points[0].T
		before = before || !t.After(g.Start)
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	for _, s := range series {
		if len(s.Points) == 0 {
			continue
		}
		p0 := s.Points[0]
		t0 := g.sec(p0.T)
		atBegin := !before && p0.T.Sub(first) <= cov.Threshold
		if t0 > st && !atBegin && p0.V > 0 && !math.IsNaN(p0.V) {
			from := t0
			for _, gp := range cov.Gaps {
				if d := p0.T.Sub(gp.To); d >= 0 && d <= cov.Threshold {
					from = g.sec(gp.From)
				}
			}
			g.spread(out, from, t0, p0.V)
		}
		for i := 1; i < len(s.Points); i++ {
			a, b := s.Points[i-1], s.Points[i]
			if math.IsNaN(a.V) || math.IsNaN(b.V) {
				continue
			}
			if inc, _ := histogram.CounterIncrease(a.V, b.V, false); inc > 0 {
				g.spread(out, g.sec(a.T), g.sec(b.T), inc)
			}
		}
	}
	return out
}

// finite drops the points whose value is NaN: a scrape that exported NaN
// for a counter recorded no count, so a stretch of them is a gap (found,
// reported and spread over as one), not an increase lost. Before, the
// pairs around them were skipped: an hour of NaN lost that hour's
// completions with a coverage of 100%.
func finite(ps []Point) []Point {
	return slices.DeleteFunc(slices.Clone(ps), func(p Point) bool { return math.IsNaN(p.V) })
}

// distinct keeps the first of consecutive points with the same timestamp
// (an instant query repeats a sample at every grid point of its lookback).
func distinct(ps []Point) []Point {
	return slices.CompactFunc(ps, func(a, b Point) bool { return a.T.Equal(b.T) })
}
