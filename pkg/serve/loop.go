package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/recommend"
)

// Loop is serve's decision loop: every Interval it reads all targets from
// Source, decides each with recommend.Decide at Now(), and exports the
// results. Only Run owns a ticker; Cycle is one pass and is what tests call.
//
// No data is not zero: an unknown signal is NaN in the Observation and the
// HPA's rules apply inside recommend.Decide (nothing valid: keep; anything
// invalid: no scale-down). When no metric of a target is known the loop
// holds the last exported desired value instead of deciding (Record.Held),
// so a lagging consumer is never scaled down by an outage.
type Loop struct {
	// Source reads the signals.
	Source Source
	// Metrics exports the results (required).
	Metrics *Metrics
	// Interval is the decision period.
	Interval time.Duration
	// Now is the clock (default time.Now); decisions receive it as `now`.
	Now func() time.Time
	// Log receives errors (rate-limited per target and reason) and scale
	// changes. Default: discard.
	Log *slog.Logger
	// Store persists each target's state (nil: no persistence).
	Store *Store
	// Audit receives one JSON line per decision (nil: none).
	Audit io.Writer
	// Rebuild, when set, rebuilds the state of a target that Store has none
	// for (Prometheus mode: Rebuilder.Rebuild over infscale's own series).
	Rebuild func(ctx context.Context, t *config.Target, now time.Time) (*Persisted, error)
	// OnDecision is called with each decision, in target order (the demo
	// prints them). Called from the loop's goroutine.
	OnDecision func(Record)
	// Writer applies the decisions of apply: true targets (nil: none is
	// written). A write happens only when the decision differs from the
	// replicas read this cycle (or they are unknown), and never for a
	// decision held on no data (Record.Held).
	Writer Writer

	tuning   *Tuning    // SetTuning's (tuning.go); nil: none
	cycleMu  sync.Mutex // serialises cycles and reloads
	decideMu sync.Mutex // held while a cycle decides (after its reads): Recent explains
	mu       sync.Mutex // guards targets and records for readers
	targets  []*target
	ready    atomic.Bool
	interval atomic.Int64 // set by SetInterval, overrides Interval
	limiter  logLimiter
	auditMu  sync.Mutex
	// state is the State every target's decision works on
	// (recommend.Decider.Scratch): they decide one at a time, under decideMu.
	state recommend.State
	// scratch holds a Snapshot's maps between targets of a cycle
	// (Metrics.Record keeps none of them).
	scratch struct {
		signals map[string]float64
		raw     map[string]int
		names   []string
	}
}

// SetConfig (re)builds the targets from cfg, keeping the state, last
// desired value and recent decisions of targets whose name is unchanged;
// targets no longer configured lose their series. New targets restore their
// state from Store when it has one. It waits for a running cycle to finish.
func (l *Loop) SetConfig(cfg *config.File) error {
	return l.SetConfigContext(context.Background(), cfg)
}

// SetConfigContext is SetConfig whose state restores (Rebuild's queries)
// end with ctx: a stop during serve's startup rebuild ends it at once.
func (l *Loop) SetConfigContext(ctx context.Context, cfg *config.File) error {
	next := make([]*target, 0, len(cfg.Targets))
	for i := range cfg.Targets {
		p, err := cfg.Targets[i].Policy()
		if err != nil {
			return fmt.Errorf("target %q: %w", cfg.Targets[i].Name, err)
		}
		t := &target{cfg: cfg.Targets[i], policy: p}
		t.run.Scratch = &l.state
		next = append(next, t)
	}
	l.cycleMu.Lock()
	defer l.cycleMu.Unlock()
	old := map[string]*target{}
	for _, t := range l.targets {
		old[t.cfg.Name] = t
	}
	for _, t := range next {
		if o, ok := old[t.cfg.Name]; ok {
			t.run, t.recent, t.nRecent, t.oldest, t.newest = o.run, o.recent, o.nRecent, o.oldest, o.newest
			delete(old, t.cfg.Name)
			continue
		}
		l.Metrics.Init(t.cfg.Name)
		if err := l.restore(ctx, t); errors.Is(err, ErrStateTooOld) {
			l.logger().Info("state file ignored; starting fresh", "target", t.cfg.Name, "err", err)
		} else if errors.Is(err, context.Canceled) {
			l.logger().Info("state not restored: stopping", "target", t.cfg.Name) // serve's stop ended the rebuild
		} else if err != nil {
			l.Metrics.QueryError(t.cfg.Name, "state_read")
			l.logger().Error("state not restored; starting fresh", "target", t.cfg.Name, "err", err)
		}
	}
	for name := range old {
		l.Metrics.Forget(name)
	}
	l.mu.Lock()
	l.targets = next
	l.mu.Unlock()
	l.tuning.setTargets(next)
	return nil
}

// restore loads a new target's state from Store, else from Rebuild.
func (l *Loop) restore(ctx context.Context, t *target) error {
	var ps *Persisted
	from := "state dir"
	if l.Store != nil {
		var err error
		if ps, err = l.Store.Load(t.cfg.Name); err != nil {
			return err
		}
	}
	if ps == nil && l.Rebuild != nil {
		var err error
		from = "prometheus"
		if ps, err = l.Rebuild(ctx, &t.cfg, l.now()); err != nil {
			return err
		}
	}
	if ps == nil {
		return nil
	}
	desired := t.run.Restore(&t.policy, ps.Desired, ps.Current, ps.State, l.now())
	l.Metrics.Restore(t.cfg.Name, desired)
	l.logger().Info("state restored", "target", t.cfg.Name, "from", from, "desired", desired, "saved_desired", ps.Desired, "saved_at", ps.SavedAt)
	return nil
}

func (l *Loop) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Loop) logger() *slog.Logger {
	if l.Log != nil {
		return l.Log
	}
	return slog.New(slog.DiscardHandler)
}

// SetSource swaps the source between cycles (config reload); a source
// that is a Writer becomes the Writer too.
func (l *Loop) SetSource(s Source) {
	l.cycleMu.Lock()
	defer l.cycleMu.Unlock()
	l.Source = s
	l.Writer = writerOf(s)
}

// SetInterval changes the period; Run picks it up at its next tick.
func (l *Loop) SetInterval(d time.Duration) {
	if d > 0 {
		l.interval.Store(int64(d))
	}
}

func (l *Loop) period() time.Duration {
	if d := l.interval.Load(); d > 0 {
		return time.Duration(d)
	}
	return l.Interval
}

// Ready reports whether a cycle has completed with at least one decision
// made on known signals (/readyz).
func (l *Loop) Ready() bool { return l.ready.Load() }

// Run runs a cycle now and then every Interval until ctx is done.
func (l *Loop) Run(ctx context.Context) error {
	every := l.period()
	if every <= 0 {
		return fmt.Errorf("serve: interval must be positive, got %v", every)
	}
	l.Cycle(ctx)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			l.Cycle(ctx)
			if d := l.period(); d != every {
				every = d
				tick.Reset(every)
			}
		}
	}
}

// Cycle reads every target once, decides and exports. A cycle is bounded by
// Interval (its reads are cancelled after it). When ctx ends during the
// reads (serve stopping) the cycle is dropped: reads the stop cut short are
// not read errors, and nothing is decided, exported or written from them.
func (l *Loop) Cycle(ctx context.Context) {
	l.cycleMu.Lock()
	defer l.cycleMu.Unlock()
	start := time.Now()
	now := l.now()
	l.mu.Lock()
	targets := l.targets
	l.mu.Unlock()
	if len(targets) == 0 {
		return
	}
	stopping := ctx
	if d := l.period(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	cfgs := make([]*config.Target, len(targets))
	for i, t := range targets {
		cfgs[i] = &t.cfg
	}
	readings := l.Source.Read(ctx, cfgs, now)
	if stopping.Err() != nil {
		return
	}
	l.decideMu.Lock()
	defer l.decideMu.Unlock()
	anyValid := false
	for i, t := range targets {
		rd := readings[i]
		l.Metrics.ObserveQuery(l.Source.Name(), rd.Duration)
		for _, e := range rd.Errors {
			l.Metrics.QueryError(t.cfg.Name, e.Reason)
			l.limiter.log(l.logger(), now, t.cfg.Name, e)
		}
		l.logStuck(now, t.cfg.Name, rd)
		l.noteDuplicates(t, rd)
		rec, decided, valid := l.decide(t, rd, now)
		if !decided {
			continue
		}
		if t.cfg.PodDeletionCost && rec.Observed != nil && rec.Desired < *rec.Observed {
			l.setCosts(ctx, t, rd, now) // before the write lowers spec.replicas
		}
		if t.cfg.Apply && l.Writer != nil {
			l.write(ctx, t, &rec, now)
		}
		anyValid = anyValid || valid
		l.mu.Lock()
		t.remember(rec)
		l.mu.Unlock()
		l.audit(rec, now)
		if l.Store != nil {
			if err := l.Store.Save(t.cfg.Name, Persisted{Desired: t.run.Desired, Current: currentOrUnknown(t), State: t.run.State, SavedAt: now}); err != nil {
				l.Metrics.QueryError(t.cfg.Name, "state_write")
				l.limiter.logf(l.logger(), now, t.cfg.Name, "state_write", "state write failed", err)
			}
		}
		if l.OnDecision != nil {
			l.OnDecision(rec)
		}
	}
	if anyValid {
		l.ready.Store(true)
	}
	l.Metrics.Cycle(time.Since(start))
}

func currentOrUnknown(t *target) int {
	if t.run.HasCurrent {
		return t.run.Current
	}
	return -1
}

// decide makes one target's decision from its reading and exports it. It
// returns false when no decision can be made yet (current replicas never
// known and nothing decided before).
func (l *Loop) decide(t *target, rd Reading, now time.Time) (Record, bool, bool) {
	observed := -1 // replicas read this cycle, for the current_replicas series
	if rd.CurrentKnown {
		observed = rd.Obs.Current
	}
	prev, hadPrev := t.run.Desired, t.run.HasDesired
	// The steps' words are most of a decision's cost: written each cycle
	// only for the audit log and OnDecision, else when /debug/decisions
	// asks for them (Recent).
	t.run.Quiet = l.Audit == nil && l.OnDecision == nil
	// recommend.Decider: current from the previous desired without a replicas
	// query, the last desired held on no data (the replay runs the same).
	reading := recommend.Reading{Obs: rd.Obs, CurrentKnown: rd.CurrentKnown, SpecFollows: t.cfg.Replicas == "" && t.cfg.ScaleTargetRef == nil}
	d, decided, held := t.run.Decide(l.tuning.policyFor(t.cfg.Name, &t.policy), reading, now)
	if decided {
		l.tuning.shadow(t.cfg.Name, reading, d.Current, now) // the candidate on the same observation
	}
	if !decided {
		l.Metrics.Record(Snapshot{Target: t.cfg.Name, At: now, Signals: l.signalMap(signalsOf(rd.Obs)), Stuck: rd.Stuck, StuckKnown: rd.StuckKnown})
		return Record{}, false, false
	}
	valid := false
	if l.scratch.raw == nil {
		l.scratch.raw = map[string]int{}
	}
	raw, names := l.scratch.raw, l.scratch.names[:0]
	clear(raw)
	for _, r := range d.Raw {
		names = append(names, r.Signal.String())
		if r.Valid {
			valid = true
			raw[r.Signal.String()] = r.Replicas
		}
	}
	if !hadPrev {
		// The first decision changes the replicas the target ran (current):
		// 1 -> 5 at start is a scale-up like any other.
		prev, hadPrev = d.Current, true
	}
	sig := signalsOf(rd.Obs)
	l.Metrics.Record(Snapshot{
		Target: t.cfg.Name, At: now, Signals: l.signalMap(sig), Decided: true, Valid: valid,
		Desired: d.Desired, Previous: prev, HadPrevious: hadPrev, Current: observed,
		Reason: d.Reason.String(), Raw: raw, AllMetrics: names,
		Stuck: rd.Stuck, StuckKnown: rd.StuckKnown,
	})
	l.scratch.names = names
	if hadPrev && prev != d.Desired {
		l.logger().Info("desired replicas changed", "target", t.cfg.Name, "from", prev, "to", d.Desired, "reason", d.Reason.String())
	}
	rec := Record{Target: t.cfg.Name, At: now, Desired: d.Desired, Current: d.Current, Reason: d.Reason.String(),
		Held: held, Signals: sig, Raw: d.Raw, Steps: d.Steps, StuckReplicas: rd.StuckReplicas}
	if rd.StuckKnown {
		stuck := rd.Stuck // not &rd.Stuck: rd (1 kB) would live on the heap as long as rec
		rec.Stuck = &stuck
	}
	if observed >= 0 {
		rec.Observed = &observed
	}
	for _, e := range rd.Errors {
		rec.Errors = append(rec.Errors, fmt.Sprintf("%s: %s: %v", e.Signal, e.Reason, e.Err))
	}
	return rec, true, valid
}

// signalMap is signalMap(s) in the loop's scratch map.
func (l *Loop) signalMap(s Signals) map[string]float64 {
	if l.scratch.signals == nil {
		l.scratch.signals = map[string]float64{}
	}
	clear(l.scratch.signals)
	signalMapInto(l.scratch.signals, s)
	return l.scratch.signals
}

// write applies rec's desired replicas to t's workload when they differ
// from the replicas read this cycle and were decided on data (not held). A refusal (an HPA or ScaledObject
// scales the workload) or a failure is counted
// (infscale_apply_errors_total by kube.Reason), logged at error level at
// most once a minute per target and reason, and said in rec.ApplyError;
// the decision is exported all the same. Off the Lease nothing is written
// or counted.
func (l *Loop) write(ctx context.Context, t *target, rec *Record, now time.Time) {
	if rec.Held || (rec.Observed != nil && *rec.Observed == rec.Desired) {
		return // nothing is written on no data, as the HPA does not scale without metrics
	}
	wrote, err := l.Writer.Write(ctx, &t.cfg, rec.Desired)
	switch {
	case errors.Is(err, kube.ErrNotLeader):
	case err != nil:
		reason := kube.Reason(err)
		l.Metrics.ApplyError(t.cfg.Name, reason)
		rec.ApplyError = err.Error()
		if suppressed, ok := l.limiter.allow(now, t.cfg.Name+"\x00apply\x00"+reason); ok {
			l.logger().Error("replicas not applied", "target", t.cfg.Name, "desired", rec.Desired, "reason", reason, "err", err, "suppressed_since_last", suppressed)
		}
	case wrote:
		l.Metrics.Applied(t.cfg.Name)
		d := rec.Desired
		rec.Applied = &d
		from := "unknown"
		if rec.Observed != nil {
			from = strconv.Itoa(*rec.Observed)
		}
		l.logger().Info("replicas applied", "target", t.cfg.Name, "from", from, "to", d, "workload", RefOf(&t.cfg).String())
	}
}

// audit writes r as one JSON line; a failed write (disk full, ...) is
// counted (infscale_query_errors_total{reason="audit_write"}) and logged
// at most once a minute per target.
func (l *Loop) audit(r Record, now time.Time) {
	if l.Audit == nil {
		return
	}
	b, err := json.Marshal(r)
	if err == nil {
		l.auditMu.Lock()
		_, err = l.Audit.Write(append(b, '\n'))
		l.auditMu.Unlock()
	}
	if err != nil {
		l.Metrics.QueryError(r.Target, "audit_write")
		l.limiter.logf(l.logger(), now, r.Target, "audit_write", "audit log write failed", err)
	}
}

// Recent returns the last decisions of every target, newest last; the
// newest has its steps (written now when the cycle left them out:
// recommend.Decider.Quiet). It waits while a cycle decides, not while it
// reads.
func (l *Loop) Recent() map[string][]Record {
	l.decideMu.Lock()
	defer l.decideMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]Record, len(l.targets))
	for _, t := range l.targets {
		recs := t.records()
		if n := len(recs); n > 0 && recs[n-1].Steps == nil {
			recs[n-1].Steps = t.run.Explain()
		}
		out[t.cfg.Name] = recs
	}
	return out
}

// logLimiter logs each (target, signal, reason) at most once per
// logEvery, counting what it suppressed in between.
type logLimiter struct {
	mu   sync.Mutex
	last map[string]limited
}

type limited struct {
	at         time.Time
	suppressed int
}

const logEvery = time.Minute

func (ll *logLimiter) log(lg *slog.Logger, now time.Time, target string, e ReadError) {
	if suppressed, ok := ll.allow(now, target+"\x00"+e.Signal+"\x00"+e.Reason); ok {
		lg.Warn("signal read failed", "target", target, "signal", e.Signal, "reason", e.Reason, "err", e.Err, "suppressed_since_last", suppressed)
	}
}

// logf logs msg with err for target at most once per logEvery per kind
// (state_write, audit_write), counting what it suppressed in between.
func (ll *logLimiter) logf(lg *slog.Logger, now time.Time, target, kind, msg string, err error) {
	if suppressed, ok := ll.allow(now, target+"\x00"+kind); ok {
		lg.Warn(msg, "target", target, "reason", kind, "err", err, "suppressed_since_last", suppressed)
	}
}

// allow reports whether the message keyed by key may be logged at now (at
// most once per logEvery), with how many were suppressed since the last.
func (ll *logLimiter) allow(now time.Time, key string) (suppressed int, ok bool) {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	if ll.last == nil {
		ll.last = map[string]limited{}
	}
	st, seen := ll.last[key]
	if seen && now.Sub(st.at) < logEvery {
		st.suppressed++
		ll.last[key] = st
		return 0, false
	}
	ll.last[key] = limited{at: now}
	return st.suppressed, true
}

// logStuck warns (rate-limited like read errors) that replicas of target
// look stuck and do not vote.
func (l *Loop) logStuck(now time.Time, target string, rd Reading) {
	if !rd.StuckKnown || rd.Stuck == 0 {
		return
	}
	if suppressed, ok := l.limiter.allow(now, target+"\x00stuck"); ok {
		l.logger().Warn("replicas look stuck (requests wait, nothing runs or no token is processed): not counted as load",
			"target", target, "stuck", rd.Stuck, "replicas", rd.StuckReplicas, "source", l.Source.Name(), "suppressed_since_last", suppressed)
	}
}

// noteDuplicates counts the series the source folded as copies
// (infscale_deduplicated_series_total) and logs it once per target (again
// only after a cycle without copies).
func (l *Loop) noteDuplicates(t *target, rd Reading) {
	if rd.Duplicated <= 0 {
		t.dupLogged = false
		return
	}
	l.Metrics.Deduplicated(t.cfg.Name, rd.Duplicated)
	if !t.dupLogged {
		t.dupLogged = true
		l.logger().Warn("duplicated series folded: a pod's series are collected more than once (two scrape jobs, an HA pair); read once per pod",
			"target", t.cfg.Name, "series", rd.Duplicated, "source", l.Source.Name())
	}
}
