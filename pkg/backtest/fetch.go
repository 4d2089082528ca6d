package backtest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/infscale/infscale/pkg/profile"
	"github.com/infscale/infscale/pkg/promql"
)

// Target is what a backtest reads: a server profile and the label
// selector of its series.
type Target struct {
	// Server selects the metric families (pkg/profile).
	Server profile.Server
	// Selector is injected into every built query (promql.ParseSelector).
	Selector []*labels.Matcher
	// Replicas is a PromQL query for the replica count, run verbatim
	// (e.g. kube_deployment_spec_replicas{namespace="llm",deployment="chat"});
	// empty: the number of pods reporting the running gauge.
	Replicas string
}

// FetchStats describe the queries a Fetch ran.
type FetchStats struct {
	// Queries is the number of PromQL expressions evaluated (a range query
	// longer than 11,000 points is split by the client into several HTTP
	// requests, counted once here).
	Queries int
	// Points is the samples returned.
	Points int64
	// Duration is the wall time spent querying.
	Duration time.Duration
	// Warnings are Prometheus's annotations.
	Warnings []string
	// Queried are the expressions, for the report.
	Queried []string
}

// Fetch reads t's history over g through api. progress, when set, is
// called after each query with the queries done and the total. Errors:
// *promql.QueryError from the client (a failed query is never read as no
// data); a replicas query that does not validate (promql.ErrInvalidQuery).
func Fetch(ctx context.Context, api promql.API, t Target, g Grid, progress func(done, total int)) (_ History, st FetchStats, _ error) {
	if t.Replicas != "" {
		if _, err := promql.Validate(t.Replicas); err != nil {
			return History{}, st, fmt.Errorf("replicas query: %w", err)
		}
	}
	span := g.End().Sub(g.Start)
	q, err := buildQueries(t.Server, t.Selector, span, t.Replicas)
	if err != nil {
		return History{}, st, err
	}
	began := time.Now()
	defer func() { st.Duration = time.Since(began) }()
	total := 6
	for _, s := range []string{q.Waiting, q.PromptHist, q.OutputHist, q.PromptMean, q.OutputMean, q.TTFTHist, q.TTFTHourly} {
		if s != "" {
			total++
		}
	}
	step := func() {
		st.Queries++
		if progress != nil {
			progress(st.Queries, total)
		}
	}
	rng := func(query string, start time.Time, stp time.Duration) (model.Matrix, error) {
		m, warn, err := api.Range(ctx, query, start, g.End(), stp)
		st.Warnings = append(st.Warnings, warn...)
		st.Queried = append(st.Queried, query)
		step()
		for _, s := range m {
			st.Points += int64(len(s.Values))
		}
		return m, err
	}
	inst := func(query string) (model.Vector, error) {
		if query == "" {
			return nil, nil
		}
		v, warn, err := api.Instant(ctx, query, g.End())
		st.Warnings = append(st.Warnings, warn...)
		st.Queried = append(st.Queried, query)
		step()
		st.Points += int64(len(v))
		return v, err
	}

	h := History{Grid: g, PromptMean: math.NaN(), OutputMean: math.NaN()}
	vals, err := rng(q.Success, g.Start, g.Step)
	if err != nil {
		return h, st, err
	}
	stamps, err := rng(q.SuccessTimestamps, g.Start, g.Step)
	if err != nil {
		return h, st, err
	}
	if h.Success, err = joinTimestamps(vals, stamps); err != nil {
		return h, st, fmt.Errorf("%s: %w", q.SuccessTimestamps, err)
	}
	running, err := rng(q.Running, g.Start, g.Step)
	if err != nil {
		return h, st, err
	}
	h.InFlight = onGrid(g, running)
	if err := nonNegative(g, q.Running, h.InFlight); err != nil {
		return h, st, err
	}
	if q.Waiting != "" {
		waiting, err := rng(q.Waiting, g.Start, g.Step)
		if err != nil {
			return h, st, err
		}
		w := onGrid(g, waiting)
		if err := nonNegative(g, q.Waiting, w); err != nil {
			return h, st, err
		}
		for i := range h.InFlight {
			if !math.IsNaN(w[i]) && !math.IsNaN(h.InFlight[i]) {
				h.InFlight[i] += w[i]
			}
		}
	}
	reps, err := rng(q.Replicas, g.Start, g.Step)
	if err != nil {
		return h, st, err
	}
	if len(reps) > 1 {
		return h, st, fmt.Errorf("replicas query %q returned %d series; want one (wrap it in sum(...))", q.Replicas, len(reps))
	}
	h.Replicas = onGrid(g, reps)
	for _, c := range []struct {
		query string
		into  **Histogram
	}{{q.PromptHist, &h.Prompt}, {q.OutputHist, &h.Output}, {q.TTFTHist, &h.TTFT}} {
		v, err := inst(c.query)
		if err != nil {
			return h, st, err
		}
		if *c.into, err = histogramOf(v); err != nil {
			return h, st, fmt.Errorf("%s: %w", c.query, err)
		}
	}
	for _, c := range []struct {
		query string
		into  *float64
	}{{q.PromptMean, &h.PromptMean}, {q.OutputMean, &h.OutputMean}} {
		v, err := inst(c.query)
		if err != nil {
			return h, st, err
		}
		if len(v) == 1 && float64(v[0].Value) > 0 {
			if m := float64(v[0].Value); m > math.MaxInt32 {
				return h, st, fmt.Errorf("%s: %g tokens per request: want 1..%d (a token counter that is not one?)", c.query, m, math.MaxInt32)
			}
			*c.into = float64(v[0].Value)
		}
	}
	if q.TTFTHourly != "" && g.End().Sub(g.Start) >= time.Hour {
		m, err := rng(q.TTFTHourly, g.Start.Add(time.Hour), time.Hour)
		if err != nil {
			return h, st, err
		}
		if len(m) == 1 {
			for _, p := range m[0].Values {
				h.TTFTHourly = append(h.TTFTHourly, HourValue{T: p.Timestamp.Time().UTC(), V: float64(p.Value)})
			}
		}
	}
	return h, st, nil
}

// nonNegative refuses a gauge of requests below zero (NaN is unknown, not
// an error): no server counts negative requests, so it is not one.
func nonNegative(g Grid, query string, vs []float64) error {
	for i, v := range vs {
		if v < 0 {
			return fmt.Errorf("%s at %s is %g: want requests >= 0", query, g.At(i).Format(time.RFC3339), v)
		}
	}
	return nil
}

// onGrid places a one-series matrix on the grid's points (NaN where absent).
func onGrid(g Grid, m model.Matrix) []float64 {
	out := make([]float64, g.N+1)
	for i := range out {
		out[i] = math.NaN()
	}
	if len(m) == 0 {
		return out
	}
	start := g.Start.UnixMilli()
	stepMs := g.Step.Milliseconds()
	for _, p := range m[0].Values {
		d := int64(p.Timestamp) - start
		if d < 0 || d%stepMs != 0 {
			continue
		}
		if i := int(d / stepMs); i <= g.N {
			out[i] = float64(p.Value)
		}
	}
	return out
}

// seriesKey is a series' labels without the metric name and the HA replica
// labels (the two members of an HA pair are one series).
func seriesKey(m model.Metric) string {
	ls := make([]string, 0, len(m))
	for k, v := range m {
		if k == model.MetricNameLabel || slices.Contains(promql.DefaultReplicaLabels, string(k)) {
			continue
		}
		ls = append(ls, string(k)+"="+string(v))
	}
	slices.Sort(ls)
	return "{" + strings.Join(ls, ",") + "}"
}

// joinTimestamps pairs each series' values with its sample timestamps
// (timestamp() of the same selector, evaluated at the same grid points),
// keeps distinct samples, and collapses HA duplicates (first wins). A
// timestamp that is not the time of a sample at or before its evaluation
// time (within a day: Prometheus looks back 5 minutes by default) is an
// error, never a time to place an increase at.
func joinTimestamps(vals, stamps model.Matrix) ([]Series, error) {
	ts := map[string]map[model.Time]float64{}
	for _, s := range stamps {
		k := seriesKey(s.Metric)
		if ts[k] != nil {
			continue
		}
		byT := make(map[model.Time]float64, len(s.Values))
		for _, p := range s.Values {
			sec, eval := float64(p.Value), p.Timestamp.Time().UTC()
			if !(sec*1000 <= float64(p.Timestamp)+1 && sec*1000 >= float64(p.Timestamp)-float64(24*time.Hour/time.Millisecond)) {
				return nil, fmt.Errorf("series %s at %s: sample time %g: want the unix time of a sample at or before %s", k, eval.Format(time.RFC3339), sec, eval.Format(time.RFC3339))
			}
			byT[p.Timestamp] = sec
		}
		ts[k] = byT
	}
	var out []Series
	seen := map[string]bool{}
	for _, s := range vals {
		k := seriesKey(s.Metric)
		if seen[k] {
			continue
		}
		seen[k] = true
		byT := ts[k]
		pts := make([]Point, 0, len(s.Values))
		for _, p := range s.Values {
			sec, ok := byT[p.Timestamp]
			if !ok {
				continue
			}
			pts = append(pts, Point{T: time.UnixMilli(int64(math.Round(sec * 1000))).UTC(), V: float64(p.Value)})
		}
		out = append(out, Series{Labels: k, Points: distinct(pts)})
	}
	slices.SortFunc(out, func(a, b Series) int { return strings.Compare(a.Labels, b.Labels) })
	return out, nil
}

// histogramOf reads `sum by (le) (...)` into a Histogram; nil when empty.
func histogramOf(v model.Vector) (*Histogram, error) {
	if len(v) == 0 {
		return nil, nil
	}
	le := make([]string, 0, len(v))
	counts := make([]float64, 0, len(v))
	for _, s := range v {
		le = append(le, string(s.Metric["le"]))
		counts = append(counts, float64(s.Value))
	}
	h, err := NewHistogram(le, counts)
	if err != nil {
		return nil, err
	}
	if !(h.Count() > 0) {
		return nil, nil
	}
	return h, nil
}
