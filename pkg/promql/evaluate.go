package promql

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/pkg/recommend"
)

// DefaultBatchSize is how many targets share one query per signal when
// Evaluator.BatchSize is 0. With it, a cycle over up to 1,000 targets issues
// at most one query per signal (8 at most, usually 5), whatever the number
// of pods.
const DefaultBatchSize = 1000

// TargetLabel is the label Evaluate adds (with label_replace) to tell the
// targets of a batched query apart; its value is the target's index in the
// batch. User queries must not produce it.
const TargetLabel = "infscale_target"

// Evaluator reads the signals of many targets at one instant.
type Evaluator struct {
	// API answers the queries (a *Client, or a fake in tests).
	API API
	// Options shape the built queries.
	Options Options
	// BatchSize caps the targets per query (0: DefaultBatchSize; 1: one
	// query per target and signal, no label_replace wrapping).
	BatchSize int
	// Parallel caps concurrent queries (0: 4).
	Parallel int
}

// Result is what Evaluate saw of one target.
type Result struct {
	// Target is the target's Name.
	Target string
	// Observation holds the signals; every unknown float is NaN. Reporting
	// is 0 when unknown. Current is the replicas query's value, or Reporting
	// without one; when it is unknown it is 0 and Errors[Current] is set, so
	// the caller must hold its last decision.
	Observation recommend.Observation
	// Errors holds a *QueryError per signal that was asked for and is
	// unknown (its Reason says why). Signals not asked for (CPU without
	// Target.CPU, TTFT without a quantile, Held without a query) are NaN
	// without an error.
	Errors map[Signal]error
	// Warnings are Prometheus's warnings for this target's queries (a
	// batched query's warnings go to every target in it).
	Warnings []string
}

// Stats counts the work of one Evaluate call.
type Stats struct {
	// Queries is the number of HTTP queries sent (fallback retries included).
	Queries int
}

// job is one target's query for one signal.
type job struct {
	target int
	expr   parser.Expr
}

// answer is a query's outcome for one target.
type answer struct {
	value float64
	err   error
	warn  []string
}

// Evaluate evaluates every signal of every target at t. Each signal is one
// query per batch of targets (see docs/promql.md, "Query count"); a batch
// that Prometheus rejects (bad_data) is retried target by target so that one
// broken user query does not blind the others. Results are in target order.
func (e *Evaluator) Evaluate(ctx context.Context, targets []Target, t time.Time) ([]Result, Stats) {
	results := make([]Result, len(targets))
	exprs := make([]map[Signal]parser.Expr, len(targets))
	for i, tg := range targets {
		results[i] = Result{Target: tg.Name, Errors: map[Signal]error{}}
		ex, err := buildExprs(tg, e.Options)
		if err != nil {
			for _, s := range Signals() {
				results[i].Errors[s] = &QueryError{Reason: ReasonInvalidQuery, Err: err}
			}
			continue
		}
		exprs[i] = ex
	}

	batch := e.BatchSize
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	var batches [][]job
	var batchSignal []Signal
	for _, s := range Signals() {
		var jobs []job
		for i := range targets {
			if ex, ok := exprs[i][s]; ok {
				jobs = append(jobs, job{target: i, expr: ex})
			}
		}
		for len(jobs) > 0 {
			n := min(batch, len(jobs))
			batches = append(batches, jobs[:n])
			batchSignal = append(batchSignal, s)
			jobs = jobs[n:]
		}
	}

	answers := make([]map[int]answer, len(batches))
	queries := make([]int, len(batches))
	par := e.Parallel
	if par <= 0 {
		par = 4
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for bi, jobs := range batches {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			answers[bi], queries[bi] = e.runBatch(ctx, jobs, t)
		}()
	}
	wg.Wait()

	values := make([]map[Signal]float64, len(targets))
	for i := range values {
		values[i] = map[Signal]float64{}
	}
	var st Stats
	for bi, ans := range answers {
		st.Queries += queries[bi]
		s := batchSignal[bi]
		for ti, a := range ans {
			results[ti].Warnings = append(results[ti].Warnings, a.warn...)
			if a.err != nil {
				results[ti].Errors[s] = a.err
				continue
			}
			values[ti][s] = a.value
		}
	}
	for i, tg := range targets {
		if exprs[i] == nil {
			results[i].Observation = unknownObservation()
			continue
		}
		results[i].Observation = observe(tg, exprs[i], values[i], results[i].Errors)
	}
	return results, st
}

// runBatch sends one query for jobs (falling back to one query per job when
// Prometheus rejects the batch) and returns each target's answer and the
// number of queries sent.
func (e *Evaluator) runBatch(ctx context.Context, jobs []job, t time.Time) (map[int]answer, int) {
	out := make(map[int]answer, len(jobs))
	if len(jobs) == 1 {
		q := jobs[0].expr.String()
		vec, warn, err := e.API.Instant(ctx, q, t)
		if err != nil {
			out[jobs[0].target] = answer{value: math.NaN(), err: asQueryError(err, q), warn: warn}
			return out, 1
		}
		v, err := single(vec, q)
		out[jobs[0].target] = answer{value: v, err: err, warn: warn}
		return out, 1
	}
	q := batchQuery(jobs)
	vec, warn, err := e.API.Instant(ctx, q, t)
	if err != nil {
		qe := asQueryError(err, q)
		if qe.Reason == ReasonBadData {
			n := 1
			for _, j := range jobs {
				a, c := e.runBatch(ctx, []job{j}, t)
				out[j.target] = a[j.target]
				n += c
			}
			return out, n
		}
		for _, j := range jobs {
			out[j.target] = answer{value: math.NaN(), err: qe, warn: warn}
		}
		return out, 1
	}
	byIndex := map[string]model.Vector{}
	for _, s := range vec {
		idx := string(s.Metric[TargetLabel])
		byIndex[idx] = append(byIndex[idx], s)
	}
	for k, j := range jobs {
		v, err := single(byIndex[strconv.Itoa(k)], q)
		out[j.target] = answer{value: v, err: err, warn: warn}
	}
	return out, 1
}

// batchQuery is `label_replace(<q0>, "infscale_target", "0", "", "") or
// label_replace(<q1>, "infscale_target", "1", "", "") or ...`; a scalar
// query is wrapped in vector() first.
func batchQuery(jobs []job) string {
	es := make([]parser.Expr, len(jobs))
	for k, j := range jobs {
		ex := j.expr
		if ex.Type() == parser.ValueTypeScalar {
			ex = call("vector", ex)
		}
		es[k] = call("label_replace", ex, str(TargetLabel), str(strconv.Itoa(k)), str(""), str(""))
	}
	return orChain(es).String()
}

// single reduces one target's samples to one number: no sample is
// ReasonEmpty; several samples must agree (HA duplicates of one series do),
// else ReasonAmbiguous; NaN or ±Inf is ReasonNaN.
func single(vec model.Vector, q string) (float64, error) {
	if len(vec) == 0 {
		return math.NaN(), &QueryError{Reason: ReasonEmpty, Query: q, Err: fmt.Errorf("no series")}
	}
	v := float64(vec[0].Value)
	for _, s := range vec[1:] {
		w := float64(s.Value)
		if w != v && !(math.IsNaN(w) && math.IsNaN(v)) {
			return math.NaN(), &QueryError{Reason: ReasonAmbiguous, Query: q,
				Err: fmt.Errorf("%d series with different values (%v and %v); aggregate the query to one series", len(vec), v, w)}
		}
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return math.NaN(), &QueryError{Reason: ReasonNaN, Query: q, Err: fmt.Errorf("value %v", v)}
	}
	return v, nil
}

func asQueryError(err error, q string) *QueryError {
	if qe, ok := err.(*QueryError); ok {
		return qe
	}
	return &QueryError{Reason: classify(err), Query: q, Err: err}
}

func unknownObservation() recommend.Observation {
	nan := math.NaN()
	return recommend.Observation{Running: nan, Waiting: nan, Held: nan, KV: nan, CPU: nan, TTFT: nan}
}

// observe folds one target's values into an Observation and records
// ReasonUnsupported for signals the target asked for but its profile lacks.
func observe(tg Target, exprs map[Signal]parser.Expr, vals map[Signal]float64, errs map[Signal]error) recommend.Observation {
	get := func(s Signal) float64 {
		if v, ok := vals[s]; ok {
			return v
		}
		return math.NaN()
	}
	expected := []Signal{Running, Waiting, Reporting, KV}
	if tg.CPU {
		expected = append(expected, CPU)
	}
	if tg.TTFTQuantile != 0 {
		expected = append(expected, TTFT)
	}
	for _, s := range expected {
		if _, ok := exprs[s]; !ok {
			errs[s] = &QueryError{Reason: ReasonUnsupported,
				Err: fmt.Errorf("server %s has no metric family for %s", tg.Server, s)}
		}
	}
	o := recommend.Observation{
		Running: get(Running), Waiting: get(Waiting), KV: get(KV),
		CPU: get(CPU), TTFT: get(TTFT), Held: get(Held),
	}
	if r := get(Reporting); !math.IsNaN(r) && r >= 0 {
		o.Reporting = int(math.Round(r))
	}
	switch c := get(Current); {
	case !math.IsNaN(c) && c >= 0:
		o.Current = int(math.Round(c))
	case !math.IsNaN(c):
		errs[Current] = &QueryError{Reason: ReasonBadData, Err: fmt.Errorf("negative replicas %v", c)}
	case tg.Replicas == "" && errs[Reporting] == nil && vals[Reporting] > 0:
		o.Current = o.Reporting
	case errs[Current] == nil:
		err := errs[Reporting]
		if err == nil {
			err = &QueryError{Reason: ReasonEmpty, Err: fmt.Errorf("no replicas query and no reporting pods")}
		}
		errs[Current] = err
	}
	return o
}
