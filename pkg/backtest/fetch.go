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

	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
)

// Target is what a backtest reads: a server profile and the label
// selector of its series.
type Target struct {
	// Server selects the metric families (pkg/modelserver).
	Server modelserver.Server
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
// data), ReasonPartial for an answer that says part of the data was not
// read (promql.Partial: a Thanos partial response; the history would be
// less traffic than ran); a replicas query that does not validate
// (promql.ErrInvalidQuery).
func Fetch(ctx context.Context, api promql.API, t Target, g Grid, progress func(done, total int)) (History, FetchStats, error) {
	if t.Replicas != "" {
		if _, err := promql.Validate(t.Replicas); err != nil {
			return History{}, FetchStats{}, fmt.Errorf("replicas query: %w", err)
		}
	}
	q, err := buildQueries(t.Server, t.Selector, g.End().Sub(g.Start), t.Replicas)
	if err != nil {
		return History{}, FetchStats{}, err
	}
	// The queries read runs: the success counter and its timestamps, the
	// running gauge and the replicas, then those the profile has, the
	// hourly TTFT only over an hour or more; so done reaches total.
	total := 4
	for _, s := range []string{q.Waiting, q.PromptHist, q.OutputHist, q.PromptMean, q.OutputMean, q.TTFTHist} {
		if s != "" {
			total++
		}
	}
	if q.TTFTHourly != "" && g.End().Sub(g.Start) >= time.Hour {
		total++
	}
	f := &fetcher{ctx: ctx, api: api, g: g, total: total, progress: progress}
	if progress != nil {
		// 0 of total before the first query: a Prometheus that takes the
		// whole query timeout to answer (or never does) leaves the command's
		// progress saying it started, not silent.
		progress(0, total)
	}
	began := time.Now()
	h := History{Grid: g, PromptMean: math.NaN(), OutputMean: math.NaN()}
	err = f.read(&h, q)
	f.st.Duration = time.Since(began)
	return h, f.st, err
}

// fetcher runs one Fetch's queries and keeps their statistics.
type fetcher struct {
	ctx      context.Context
	api      promql.API
	g        Grid
	total    int
	progress func(done, total int)
	st       FetchStats
}

func (f *fetcher) step() {
	f.st.Queries++
	if f.progress != nil {
		f.progress(f.st.Queries, f.total)
	}
}

// rng runs a range query from start to the grid's end.
func (f *fetcher) rng(query string, start time.Time, stp time.Duration) (model.Matrix, error) {
	m, warn, err := f.api.Range(f.ctx, query, start, f.g.End(), stp)
	f.st.Warnings = append(f.st.Warnings, warn...)
	f.st.Queried = append(f.st.Queried, query)
	f.step()
	for _, s := range m {
		f.st.Points += int64(len(s.Values))
	}
	if err == nil {
		err = promql.PartialAnswer(query, warn)
	}
	return m, err
}

// inst runs an instant query at the grid's end; nothing for an empty query.
func (f *fetcher) inst(query string) (model.Vector, error) { return f.instAt(query, f.g.End()) }

// instAt runs an instant query at t, counting it in the fetch's status
// (queried, points, warnings); a partial answer is an error.
func (f *fetcher) instAt(query string, t time.Time) (model.Vector, error) {
	if query == "" {
		return nil, nil
	}
	v, warn, err := f.api.Instant(f.ctx, query, t)
	f.st.Warnings = append(f.st.Warnings, warn...)
	f.st.Queried = append(f.st.Queried, query)
	f.step()
	f.st.Points += int64(len(v))
	if err == nil {
		err = promql.PartialAnswer(query, warn)
	}
	return v, err
}

// baselines gives each success series whose first sample comes after the
// grid's start a first point at the start: the counter's last value
// before it (query, promql.History.SuccessBaseline, at the start), when
// the series has one. Without it the first sample was a new pod's, its
// whole count completions in the range: a pod that served for days
// before the range and whose scrapes failed across its start (a /metrics
// that times out under load) put its lifetime's requests, hundreds of
// thousands, into one step of the replay (TestFetchLateSeriesBaseline). A
// series with no value in the day before the start is a new pod, as
// before. The query is sent only when a series starts late.
func (f *fetcher) baselines(series []Series, query string) error {
	late := func(s Series) bool { return len(s.Points) > 0 && s.Points[0].T.After(f.g.Start) }
	if !slices.ContainsFunc(series, late) || query == "" {
		return nil
	}
	f.total++
	v, err := f.instAt(query, f.g.Start)
	if err != nil {
		return err
	}
	base := make(map[string]float64, len(v))
	for _, s := range v {
		k := seriesKey(s.Metric)
		if _, ok := base[k]; !ok && !math.IsNaN(float64(s.Value)) && s.Value >= 0 { // an HA pair's copies: the first
			base[k] = float64(s.Value)
		}
	}
	for i, s := range series {
		if b, ok := base[s.Labels]; ok && late(s) {
			series[i].Points = append([]Point{{T: f.g.Start, V: b}}, s.Points...)
		}
	}
	return nil
}

// read fills h from the queries q, in order: completions, in-flight
// requests, replicas, token and TTFT histograms, token means, hourly TTFT.
func (f *fetcher) read(h *History, q promql.History) error {
	g := f.g
	vals, err := f.rng(q.Success, g.Start, g.Step)
	if err != nil {
		return err
	}
	stamps, err := f.rng(q.SuccessTimestamps, g.Start, g.Step)
	if err != nil {
		return err
	}
	if h.Success, err = joinTimestamps(vals, stamps); err != nil {
		return fmt.Errorf("%s: %w", q.SuccessTimestamps, err)
	}
	if w := concurrentModels(vals, g.Step); w != "" {
		f.st.Warnings = append(f.st.Warnings, w)
	}
	if err := f.baselines(h.Success, q.SuccessBaseline); err != nil {
		return err
	}
	if h.InFlight, err = f.inFlight(q); err != nil {
		return err
	}
	if !slices.ContainsFunc(h.InFlight, func(v float64) bool { return !math.IsNaN(v) }) {
		// One gauge gap over the whole range (coverage 0%): say which
		// query came back empty, as for the replicas query below.
		f.st.Warnings = append(f.st.Warnings, fmt.Sprintf("running query %s returned no samples over %s..%s: in flight unknown throughout, so the whole range is a gauge gap (coverage 0%%, the arrivals the success counter's increase alone); check it in Prometheus (a label or metric name? the server profile: --server, a target's server:)",
			q.Running, g.Start.UTC().Format(time.RFC3339), g.End().UTC().Format(time.RFC3339)))
	}
	reps, err := f.rng(q.Replicas, g.Start, g.Step)
	if err != nil {
		return err
	}
	if len(reps) > 1 {
		return manySeriesError(q.Replicas, reps)
	}
	if len(reps) == 0 {
		// Not an error (the replay runs without it), but no actual row:
		// say which query came back empty.
		f.st.Warnings = append(f.st.Warnings, fmt.Sprintf("replicas query %s returned no samples over %s..%s: no observed replicas, so no actual (simulated) row and no fidelity; check it in Prometheus (a label or metric name?)",
			q.Replicas, g.Start.UTC().Format(time.RFC3339), g.End().UTC().Format(time.RFC3339)))
	}
	h.Replicas = onGrid(g, reps)
	if len(reps) == 1 && !slices.ContainsFunc(h.Replicas, func(v float64) bool { return !math.IsNaN(v) }) {
		// As good as no samples (NaN is no count): said as the empty case is.
		f.st.Warnings = append(f.st.Warnings, fmt.Sprintf("replicas query %s returned only NaN over %s..%s: no observed replicas, so no actual (simulated) row and no fidelity; check it in Prometheus (a division by zero?)",
			q.Replicas, g.Start.UTC().Format(time.RFC3339), g.End().UTC().Format(time.RFC3339)))
	}
	if err := replicaCounts(g, q.Replicas, h.Replicas); err != nil {
		return err
	}
	for _, c := range []struct {
		query string
		into  **Histogram
	}{{q.PromptHist, &h.Prompt}, {q.OutputHist, &h.Output}, {q.TTFTHist, &h.TTFT}} {
		v, err := f.inst(c.query)
		if err != nil {
			return err
		}
		if *c.into, err = histogramOf(v); err != nil {
			return fmt.Errorf("%s: %w", c.query, err)
		}
	}
	for _, c := range []struct {
		query string
		into  *float64
	}{{q.PromptMean, &h.PromptMean}, {q.OutputMean, &h.OutputMean}} {
		v, err := f.inst(c.query)
		if err != nil {
			return err
		}
		if len(v) == 1 && float64(v[0].Value) > 0 {
			if m := float64(v[0].Value); m > math.MaxInt32 {
				return fmt.Errorf("%s: %g tokens per request: want 1..%d (a token counter that is not one?)", c.query, m, math.MaxInt32)
			}
			*c.into = float64(v[0].Value)
		}
	}
	if q.TTFTHourly != "" && g.End().Sub(g.Start) >= time.Hour {
		m, err := f.rng(q.TTFTHourly, g.Start.Add(time.Hour), time.Hour)
		if err != nil {
			return err
		}
		if len(m) == 1 {
			for _, p := range m[0].Values {
				// NaN is an hour without a request; below 0 or infinite is
				// no quantile of a TTFT histogram (histogram_quantile gives
				// at most the highest finite bound): the fidelity grade
				// would be computed on it.
				if v := float64(p.Value); v < 0 || math.IsInf(v, 0) {
					return fmt.Errorf("%s at %s is %g: want a TTFT quantile in seconds >= 0 (NaN: no request that hour)", q.TTFTHourly, p.Timestamp.Time().UTC().Format(time.RFC3339), v)
				}
				h.TTFTHourly = append(h.TTFTHourly, HourValue{T: p.Timestamp.Time().UTC(), V: float64(p.Value)})
			}
		}
	}
	return nil
}

// inFlight is running + waiting per grid point (waiting unknown: running
// alone; NaN where running is unknown). A sum below zero is an error.
func (f *fetcher) inFlight(q promql.History) ([]float64, error) {
	in, err := f.requests(q.Running)
	if err != nil || q.Waiting == "" {
		return in, err
	}
	w, err := f.requests(q.Waiting)
	if err != nil {
		return nil, err
	}
	for i := range in {
		if !math.IsNaN(w[i]) && !math.IsNaN(in[i]) {
			in[i] += w[i]
		}
	}
	return in, nil
}

// requests is a gauge of requests on the grid, refused outside 0 to
// MaxInFlight.
func (f *fetcher) requests(query string) ([]float64, error) {
	m, err := f.rng(query, f.g.Start, f.g.Step)
	if err != nil {
		return nil, err
	}
	vs := onGrid(f.g, m)
	if err := requestCounts(f.g, query, vs); err != nil {
		return nil, err
	}
	return vs, nil
}

// MaxInFlight bounds a gauge of requests in flight at one target: the
// most sequences the largest fleet the replay models can batch
// (replay.MaxReplicas x replica.MaxMaxNumSeqs, about 10^10). Above it
// (10^300, +Inf) the gauge is no request count, and its steps would
// swallow the completions they are added to.
const MaxInFlight = float64(replay.MaxReplicas) * replica.MaxMaxNumSeqs

// requestCounts refuses a gauge of requests below zero or above
// MaxInFlight (NaN is unknown, not an error): no server counts negative
// requests or more than it can hold, so it is not one.
func requestCounts(g Grid, query string, vs []float64) error {
	for i, v := range vs {
		if v < 0 || v > MaxInFlight {
			return fmt.Errorf("%s at %s is %g: want requests 0 to %.0f (is it a gauge of requests, summed once?)", query, g.At(i).Format(time.RFC3339), v, MaxInFlight)
		}
	}
	return nil
}

// replicaCounts refuses a value of the replicas series that is no
// replica count (negative, infinite or above replay.MaxReplicas), naming
// the query, the value and its time: it would stop the replay of what ran
// with an error naming neither.
func replicaCounts(g Grid, query string, v []float64) error {
	for i, r := range v {
		if r < 0 || r > replay.MaxReplicas { // NaN (no sample) compares false
			return fmt.Errorf("replicas query %s: %g at %s is no replica count (want 0 to %d): does it return replicas (kube_deployment_spec_replicas, count of pods), summed once?",
				query, r, g.Start.Add(time.Duration(i)*g.Step).UTC().Format(time.RFC3339), replay.MaxReplicas)
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

// manySeriesError is the error for a replicas query that returned more
// than one series: it shows up to three of their label sets, since what
// to do depends on them. Several workloads' series (another deployment's
// too) want the matchers narrowed to this one's; one workload's series
// repeated (kube-state-metrics run twice, one series a pod) want an
// aggregation, max(...) for copies of one count, sum(...) for parts of it.
func manySeriesError(query string, m model.Matrix) error {
	var sets []string
	for _, s := range m[:min(len(m), 3)] {
		sets = append(sets, s.Metric.String())
	}
	if len(m) > 3 {
		sets = append(sets, "...")
	}
	return fmt.Errorf("replicas query %q returned %d series (%s); want one: if they are different workloads' replicas, narrow its matchers to this one's (e.g. deployment=\"...\"); if they are one workload's, aggregate them: max(...) over copies of one count (kube-state-metrics scraped twice), sum(...) over its parts",
		query, len(m), strings.Join(sets, ", "))
}
