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
// grid's steps (out[j] is step j; out[0] unused) and returns it with the
// part that fell outside the grid. Rules: consecutive samples a, b add
// their histogram.CounterIncrease (b.V - a.V, or b.V when b.V < a.V: a
// reset, the counter restarted from 0),
// spread uniformly over (a.T, b.T]; the first sample of a series counts in
// full (it started from 0) unless it is at or before the grid's first
// point + one step, where it is the baseline of a series that already ran.
// Increases are never negative.
func counterIncrease(g Grid, series []Series) []float64 {
	out := make([]float64, g.N+1)
	st := g.Step.Seconds()
	for _, s := range series {
		if len(s.Points) == 0 {
			continue
		}
		p0 := s.Points[0]
		if t0 := g.sec(p0.T); t0 > st && p0.V > 0 && !math.IsNaN(p0.V) {
			g.spread(out, t0, t0, p0.V)
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

// distinct keeps the first of consecutive points with the same timestamp
// (an instant query repeats a sample at every grid point of its lookback).
func distinct(ps []Point) []Point {
	return slices.CompactFunc(ps, func(a, b Point) bool { return a.T.Equal(b.T) })
}
