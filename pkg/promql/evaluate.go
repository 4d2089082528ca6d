package promql

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/pkg/modelserver"
)

// DefaultBatchSize is how many targets share one query per signal when
// Evaluator.BatchSize is 0. With it, a cycle over up to 10,000 targets
// issues one query per signal (4 to 10, stuck included when asked for: see
// docs/promql.md), whatever the number of pods, unless MaxBatchBytes cuts
// a batch first.
const DefaultBatchSize = 10000

// MaxBatchBytes caps the text of one batched query (a batch takes targets
// until the next would pass it; one target alone may): 4 MiB, so that the
// form body stays well under the 10 MB a Go HTTP server (Prometheus's
// API) parses. About 10,000 targets with short selectors fit in one.
const MaxBatchBytes = 4 << 20

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

	mu      sync.Mutex // guards the cached plan of Evaluate
	plan    *Plan
	planKey string
}

// Result is what Evaluate saw of one target.
type Result struct {
	// Target is the target's Name.
	Target string
	// Values are the signals' values, by Signal: NaN when unknown or not
	// asked for. A count() or sum() of no pod (Unready, Stuck,
	// StuckWaiting) is 0, not unknown. Current is the replicas query's
	// value, or Reporting + Unready without one; when it is unknown
	// Errors[Current] is set, so the caller must hold its last decision.
	// What the values mean as a recommend.Observation (stuck pods left
	// out) is the caller's: pkg/serve's Prometheus source.
	Values Values
	// Errors holds a *QueryError per signal that was asked for and is
	// unknown (its Reason says why). Signals not asked for (CPU without
	// Target.CPU, TTFT without a quantile, Held without a query) are NaN
	// without an error.
	Errors map[Signal]error
	// Warnings are Prometheus's warnings for this target's queries (a
	// batched query's warnings go to every target in it).
	Warnings []string
	// Stuck is the number of live pods that look like stuck engines (the
	// Stuck signal, Target.Stuck); NaN when not asked for, not supported by
	// the profile, or unknown (Errors[Stuck] then says why).
	Stuck float64
	// Duplicated is the number of series the deduplication folded
	// (Target.Duplicates; NaN when not asked for or unknown).
	Duplicated float64
}

// Values are one target's signal values indexed by Signal (index 0 is
// unused); NaN where unknown.
type Values [numSignals]float64

// unknownValues are Values with every signal unknown.
func unknownValues() Values {
	var v Values
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

// Stats counts the work of one Evaluate call.
type Stats struct {
	// Queries is the number of HTTP queries sent (fallback retries included).
	Queries int
}

// job is one target's query for one signal: its text held compactly
// (jobText: the shape shared with the other targets, and the target's
// matchers), never as part of its batch's text.
type job struct {
	target int
	text   jobText
	scalar bool // the query is a scalar (wrapped in vector() in a batch)
}

// signalSet is a set of Signals (bit s set for Signal s).
type signalSet uint32

func (ss signalSet) has(s Signal) bool { return ss&(1<<s) != 0 }

// answer is a query's outcome for one target.
type answer struct {
	value float64
	err   error
	warn  []string
}

// targetAnswer is an answer for the target of index target.
type targetAnswer struct {
	target int
	answer
}

// numSignals bounds the Signal values (they start at 1).
const numSignals = int(PoolSeries) + 1

// sigValues are one target's values read this cycle, by signal.
type sigValues struct {
	v   [numSignals]float64
	set signalSet
}

func (sv *sigValues) get(s Signal) (float64, bool) { return sv.v[s], sv.set.has(s) }

// all returns the values read, NaN for the others.
func (sv *sigValues) all() Values {
	v := unknownValues()
	for _, s := range Signals() {
		if x, ok := sv.get(s); ok {
			v[s] = x
		}
	}
	return v
}

func (sv *sigValues) put(s Signal, v float64) { sv.v[s], sv.set = v, sv.set|1<<s }

// drop forgets s's value (garbage: an error says why).
func (sv *sigValues) drop(s Signal) { sv.set &^= 1 << s }

// Plan is the queries of one set of targets, built and printed once (query
// text for 1,000 targets is about 1.3 MB; rebuilding it every cycle would
// cost more CPU than the cycle's other work). Make a new Plan when the
// targets or options change (config reload). A Plan's queries are
// read-only; its only state is the cache of the Stuck answers (see Run),
// guarded by a mutex, so a Plan may be shared, and a new Plan starts with
// an empty cache.
type Plan struct {
	targets   []Target
	signals   []signalSet // the signals each target has a query for
	buildErrs []error     // non-nil for a target whose queries did not build
	batches   []batch
	// opts and batchSize rebuild the on-demand queries (StuckWaiting: only
	// for targets whose Stuck count is > 0, in a second round of Run).
	opts      Options
	batchSize int
	// stuckEvery is how often the Stuck batches are sent (StuckWindow/4);
	// stuck caches their answers in between.
	stuckEvery time.Duration
	stuck      *stuckCache
	// fallback bounds the per-target retries of rejected batches.
	fallback *fallbackState
}

// stuckCache holds the Stuck answers of a Plan's last read of that signal.
type stuckCache struct {
	mu      sync.Mutex
	read    bool           // false until the first read
	at      time.Time      // the t of that read
	answers []targetAnswer // warnings dropped
	failed  bool           // a target's read failed with Prometheus (transientRead)
}

// due reports whether the Stuck batches are to be sent at t: never read
// yet, the last read failed with Prometheus (refused, 5xx, timed out,
// partial: read again at once, so the count is known at the first good
// read after an outage), at least every after the last read, or t before
// it (a clock that went back).
func (c *stuckCache) due(t time.Time, every time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.read || c.failed || t.Before(c.at) || t.Sub(c.at) >= every
}

// store records the Stuck answers read at t.
func (c *stuckCache) store(t time.Time, answers []targetAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read, c.at, c.answers = true, t, answers
	c.failed = slices.ContainsFunc(answers, func(a targetAnswer) bool { return transientRead(a.err) })
}

// transientRead reports whether err is Prometheus's failure, not the
// query's or the data's: unavailable, timeout, canceled or partial. A
// rejected query (bad_data, backed off per target) keeps the cadence.
func transientRead(err error) bool {
	switch ReasonOf(err) {
	case ReasonUnavailable, ReasonTimeout, ReasonCanceled, ReasonPartial:
		return true
	}
	return false
}

// load returns the answers of the last read (nil before any) and its t.
func (c *stuckCache) load() ([]targetAnswer, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answers, c.at
}

// ReusedError is the cause of a signal's error that was read at At and
// reused by a later Run that did not ask again (the Stuck count between
// its reads, every StuckWindow/4): the same Reason, but not a failed read
// of that Run, so a caller counting failed reads counts it once, at At.
type ReusedError struct {
	At  time.Time
	Err error
}

func (e ReusedError) Error() string {
	return fmt.Sprintf("%v (read at %s, reused until the next read)", e.Err, e.At.UTC().Format(time.RFC3339))
}

func (e ReusedError) Unwrap() error { return e.Err }

// reused is err (a *QueryError) read at t, as a later Run reports it.
func reused(err error, t time.Time) error {
	qe, ok := err.(*QueryError)
	if !ok {
		return err
	}
	return &QueryError{Reason: qe.Reason, Query: qe.Query, Err: ReusedError{At: t, Err: qe.Err}}
}

// batch is the query of one signal for a group of targets.
type batch struct {
	signal Signal
	jobs   []job
	text   queryText // plainText of a single job, else a batchText written as it is sent
	// formLen is the length of the text form-encoded, for the batched
	// POST's Content-Length: counted once, not every cycle (about 17 ms a
	// cycle at 10,000 targets).
	formLen int
}

// textOf is the text of the query of jobs: a single job's own, or the
// batch's.
func textOf(jobs []job) queryText {
	if len(jobs) == 1 {
		return plainText(jobs[0].text.String())
	}
	return newBatchText(jobs)
}

// NewPlan builds and prints the queries of targets: one query per signal for
// every batchSize targets (0: DefaultBatchSize). A target whose queries do
// not build gets ReasonInvalidQuery for every signal in each Result.
func NewPlan(targets []Target, opts Options, batchSize int) *Plan {
	p := &Plan{
		targets:   targets,
		signals:   make([]signalSet, len(targets)),
		buildErrs: make([]error, len(targets)),
	}
	// Each target's queries are printed as they are built, so that the
	// ASTs of all targets (about 5 MB per 1,000) are never held at once,
	// and held compactly (jobText).
	jobsOf := make(map[Signal][]job)
	shapes := shapeSet{}
	for i, tg := range targets {
		var exprs map[Signal]parser.Expr
		exprs, p.buildErrs[i] = buildExprs(tg, opts)
		var st *selectorText
		if p.buildErrs[i] == nil {
			st = newSelectorText(tg.Selector, tg.Server, opts)
		}
		for s, ex := range exprs {
			p.signals[i] |= 1 << s
			if s != StuckWaiting {
				jobsOf[s] = append(jobsOf[s], job{target: i, text: shapes.compact(ex.String(), st), scalar: ex.Type() == parser.ValueTypeScalar})
			}
		}
	}
	if batchSize <= 0 {
		batchSize = DefaultBatchSize
	}
	p.opts, p.batchSize = opts, batchSize
	p.stuckEvery = opts.withDefaults().StuckWindow / 4
	p.stuck = &stuckCache{}
	p.fallback = newFallbackState()
	for _, s := range Signals() {
		if s == StuckWaiting {
			continue // on demand: see stuckRound
		}
		jobs := jobsOf[s]
		delete(jobsOf, s)
		for len(jobs) > 0 {
			n := batchCut(jobs, batchSize)
			b := batch{signal: s, jobs: jobs[:n:n]}
			b.text = textOf(b.jobs)
			if n > 1 {
				b.formLen = formLenOf(b.text)
			}
			p.batches = append(p.batches, b)
			jobs = jobs[n:]
		}
	}
	return p
}

// Queries returns the plan's query count per cycle (without fallbacks, and
// without StuckWaiting, asked only for targets with stuck pods). It counts
// the Stuck batches, which Run sends only once per StuckWindow/4.
func (p *Plan) Queries() int { return len(p.batches) }

// Evaluate runs the Plan of targets at t: see Run. The plan is cached and
// rebuilt only when the targets, Options or BatchSize change (compared by
// content, about 1 ms for 1,000 targets), so a loop may call Evaluate every
// interval with the same targets.
func (e *Evaluator) Evaluate(ctx context.Context, targets []Target, t time.Time) ([]Result, Stats) {
	key := planKey(targets, e.Options, e.BatchSize)
	e.mu.Lock()
	if e.plan == nil || e.planKey != key {
		e.plan, e.planKey = NewPlan(targets, e.Options, e.BatchSize), key
	}
	p := e.plan
	e.mu.Unlock()
	return e.Run(ctx, p, t)
}

// planKey is a content key of everything a Plan depends on.
func planKey(targets []Target, o Options, batch int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%+v|%d\n", o, batch)
	for _, t := range targets {
		fmt.Fprintf(&b, "%q|%d|%g|%d|%t|%t|%t|%q|%q|", t.Name, t.Server, t.TTFTQuantile, t.TTFTWindow, t.CPU, t.Stuck, t.Duplicates, t.Replicas, t.Held)
		fmt.Fprintf(&b, "%g|%d|%g|%d|%t|%t|", t.QueueTimeQuantile, t.QueueTimeWindow, t.ITLQuantile, t.ITLWindow, t.Demand, t.FlowControlHeld)
		fmt.Fprintf(&b, "%d|", t.FlowQueueLookback)
		for _, m := range t.Selector {
			b.WriteString(m.String())
			b.WriteByte(',')
		}
		for _, s := range Signals() {
			if q, ok := t.Overrides[s]; ok {
				fmt.Fprintf(&b, "|%d=%q", s, q)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Run evaluates every signal of every target of p at t. Each signal is one
// query per batch of targets (see docs/promql.md, "Query count"); a batch
// that Prometheus rejects (bad_data) is retried target by target so that one
// broken user query does not blind the others, at most once per target per
// backoff period (runBounded). Results are in target order.
// Evaluator.Options and BatchSize are not used: p carries them.
//
// The Stuck signal is defined over Options.StuckWindow (2 min), so its
// batches are sent at most once per StuckWindow/4 (30 s by default) per
// Plan: at the first Run, then at the first Run whose t is at least that
// long after the last read (or before it: a clock that went back). In
// between, each target's last Stuck count, or its error, is reused (not its
// warnings, reported once). The cadence is measured on t only (never the
// wall clock) and restarts with a new Plan. StuckWaiting (the second
// round) is still asked every Run for the targets whose count, read or
// reused, is > 0, so the stuck pods' waiting subtracted stays current.
func (e *Evaluator) Run(ctx context.Context, p *Plan, t time.Time) ([]Result, Stats) {
	targets := p.targets
	results := make([]Result, len(targets))
	for i, tg := range targets {
		results[i] = Result{Target: tg.Name, Errors: map[Signal]error{}}
		if err := p.buildErrs[i]; err != nil {
			for _, s := range Signals() {
				results[i].Errors[s] = &QueryError{Reason: ReasonInvalidQuery, Err: err}
			}
		}
	}

	answers := make([][]answer, len(p.batches))
	queries := make([]int, len(p.batches))
	par := e.Parallel
	if par <= 0 {
		par = 4
	}
	readStuck := p.stuck.due(t, p.stuckEvery)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for bi, b := range p.batches {
		if b.signal == Stuck && !readStuck {
			continue // reused below
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			defer crashlog.Recover()
			answers[bi], queries[bi] = e.runBounded(ctx, p.fallback, b.signal, b.jobs, b.text, b.formLen, t)
		}()
	}
	wg.Wait()

	values := make([]sigValues, len(targets))
	var st Stats
	var stuckAnswers []targetAnswer
	for bi, ans := range answers {
		st.Queries += queries[bi]
		s, jobs := p.batches[bi].signal, p.batches[bi].jobs
		for k, a := range ans {
			ti := jobs[k].target
			if s == Stuck && readStuck {
				stuckAnswers = append(stuckAnswers, targetAnswer{ti, answer{value: a.value, err: a.err}})
			}
			results[ti].Warnings = append(results[ti].Warnings, a.warn...)
			if a.err != nil {
				results[ti].Errors[s] = a.err
				continue
			}
			values[ti].put(s, a.value)
		}
	}
	if readStuck {
		p.stuck.store(t, stuckAnswers)
	} else {
		answers, readAt := p.stuck.load()
		for _, a := range answers {
			if a.err != nil {
				results[a.target].Errors[Stuck] = reused(a.err, readAt)
				continue
			}
			values[a.target].put(Stuck, a.value)
		}
	}
	st.Queries += e.stuckRound(ctx, p, t, values, results)
	details, sent := e.poolSeriesRound(ctx, p, t, values)
	st.Queries += sent
	st.Queries += e.negativeRound(ctx, p, t, results)
	for i, tg := range targets {
		if p.buildErrs[i] != nil {
			results[i].Values = unknownValues()
			results[i].Stuck = math.NaN()
			continue
		}
		results[i].Duplicated = math.NaN()
		// The running (else waiting) family has series under the selector,
		// liveness aside (the Duplicated count reads them without a join).
		_, seriesExist := values[i].get(Duplicated)
		if p.signals[i].has(Duplicated) {
			if ReasonOf(results[i].Errors[Duplicated]) == ReasonEmpty {
				delete(results[i].Errors, Duplicated) // no series: nothing to fold
				values[i].put(Duplicated, 0)
			}
			if v, ok := values[i].get(Duplicated); ok {
				results[i].Duplicated = v
			}
		}
		check(tg, p.signals[i], &values[i], results[i].Errors)
		if p.signals[i].has(PoolSeries) {
			// Two pools' EPPs (onePool) said so already; else one page's
			// doubled pool gauge or flow-control series of two pools.
			var d *poolSeriesDetail
			if n, _ := values[i].get(Pools); !(n > 1) {
				if dd, ok := details[i]; ok {
					d = &dd
				}
			}
			onePoolSeries(tg, p.signals[i], &values[i], results[i].Errors, d)
		}
		flowHeldHint(tg, results[i].Errors)
		replicasHint(tg, &values[i], results[i].Errors)
		rateHints(tg, p.opts, &values[i], results[i].Errors)
		if seriesExist && liveHints(tg, p.signals[i], p.opts, results[i].Errors) {
			// None of the series is a live pod's: what the count folded
			// is no copies of one pod (without a pod label, every pod's
			// series fold into one), nothing to say of duplicates.
			results[i].Duplicated = math.NaN()
		}
		results[i].Values = values[i].all()
		results[i].Stuck = math.NaN()
		if p.signals[i].has(Stuck) {
			results[i].Stuck = results[i].Values[Stuck]
		}
	}
	return results, st
}

// stuckRound queries StuckWaiting for the targets whose Stuck count is > 0
// (usually none: then no query is sent), batched like the first round, and
// records the answers in values and results. The stuck-pods expression is
// long (about 450 bytes per target) and stuck pods are rare, so the waiting
// of stuck pods is not asked for every target every cycle. It returns the
// queries sent.
func (e *Evaluator) stuckRound(ctx context.Context, p *Plan, t time.Time, values []sigValues, results []Result) int {
	var jobs []job
	for i, tg := range p.targets {
		if p.buildErrs[i] != nil || !p.signals[i].has(StuckWaiting) || !(values[i].v[Stuck] > 0) {
			continue
		}
		exprs, err := buildExprs(tg, p.opts)
		ex := exprs[StuckWaiting]
		if err != nil || ex == nil {
			continue
		}
		jobs = append(jobs, job{target: i, text: verbatim(ex.String()), scalar: ex.Type() == parser.ValueTypeScalar})
	}
	sent := 0
	for len(jobs) > 0 {
		n := batchCut(jobs, p.batchSize)
		b := jobs[:n:n]
		ans, q := e.runBounded(ctx, p.fallback, StuckWaiting, b, textOf(b), 0, t)
		sent += q
		for k, a := range ans {
			ti := b[k].target
			results[ti].Warnings = append(results[ti].Warnings, a.warn...)
			if a.err != nil {
				results[ti].Errors[StuckWaiting] = a.err
				continue
			}
			values[ti].put(StuckWaiting, a.value)
		}
		jobs = jobs[n:]
	}
	return sent
}

// runBatch sends q (the text of jobs: textOf) once (formLen: its
// form-encoded length when known, else 0) and returns each job's answer
// (out[k] for jobs[k]) and, when the whole query failed, its error
// (runBounded retries a rejected batch target by target). Errors name the
// query by q.short().
func (e *Evaluator) runBatch(ctx context.Context, jobs []job, q queryText, formLen int, t time.Time) ([]answer, *QueryError) {
	out := make([]answer, len(jobs))
	var (
		vec    model.Vector
		tagged []taggedValue
		warn   []string
		err    error
	)
	if ba, ok := e.API.(batchAPI); ok && len(jobs) > 1 {
		tagged, warn, err = ba.instantTagged(ctx, q, formLen, t)
	} else {
		vec, warn, err = e.API.Instant(ctx, textString(q), t)
	}
	query := q.short()
	if err != nil {
		qe := asQueryError(err, query)
		for k, j := range jobs {
			out[k] = answer{value: math.NaN(), err: qe, warn: warn}
			if len(jobs) > 1 {
				out[k].err = ownQuery(qe, j, len(jobs))
			}
		}
		return out, qe
	}
	if w, ok := Partial(warn); ok {
		// Not garbage by its shape, but a part of the series is missing:
		// read as complete, a store outage reads as a drop in load.
		for k, j := range jobs {
			q := query
			if len(jobs) > 1 {
				q = j.short()
			}
			out[k] = answer{value: math.NaN(), err: partialError(q, w), warn: warn}
		}
		return out, nil
	}
	if tagged == nil {
		tagged = make([]taggedValue, len(vec))
		for i, s := range vec {
			tagged[i] = taggedValue{target: tagIndex(string(s.Metric[TargetLabel])), value: float64(s.Value)}
		}
	}
	if len(jobs) == 1 {
		var b branchValues
		for _, s := range tagged {
			b.add(s.value)
		}
		v, err := b.single(query)
		out[0] = answer{value: v, err: err, warn: warn}
		return out, nil
	}
	// The values of branch k. Samples without the label, or with a value
	// that is not a branch index, belong to no target.
	byIndex := make([]branchValues, len(jobs))
	for _, s := range tagged {
		if s.target >= 0 && s.target < len(jobs) {
			byIndex[s.target].add(s.value)
		}
	}
	for k, j := range jobs {
		v, err := byIndex[k].single(j.short())
		out[k] = answer{value: v, err: err, warn: warn}
	}
	return out, nil
}

// short is what an error about j's own query quotes: its text's first
// errQueryLen bytes (QueryError.Error prints at most 200).
func (j job) short() string {
	if j.text.rawLen() <= errQueryLen {
		return j.text.String()
	}
	return j.text.String()[:errQueryLen]
}

// ownQuery is a batch's error qe as target j's: the same reason and cause,
// quoting j's own query (the batch's text begins with another target's,
// which an operator would read as that target's fault), the batch named in
// the cause. n is the batch's number of targets.
func ownQuery(qe *QueryError, j job, n int) *QueryError {
	return &QueryError{Reason: qe.Reason, Query: j.short(), Err: batchError{n: n, err: qe.Err}}
}

// batchError is the cause of a failed batch of n targets' queries, as one
// of them carries it.
type batchError struct {
	n   int
	err error
}

func (e batchError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("the batched query of %d targets failed", e.n)
	}
	return fmt.Sprintf("%v (the batched query of %d targets, this target's query shown)", e.err, e.n)
}

func (e batchError) Unwrap() error { return e.err }

// batchCut is how many of jobs go into the next batch: at most batchSize,
// and no more than fit in MaxBatchBytes with their wrapping (at least one).
func batchCut(jobs []job, batchSize int) int {
	n := min(batchSize, len(jobs))
	if n == 1 {
		return 1
	}
	size, wrap := 0, batchWrap(n)
	for k := range n {
		size += jobs[k].text.rawLen() + wrap
		if size > MaxBatchBytes && k > 0 {
			return k
		}
	}
	return n
}

// branchValues folds the values of one target's series in answer order:
// how many, the first, and the first that differs from it.
type branchValues struct {
	n      int
	first  float64
	other  float64
	differ bool
}

func (b *branchValues) add(w float64) {
	switch {
	case b.n == 0:
		b.first = w
	case !b.differ && w != b.first && !(math.IsNaN(w) && math.IsNaN(b.first)):
		b.other, b.differ = w, true
	}
	b.n++
}

// single is the one value of the series: no sample is ReasonEmpty;
// several samples must agree (HA duplicates of one series do), else
// ReasonAmbiguous; NaN, ±Inf or a negative value is ReasonNaN.
func (b *branchValues) single(q string) (float64, error) {
	if b.n == 0 {
		return math.NaN(), &QueryError{Reason: ReasonEmpty, Query: q, Err: fmt.Errorf("no series")}
	}
	v := b.first
	if b.differ {
		return math.NaN(), &QueryError{Reason: ReasonAmbiguous, Query: q,
			Err: fmt.Errorf("%d series with different values (%v and %v); aggregate the query to one series", b.n, v, b.other)}
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return math.NaN(), &QueryError{Reason: ReasonNaN, Query: q, Err: fmt.Errorf("value %v", v)}
	}
	if v < 0 { // every signal is a count, a rate, a fraction or a duration
		return math.NaN(), &QueryError{Reason: ReasonNaN, Query: q, Err: negativeValue(v)}
	}
	return v, nil
}

func asQueryError(err error, q string) *QueryError {
	if qe, ok := err.(*QueryError); ok {
		return qe
	}
	return &QueryError{Reason: classify(err), Query: q, Err: err}
}

// check records ReasonUnsupported for the signals tg asked for but its
// profile lacks, drops (with an error) values out of their signal's range,
// reads a count() or sum() of no pod (Unready, Stuck, StuckWaiting,
// Queued: no series) as 0, and, without a replicas query, takes Current from the pods
// seen (Reporting + Unready); when Current stays unknown, errs[Current]
// says why.
func check(tg Target, has signalSet, vals *sigValues, errs map[Signal]error) {
	get := func(s Signal) float64 {
		if v, ok := vals.get(s); ok {
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
	if tg.QueueTimeQuantile != 0 {
		expected = append(expected, QueueTime)
	}
	if tg.ITLQuantile != 0 {
		expected = append(expected, ITL)
	}
	if tg.Demand {
		expected = append(expected, Arrivals, PromptTokens, GenerationTokens)
	}
	for _, s := range expected {
		if !has.has(s) {
			errs[s] = &QueryError{Reason: ReasonUnsupported,
				Err: fmt.Errorf("server %s has no metric family for %s", tg.Server, s)}
		}
	}
	if has.has(Pools) && onePool(tg, has, vals, errs) {
		return
	}
	// A KV cache usage is a fraction; a pod count or a replica count a
	// Kubernetes int32 (1e19 would overflow an int).
	if v := get(KV); v > 1 {
		vals.drop(KV)
		errs[KV] = &QueryError{Reason: ReasonNaN, Err: fmt.Errorf("kv cache usage %v above 1 (a fraction of the cache)", v)}
	}
	// A hit fraction outside 0..1 (0/0 is NaN, hits over no queries +Inf)
	// pairs counters that do not belong together: unknown.
	if v := get(PrefixHit); v < 0 || v > 1 {
		vals.drop(PrefixHit)
		errs[PrefixHit] = &QueryError{Reason: ReasonNaN, Err: fmt.Errorf("prefix cache hit fraction %v outside 0..1", v)}
	}
	// A sum of requests above MaxInFlight is no count of requests (a
	// counter read as a gauge, a broken exporter): scrape refuses such a
	// page, backtest such a history.
	for _, s := range []Signal{Running, Waiting, StuckWaiting, Held} {
		if v := get(s); v > MaxInFlight {
			vals.drop(s)
			errs[s] = &QueryError{Reason: ReasonBadData, Err: fmt.Errorf("%s %v above %.0f requests (10,000 replicas x 2^20 sequences): not a count of requests in flight (is the query's metric a gauge of requests, summed once?)", s, v, MaxInFlight)}
		}
	}
	for _, b := range []struct {
		s    Signal
		max  float64
		what string
	}{{Arrivals, MaxArrivalRate, "requests a second"}, {PromptTokens, MaxTokenRate, "tokens a second"}, {GenerationTokens, MaxTokenRate, "tokens a second"},
		{TTFT, MaxLatency, "seconds"}, {QueueTime, MaxLatency, "seconds"}, {ITL, MaxLatency, "seconds"}} {
		if v := get(b.s); v > b.max {
			vals.drop(b.s)
			errs[b.s] = &QueryError{Reason: ReasonBadData, Err: fmt.Errorf("%s %v above %g %s: no measurement (counters read as gauges, or a broken exporter?)", b.s, v, b.max, b.what)}
		}
	}
	for _, s := range []Signal{Current, Reporting, Unready, Queued} {
		if v := get(s); v > math.MaxInt32 {
			vals.drop(s)
			errs[s] = &QueryError{Reason: ReasonBadData, Err: fmt.Errorf("%s %v above max int32 (%d): not a replica or pod count", s, v, math.MaxInt32)}
		}
	}
	// count() and sum() of no pod are no series: 0 pods.
	for _, s := range []Signal{Unready, Stuck, StuckWaiting, Queued} {
		if has.has(s) && ReasonOf(errs[s]) == ReasonEmpty {
			delete(errs, s)
			vals.put(s, 0)
		}
	}
	if cur, ok := vals.get(Current); ok {
		// A workload its replicas query reads at 0 has no pod: its
		// running and waiting are 0, not unknown (a scale-to-zero target
		// idle at zero otherwise failed both reads every cycle).
		if cur == 0 {
			for _, s := range []Signal{Running, Waiting} {
				if has.has(s) && ReasonOf(errs[s]) == ReasonEmpty {
					delete(errs, s)
					vals.put(s, 0)
				}
			}
		}
		return
	}
	pods := 0.0 // reporting and unready pods, rounded
	for _, s := range []Signal{Reporting, Unready} {
		if v, ok := vals.get(s); ok {
			pods += math.Round(v)
		}
	}
	switch {
	case tg.Replicas == "" && pods > 0 && (errs[Reporting] == nil || ReasonOf(errs[Reporting]) == ReasonEmpty):
		// No replicas query: the pods seen (all of them may be loading).
		vals.put(Current, pods)
	case errs[Current] == nil:
		err := errs[Reporting]
		if err == nil {
			err = &QueryError{Reason: ReasonEmpty, Err: fmt.Errorf("no replicas query and no reporting pods")}
		}
		errs[Current] = err
	}
}

// onePool reads Pools (no series: none) and, when the selector of an EPP
// target matches more than one pool's Endpoint Picker, makes every signal
// but the target's own queries unknown, ReasonAmbiguous, as embedded mode
// refuses pages of two pools: max() of their gauges put one pool's ready
// count with the other's averages. It reports whether it did.
func onePool(tg Target, has signalSet, vals *sigValues, errs map[Signal]error) bool {
	if ReasonOf(errs[Pools]) == ReasonEmpty {
		delete(errs, Pools)
		vals.put(Pools, 0)
	}
	n, ok := vals.get(Pools)
	if !ok || n <= 1 {
		return false
	}
	err := &QueryError{Reason: ReasonAmbiguous, Err: fmt.Errorf(
		"the selector matches the Endpoint Pickers of %.0f InferencePools (%s labels of %s or %s): one pool's gauges would be read with another's; give a selector that matches one pool's EPP (its service or job label)",
		n, poolLabel, modelserver.EPPFamilies().ReadyEndpoints.Current, modelserver.EPPFamilies().ReadyEndpoints.Deprecated)}
	unknownBut(tg, has, vals, errs, err, Pools, PoolSeries)
	return true
}

// replicasHint says why tg's replicas query found no series. Its current
// replicas are then unknown, so a target never read is never decided (no
// infscale_desired_replicas series), and "no series" alone named a query,
// not what to do: the usual cause is a Prometheus without
// kube-state-metrics, or with it under other labels than the query's.
// The signal stays unknown; its error says what to check or change.
func replicasHint(tg Target, vals *sigValues, errs map[Signal]error) {
	qe, ok := errs[Current].(*QueryError)
	if tg.Replicas == "" || !ok || qe.Reason != ReasonEmpty {
		return
	}
	pods := ""
	if v, ok := vals.get(Reporting); ok && v > 0 {
		pods = fmt.Sprintf(", while %.0f pod(s) report", v)
	}
	errs[Current] = &QueryError{Reason: qe.Reason, Query: qe.Query, Err: fmt.Errorf(
		"%w%s: the target's replicas: query matches nothing, so its current replicas are unknown and it is not decided: "+
			"does this Prometheus hold the series it reads (kube_deployment_spec_replicas and the other kube_* gauges come from kube-state-metrics), "+
			"under the query's labels? Without kube-state-metrics, leave replicas: out (the pods reporting are the current replicas) "+
			"or name the workload with scaleTargetRef (read from the Kubernetes API)",
		qe.Err, pods)}
}

// rateHints says why a rate signal of tg (a rate() or a histogram
// quantile over one) found no series while pods report their gauges:
// "no series" alone read as a family the server lacks, while the usual
// cause is a scrape interval of half the window or more. A rate needs two
// samples inside its window, and Prometheus 3 leaves out the window's
// start, so a 1m window over pods scraped every 60 s holds one sample and
// every demand rate is empty, cycle after cycle (TestRateWindowHint). The
// same emptiness, for one window, follows a start of Prometheus or of the
// pods (serve and Prometheus started together): the error names both. The
// signal stays unknown; its error says what to change.
func rateHints(tg Target, o Options, vals *sigValues, errs map[Signal]error) {
	o = o.withDefaults()
	pods, ok := vals.get(Reporting)
	if !ok || !(pods > 0) {
		return
	}
	for _, r := range []struct {
		s Signal
		w time.Duration
	}{{Arrivals, o.DemandWindow}, {PromptTokens, o.DemandWindow}, {GenerationTokens, o.DemandWindow}, {PrefixHit, o.DemandWindow},
		{TTFT, tg.TTFTWindow}, {QueueTime, tg.QueueTimeWindow}, {ITL, tg.ITLWindow}, {CPU, o.CPUWindow}} {
		qe, ok := errs[r.s].(*QueryError)
		if _, own := tg.Overrides[r.s]; !ok || own || qe.Reason != ReasonEmpty || r.w <= 0 {
			continue
		}
		errs[r.s] = &QueryError{Reason: qe.Reason, Query: qe.Query, Err: fmt.Errorf(
			"%w, while %.0f pod(s) report their gauges: no counter of the family has two samples inside the %s window: its pods are scraped every %s or more (a rate needs two samples inside its window, and Prometheus 3 leaves out the window's start: scrape them every %s or less), or Prometheus has scraped them for less than the window (it or the pods started under %s ago: this passes by itself), or the family is absent (another version of the server, or before the first request it counts)",
			qe.Err, pods, model.Duration(r.w), model.Duration(r.w/2), model.Duration(r.w/4), model.Duration(r.w))}
	}
}

// liveHints says why the live per-pod signals of tg found no series while
// the family has series under its selector (the Duplicated count, which
// reads the running family, else the waiting one, without the liveness
// join): none is of a pod whose up is 1. Series without a pod label (a
// scrape config that names it otherwise, such as kubernetes_pod_name, or
// none) cannot be told apart by pod and join nothing; or every pod's
// scrape is down. "no series" alone read as a family the server lacks.
// Only when that family's own total (running, else waiting) is empty; it
// reports whether it was.
func liveHints(tg Target, has signalSet, o Options, errs map[Signal]error) bool {
	o = o.withDefaults()
	if o.Liveness != LiveUp || tg.Server == modelserver.EPP {
		return false
	}
	empty := func(s Signal) (*QueryError, bool) {
		qe, ok := errs[s].(*QueryError)
		_, own := tg.Overrides[s]
		return qe, ok && !own && qe.Reason == ReasonEmpty
	}
	anchor := Running
	if !has.has(Running) {
		anchor = Waiting
	}
	if _, ok := empty(anchor); !ok {
		return false
	}
	for _, s := range []Signal{Running, Waiting, Reporting, KV} {
		qe, ok := empty(s)
		if !ok {
			continue
		}
		errs[s] = &QueryError{Reason: qe.Reason, Query: qe.Query, Err: fmt.Errorf(
			"%w of a live pod, though the family has series under the selector: a series counts when its %s label names a pod whose up is 1; do the series and up carry a %s label (a scrape config that names it otherwise, e.g. kubernetes_pod_name, or none, cannot tell pods apart: relabel __meta_kubernetes_pod_name to %s, as ServiceMonitors and PodMonitors do)? else every pod's scrape is down",
			qe.Err, o.PodLabel, o.PodLabel, o.PodLabel)}
	}
	return true
}
