package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
)

// PrometheusSource reads every target with pkg/promql's batched Evaluate:
// one query per signal for all targets (the query count does not grow with
// pods or targets up to promql.DefaultBatchSize targets).
type PrometheusSource struct {
	// Evaluator runs the queries.
	Evaluator *promql.Evaluator
	// client is Evaluator's API when NewPrometheusSource built it: its
	// answers tell Prometheus's clock (evalTime). Nil: serve's clock.
	client *promql.Client

	mu      sync.Mutex
	built   map[*config.Target]promql.Target
	lastIn  []*config.Target // the targets of the last Read, and their conversion
	lastOut []promql.Target
	queries int
	// plan is the Plan of planFor (a lastOut) under planOpts and
	// planBatch: while promTargets returns the same slice it is reused
	// without Evaluate's content key (3 MB of text a cycle at 10,000
	// targets).
	plan      *promql.Plan
	planFor   []promql.Target
	planOpts  promql.Options
	planBatch int

	diag diagnoses
}

// diagnoseEvery is how often a target whose reads come back empty has its
// selector diagnosed (one label values request, off the cycle);
// diagnoseAtOnce bounds the requests in flight (a config whose thousands
// of selectors all match nothing asks them a few at a time, cycle after
// cycle, not all at once).
const (
	diagnoseEvery  = 10 * time.Minute
	diagnoseAtOnce = 4
)

// diagnoses are the selector diagnoses under way or done, by target key.
type diagnoses struct {
	mu       sync.Mutex
	asked    map[string]time.Time // when each target's was last asked for
	ready    map[string]string    // done, not yet given to a Reading
	inFlight int
	wg       sync.WaitGroup
}

// diagnose gives the diagnosis ready for t (its selector's matchers sel)
// when r still has an empty read of a signal of t's selector (dropped
// otherwise), and when r has an empty read of a signal of t's selector (not a
// replicas query read at 0: a target at zero replicas has no series)
// starts one off the cycle, at most once per diagnoseEvery: its names over
// the 5 minutes before now (Prometheus's lookback) with
// promql.DiagnoseSelector. Nothing when the client lists no names.
func (s *PrometheusSource) diagnose(t *config.Target, sel []*labels.Matcher, r *Reading, now time.Time) {
	n, ok := s.Evaluator.API.(promql.Namer)
	if !ok || len(sel) == 0 {
		return
	}
	d := &s.diag
	d.mu.Lock()
	defer d.mu.Unlock()
	key := t.Key()
	empty := false
	for _, e := range r.Errors {
		empty = empty || (e.Signal != promql.Current.String() && e.Reason == promql.ReasonEmpty.String())
	}
	if why, ok := d.ready[key]; ok {
		// Given only while the reads are still empty: one that found the
		// series since (Prometheus's first scrapes after serve's start)
		// made it stale, and "its labels match nothing" beside a decision
		// on those series misled.
		if empty {
			r.Diagnosis = why
		}
		delete(d.ready, key)
	}
	if !empty || (r.CurrentKnown && r.Obs.Current == 0) || now.Sub(d.asked[key]) < diagnoseEvery || d.inFlight >= diagnoseAtOnce {
		return
	}
	if d.asked == nil {
		d.asked, d.ready = map[string]time.Time{}, map[string]string{}
	}
	// An entry diagnoseEvery old stops nothing: forgotten, with a
	// diagnosis its target was not read again to be given (removed by a
	// reload), so that the maps hold the targets of the last
	// diagnoseEvery, not every target serve ever had.
	for k, at := range d.asked {
		if now.Sub(at) >= diagnoseEvery {
			delete(d.asked, k)
			delete(d.ready, k)
		}
	}
	d.asked[key] = now
	d.inFlight++
	d.wg.Add(1)
	server := t.Server
	go func() {
		defer d.wg.Done()
		defer crashlog.Recover()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		why := promql.DiagnoseSelector(ctx, n, server, sel, now.Add(-5*time.Minute), now, "in the last 5 minutes")
		d.mu.Lock()
		defer d.mu.Unlock()
		d.inFlight--
		if why != "" {
			d.ready[key] = why
		}
	}()
}

// NewPrometheusSource builds the client from the config's prometheus block
// (URL, timeout, Prometheus's own HTTP client config for auth and TLS, and
// sigv4 signing).
func NewPrometheusSource(pc config.Prometheus) (*PrometheusSource, error) {
	rt, err := pc.RoundTripper()
	if err != nil {
		return nil, fmt.Errorf("prometheus http client: %w", err)
	}
	return NewPrometheusSourceFromRoundTripper(pc.URL, rt, time.Duration(pc.Timeout))
}

// NewPrometheusSourceFromRoundTripper is NewPrometheusSource with a given
// transport (nil: the default).
func NewPrometheusSourceFromRoundTripper(url string, rt http.RoundTripper, timeout time.Duration) (*PrometheusSource, error) {
	// Its range queries (the rebuild) read one of serve's own series a
	// chunk: the instant bound, not a week's history's 2 GiB.
	c, err := promql.NewClient(promql.ClientConfig{URL: url, RoundTripper: rt, Timeout: timeout, TimeoutName: "prometheus.timeout", MaxRangeAnswerBytes: promql.MaxInstantAnswerBytes})
	if err != nil {
		return nil, err
	}
	return &PrometheusSource{Evaluator: &promql.Evaluator{API: c}, client: c}, nil
}

// Name is "prometheus".
func (s *PrometheusSource) Name() string { return "prometheus" }

// Queries returns the number of HTTP queries the last Read sent.
func (s *PrometheusSource) Queries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries
}

// clockTolerance is how far serve's clock may be ahead of Prometheus's
// (promql.Client.ServerClock, to the second) and the queries still be
// evaluated at serve's now; clockWarn how far apart either way before the
// loop warns.
const (
	clockTolerance = 2 * time.Second
	clockWarn      = 10 * time.Second
)

// evalTime is the time a cycle at now evaluates its queries at: now, or
// Prometheus's now when serve's clock is ahead of Prometheus's by more
// than clockTolerance. Asked at serve's now, Prometheus would read its own
// future: a rate's window (1 min) would hold the samples of its first
// part only, or none 45 s ahead at a 15 s scrape (an empty read, "no
// data", at every cycle). Serve's clock behind is not moved forward (the
// Date header may be a proxy's, whose clock is not the samples'): its
// reads are that much older (infscale_prometheus_clock_offset_seconds,
// and the loop warns). Nor is it moved back more than promql.MaxAnswerSkew
// (5 min): a Date that old is a cache's without its Age, or a clock too
// far off to follow (the gauges' lookback is 5 min: nothing reads, the
// last desired is held, and the loop warns). known is false before
// Prometheus's clock is known.
func (s *PrometheusSource) evalTime(now time.Time) (at time.Time, known bool) {
	if s.client == nil {
		return now, true
	}
	off, known := s.client.ServerClock()
	if known && off < -clockTolerance && off >= -promql.MaxAnswerSkew {
		return now.Add(off), true
	}
	return now, known
}

// ClockOffset is how far Prometheus's clock is ahead of serve's (negative:
// behind), from its last answer; false before one (or without a client
// that tells it).
func (s *PrometheusSource) ClockOffset() (time.Duration, bool) {
	if s.client == nil {
		return 0, false
	}
	return s.client.ServerClock()
}

// Read evaluates all targets at now (at Prometheus's now when serve's clock
// is ahead of it: evalTime). The whole batch's duration is put on
// the first Reading only (infscale_query_duration_seconds{source="prometheus"}
// observes one Evaluate per cycle).
func (s *PrometheusSource) Read(ctx context.Context, targets []*config.Target, now time.Time) []Reading {
	start := time.Now()
	pts := s.promTargets(targets)
	plan := s.planOf(pts)
	at, known := s.evalTime(now)
	results, stats := s.Evaluator.Run(ctx, plan, at)
	if again, _ := s.evalTime(now); !known && !again.Equal(at) && ctx.Err() == nil {
		// The first answers told Prometheus's clock, behind serve's:
		// asked again at its now, so the first cycle reads as the next.
		var more promql.Stats
		results, more = s.Evaluator.Run(ctx, plan, again)
		stats.Queries += more.Queries
	}
	s.mu.Lock()
	s.queries = stats.Queries
	s.mu.Unlock()
	out := make([]Reading, len(targets))
	signals := promql.Signals()
	for i, res := range results {
		r := Reading{Obs: promObservation(res.Values, s.Evaluator.Options.DemandWindow)}
		r.CurrentKnown = res.Errors[promql.Current] == nil
		for _, w := range res.Warnings {
			if !slices.Contains(r.Warnings, w) {
				r.Warnings = append(r.Warnings, w)
			}
		}
		// A count (+Inf is garbage) of a known number of replicas: with
		// Current unknown (nothing matched) "0 stuck" would be made up,
		// as in embedded mode when no page answers.
		if r.CurrentKnown && !math.IsNaN(res.Stuck) && !math.IsInf(res.Stuck, 0) && res.Stuck >= 0 {
			// promObservation left their waiting out, and them out of
			// reporting (docs/serve.md, "Stuck engines").
			r.Stuck, r.StuckKnown = int(math.Round(min(res.Stuck, math.MaxInt32))), true
		}
		if !r.CurrentKnown {
			r.Obs.Current = 0
		}
		if targets[i].Server == modelserver.EPP && res.Values[promql.Reporting] == 0 { // the EPP's ready endpoints (NaN unknown)
			eppNoEndpoint(targets[i], &r)
		}
		if d := res.Duplicated; d > 0 && !math.IsInf(d, 1) {
			r.Duplicated = int(math.Round(min(d, math.MaxInt32)))
		}
		// histogram_quantile is NaN when no request finished in the window:
		// on an idle target that is known idleness, not a failed read.
		r.Obs.NoneFinished = promql.ReasonOf(res.Errors[promql.TTFT]) == promql.ReasonNaN
		abstains := recommend.TTFTAbstains(r.Obs)
		needed := neededSignals(targets[i])
		for _, sig := range signals {
			if sig == promql.TTFT && abstains {
				continue
			}
			if err := res.Errors[sig]; err != nil && needed&(1<<sig) != 0 {
				_, again := errors.AsType[promql.ReusedError](err)
				r.Errors = append(r.Errors, ReadError{Signal: sig.String(), Reason: promql.ReasonOf(err).String(), Err: err, Reused: again})
			}
		}
		s.diagnose(targets[i], pts[i].Selector, &r, now) // the matchers promTargets parsed
		out[i] = r
	}
	if len(out) > 0 {
		out[0].Duration = time.Since(start)
	}
	return out
}

// neededSignals are the signals whose failures count as errors for a
// target: the ones its metrics use, plus current (and reporting, its
// fallback), stuck (asked for every target), and held when it scales to
// zero; bit s set for promql.Signal s.
func neededSignals(t *config.Target) uint64 {
	n := uint64(0)
	set := func(ss ...promql.Signal) {
		for _, s := range ss {
			n |= 1 << s
		}
	}
	set(promql.Current, promql.Stuck, promql.StuckWaiting)
	for _, m := range t.Metrics {
		switch m.Type {
		case recommend.SignalQueue:
			set(promql.Running, promql.Waiting)
		case recommend.SignalWaiting:
			set(promql.Waiting)
		case recommend.SignalRunning:
			set(promql.Running)
		case recommend.SignalKV:
			set(promql.KV, promql.Reporting)
		case recommend.SignalCPU:
			set(promql.CPU, promql.Reporting)
		case recommend.SignalTTFT:
			set(promql.TTFT)
		case recommend.SignalQueueWait:
			set(promql.QueueTime)
		case recommend.SignalDemand:
			set(promql.Arrivals, promql.PromptTokens, promql.GenerationTokens)
		}
	}
	if t.Zero != nil {
		set(promql.Held)
	}
	return n
}

// promTargets converts (and caches by pointer) the config targets. The
// same targets as last time (every cycle between reloads) get the same
// slice back, which nobody modifies.
func (s *PrometheusSource) promTargets(targets []*config.Target) []promql.Target {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Equal(targets, s.lastIn) {
		return s.lastOut
	}
	next := make(map[*config.Target]promql.Target, len(targets))
	out := make([]promql.Target, len(targets))
	for i, t := range targets {
		pt, ok := s.built[t]
		if !ok {
			pt = toPromTarget(t)
		}
		next[t], out[i] = pt, pt
	}
	s.built = next
	s.lastIn, s.lastOut = slices.Clone(targets), out
	return out
}

// planOf is the Plan of pts: the last one when pts is the slice it was
// built for (promTargets returns the same slice while the targets stay)
// and the Evaluator's options and batch size are unchanged, else a new one.
func (s *PrometheusSource) planOf(pts []promql.Target) *promql.Plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.Evaluator
	same := s.plan != nil && len(pts) == len(s.planFor) && (len(pts) == 0 || &pts[0] == &s.planFor[0]) &&
		s.planBatch == e.BatchSize && reflect.DeepEqual(s.planOpts, e.Options)
	if !same {
		s.plan, s.planFor, s.planOpts, s.planBatch = promql.NewPlan(pts, e.Options, e.BatchSize), pts, e.Options, e.BatchSize
		s.planOpts.ReplicaLabels = slices.Clone(e.Options.ReplicaLabels)
	}
	return s.plan
}

// demandITLQuantile and demandWindow are the ITL quantile read beside the
// demand metric's rates and its window (the rates' promql DemandWindow).
const (
	demandITLQuantile = 0.5
	demandWindow      = time.Minute
)

// toPromTarget maps a config target to pkg/promql's; the config was
// validated, so parse errors cannot happen (a failure leaves the selector
// empty and Evaluate reports every signal as invalid_query).
func toPromTarget(t *config.Target) promql.Target {
	sel, _ := promql.ParseSelector(t.Selector)
	pt := promql.Target{Name: t.Key(), Server: t.Server, Selector: sel, Replicas: t.Replicas, Stuck: true, Duplicates: true}
	if t.Zero != nil {
		pt.Held, pt.FlowControlHeld = t.Zero.Held, t.Zero.FlowControl
		if t.Zero.FlowControl {
			pt.FlowQueueLookback = flowQueueLookback(t)
		}
	}
	for _, m := range t.Metrics {
		switch m.Type {
		case recommend.SignalTTFT:
			pt.TTFTQuantile, pt.TTFTWindow = m.Quantile, time.Duration(m.Window)
		case recommend.SignalCPU:
			pt.CPU = true
		case recommend.SignalQueueWait:
			pt.QueueTimeQuantile, pt.QueueTimeWindow = m.Quantile, time.Duration(m.Window)
		case recommend.SignalDemand:
			// The three rates, and the ITL median beside them (shown, not
			// scaled on): docs/promql.md, "Query count per cycle".
			pt.Demand = true
			pt.ITLQuantile, pt.ITLWindow = demandITLQuantile, demandWindow
		}
		if m.Query == "" {
			continue
		}
		if pt.Overrides == nil {
			pt.Overrides = map[promql.Signal]string{}
		}
		if m.Type == recommend.SignalQueueWait {
			pt.Overrides[promql.QueueTime] = m.Query
		} else if sig, err := promql.ParseSignal(m.Type.String()); err == nil {
			pt.Overrides[sig] = m.Query
		}
	}
	if t.Tune != nil {
		tunedSignals(&pt)
	}
	return pt
}

// tunedSignals adds to a target with a tune: block the signals a tuned
// candidate may decide on (tune.DefaultSpace: demand and the latency
// guards over the replay's 1-minute window), so that its shadow decision
// reads what it was tuned with.
func tunedSignals(pt *promql.Target) {
	if !pt.Demand {
		pt.Demand = true
		pt.ITLQuantile, pt.ITLWindow = demandITLQuantile, demandWindow
	}
	if pt.TTFTQuantile == 0 {
		pt.TTFTQuantile, pt.TTFTWindow = config.DefaultQuantile, time.Minute
	}
	if pt.QueueTimeQuantile == 0 {
		pt.QueueTimeQuantile, pt.QueueTimeWindow = config.DefaultQuantile, time.Minute
	}
}
