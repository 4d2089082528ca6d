package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
)

// LoopOptions configure NewLoop. Source, Metrics and Interval are
// required; the rest have defaults.
type LoopOptions struct {
	// Source reads the signals.
	Source Source
	// Metrics exports the results.
	Metrics *Metrics
	// Interval is the decision period (> 0); a cycle's reads and writes
	// end with it.
	Interval time.Duration
	// Now is the decisions' clock (nil: time.Now).
	Now func() time.Time
	// Log receives errors (rate-limited per target and reason) and scale
	// changes (nil: discard).
	Log *slog.Logger
	// Store persists each target's state (nil: none).
	Store *Store
	// Audit receives one JSON line per decision (nil: none).
	Audit io.Writer
	// Rebuild rebuilds the state of a target Store has none for
	// (Prometheus mode: Rebuilder.Rebuild; nil: none).
	Rebuild func(ctx context.Context, t *config.Target, now time.Time) (*Persisted, error)
	// OnDecision is called with each decision, in target order, from the
	// loop's goroutine (the demo prints them; nil: none).
	OnDecision func(Record)
	// Writer applies the decisions of apply: true targets (nil: Source,
	// when it is a Writer). A write happens only when the decision differs
	// from the replicas read this cycle (or they are unknown), never for a
	// decision held on no data. Write must return when its context ends.
	Writer Writer
	// Costs sets pod deletion costs before a scale-down (nil: Source, when
	// it is a CostWriter).
	Costs CostWriter
	// WriteWorkers bounds the targets written at once (0:
	// DefaultWriteWorkers).
	WriteWorkers int
	// WriteTimeout bounds each write, a scale write or a target's
	// deletion-cost patches (0: kube.DefaultRequestTimeout).
	WriteTimeout time.Duration
}

// DefaultWriteWorkers is LoopOptions.WriteWorkers' default.
const DefaultWriteWorkers = 8

// Loop is serve's decision loop: every interval it reads all targets from
// its Source, decides each (recommend.Decider), exports the results and
// writes the apply: true ones. Only Run owns a ticker; Cycle is one pass.
// Reads and decisions are one batch; the writes run concurrently, each
// with its own deadline, so a hanging API call for one target does not
// hold another's write. Make it with NewLoop.
type Loop struct {
	source       Source
	writer       Writer
	costs        CostWriter
	metrics      *Metrics
	now          func() time.Time
	log          *slog.Logger
	store        *Store
	audit        io.Writer
	rebuild      func(ctx context.Context, t *config.Target, now time.Time) (*Persisted, error)
	onDecision   func(Record)
	writeWorkers int
	writeTimeout time.Duration

	interval atomic.Int64 // the decision period; SetInterval changes it
	ready    atomic.Bool
	tuning   *Tuning // SetTuning's (tuning.go); nil: none
	limiter  logLimiter
	auditMu  sync.Mutex // audit lines come from cycles and from tuning
	// failing is each target's signals whose last read failed, by target
	// key and signal (noteReads); guarded by mu.
	failing map[string]map[string]*failRun
	// writeFail is the run of failed writes of each kind (audit_write,
	// state_write) still failing (logWrites); guarded by cycleMu.
	writeFail map[string]*failRun

	// clockBase is the first cycle's now, wallSkew's reference; guarded by
	// cycleMu.
	clockBase time.Time

	// cycleMu serialises cycles, the install of a new target list and
	// source swaps (not the new targets' restores: see SetConfig).
	cycleMu sync.Mutex
	// configMu serialises SetConfig calls, restores included.
	configMu sync.Mutex
	// unclaimed is the list logUnclaimed logged last (nil before the
	// first); guarded by configMu.
	unclaimed []string
	// restoring counts the targets whose restore has not finished yet;
	// cycles leave them out (while > 0, Cycle filters the target list).
	restoring atomic.Int64
	// mu guards targets and their deciders and records: held while a
	// cycle decides and while it records write outcomes, not while it
	// reads or writes.
	mu      sync.Mutex
	targets []*target
	// gen counts the changes of what Recent shows (a cycle's decisions and
	// write outcomes, a new target list, a finished restore), bumped under
	// mu; recentMu guards recentJSON, RecentJSON's answer as of recentGen.
	gen        atomic.Uint64
	recentMu   sync.Mutex
	recentGen  uint64
	recentJSON []byte
	// state is the State every target's decision works on
	// (recommend.Decider.Scratch): they decide one at a time, under mu.
	state recommend.State
	// scratch is reused across cycles: a Snapshot's maps between targets
	// (Metrics.Record keeps none of them) and the cycle's outcomes.
	scratch struct {
		signals map[string]float64
		raw     map[string]int
		names   []string
		out     []outcome
		jobs    []writeJob
		failed  []readEvent // this cycle's new read errors (noteReads)
		ended   []readEvent // this cycle's ended runs of failed reads
		warned  []warnEvent // this cycle's targets read with warnings
	}
}

// NewLoop checks o, fills its defaults and returns a Loop with no targets
// (SetConfig adds them).
func NewLoop(o LoopOptions) (*Loop, error) {
	switch {
	case o.Source == nil:
		return nil, errors.New("serve: LoopOptions.Source is required")
	case o.Metrics == nil:
		return nil, errors.New("serve: LoopOptions.Metrics is required")
	case o.Interval <= 0:
		return nil, fmt.Errorf("serve: LoopOptions.Interval must be positive, got %v", o.Interval)
	case o.WriteWorkers < 0:
		return nil, fmt.Errorf("serve: LoopOptions.WriteWorkers must not be negative, got %d", o.WriteWorkers)
	case o.WriteTimeout < 0:
		return nil, fmt.Errorf("serve: LoopOptions.WriteTimeout must not be negative, got %v", o.WriteTimeout)
	}
	l := &Loop{source: o.Source, writer: o.Writer, costs: o.Costs, metrics: o.Metrics, now: o.Now, log: o.Log,
		store: o.Store, audit: o.Audit, rebuild: o.Rebuild, onDecision: o.OnDecision,
		writeWorkers: o.WriteWorkers, writeTimeout: o.WriteTimeout}
	if l.writer == nil {
		l.writer = writerOf(o.Source)
	}
	if l.costs == nil {
		l.costs = costWriterOf(o.Source)
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.writeWorkers == 0 {
		l.writeWorkers = DefaultWriteWorkers
	}
	if l.writeTimeout == 0 {
		l.writeTimeout = kube.DefaultRequestTimeout
	}
	l.interval.Store(int64(o.Interval))
	l.limiter.last = map[string]limited{}
	l.failing = map[string]map[string]*failRun{}
	l.writeFail = map[string]*failRun{}
	l.scratch.signals, l.scratch.raw = map[string]float64{}, map[string]int{}
	return l, nil
}

// SetConfig (re)builds the targets from cfg, keeping the state, last
// desired value and recent decisions of targets whose name is unchanged;
// targets no longer configured lose their series. New targets restore
// their state from Store, else Rebuild, whose queries end with ctx (a stop
// during serve's startup rebuild ends it at once). The new target list is
// installed between two cycles (waiting for a running one to finish); the
// restores run after that, outside the cycles, so the unchanged targets
// keep deciding on schedule while a rebuild waits on Prometheus (up to
// prometheus.timeout); each new target joins the cycles once its own
// restore has finished (a P/D pair once both pools have). SetConfig returns
// when every restore has finished; calls are serialised.
func (l *Loop) SetConfig(ctx context.Context, cfg *config.File) error {
	next := make([]*target, 0, len(cfg.Targets))
	for i := range cfg.Targets {
		ct := &cfg.Targets[i]
		if !ct.Pair() {
			t, err := l.newTarget(*ct, ct.Name)
			if err != nil {
				return err
			}
			next = append(next, t)
			continue
		}
		// A P/D target is two targets, prefill then decode, decided
		// together (decidePair).
		for _, r := range [2]recommend.Role{recommend.RolePrefill, recommend.RoleDecode} {
			rc, _ := ct.RoleTarget(r)
			t, err := l.newTarget(rc, rc.Key())
			if err != nil {
				return err
			}
			next = append(next, t)
		}
	}
	l.configMu.Lock()
	defer l.configMu.Unlock()
	for _, t := range next {
		t.heldReader = heldReader(&t.cfg, cfg.Prometheus.URL)
	}
	fresh := l.install(next)
	l.logUnclaimed(next)
	// The new targets' restores (a state file, or a rebuild: two range
	// queries, each up to prometheus.timeout against a hanging Prometheus)
	// run restoreParallel at once, so a startup of N targets waits about
	// N / restoreParallel timeouts, not N. Cycles leave a target out until
	// its restore has stored restoring false (which orders the restore's
	// writes before the cycle's reads of t.run).
	var g errgroup.Group
	g.SetLimit(restoreParallel)
	var down unreached
	for i, t := range fresh {
		g.Go(func() error {
			defer crashlog.Recover()
			l.restoreLogged(ctx, t, i, &down)
			t.restoring.Store(false)
			l.restoring.Add(-1)
			l.gen.Add(1) // Recent shows it from now
			return nil
		})
	}
	_ = g.Wait()
	down.log(l.log)
	l.tuning.setTargets(next, l.period())
	return nil
}

// install makes next the target list between two cycles: the targets
// whose key is unchanged take over their predecessors' memory, the others
// are marked restoring and returned, and the targets no longer configured
// lose their series. A target switched between one pool and a P/D pair
// is logged (switchedForm): its state is not carried over. A target whose
// held count is read from another place (heldReader: another
// prometheus.url or mode, or its own keys) loses its State.HeldZeroAt:
// the known 0 it records was another reader's.
func (l *Loop) install(next []*target) (fresh []*target) {
	l.cycleMu.Lock()
	defer l.cycleMu.Unlock()
	l.switchedForm(next)
	old := map[string]*target{}
	for _, t := range l.targets {
		old[t.key] = t
	}
	for _, t := range next {
		if o, ok := old[t.key]; ok {
			t.run, t.recent, t.nRecent, t.oldest, t.newest = o.run, o.recent, o.nRecent, o.oldest, o.newest
			if o.heldReader != t.heldReader {
				t.run.State.HeldZeroAt = time.Time{}
			}
			delete(old, t.key)
			continue
		}
		l.metrics.Init(t.key)
		t.restoring.Store(true)
		fresh = append(fresh, t)
	}
	for name := range old {
		l.metrics.Forget(name)
	}
	l.restoring.Add(int64(len(fresh)))
	l.mu.Lock()
	for name := range old {
		delete(l.failing, name) // a target added again later starts with no open failure
	}
	l.targets = next
	l.gen.Add(1)
	l.mu.Unlock()
	return fresh
}

// switchedForm logs, once per target name, each target that next
// configures as a P/D pair where the running list has it as one pool, or
// the other way round: the state is kept by key (a pool's is name@role,
// one pool's its name), so none carries over between the two forms and
// the new form starts fresh (or from its own state file, when one is in
// the state dir).
func (l *Loop) switchedForm(next []*target) {
	pair := make(map[string]bool, len(l.targets))
	for _, t := range l.targets {
		pair[t.cfg.Name] = t.cfg.Role != 0
	}
	for _, t := range next {
		if t.cfg.Role == recommend.RoleDecode {
			continue // its prefill pool logged it
		}
		was, ok := pair[t.cfg.Name]
		switch is := t.cfg.Role != 0; {
		case !ok || was == is:
		case is:
			l.log.Info("target switched from one pool to a prefill/decode pair: the one pool's state does not carry over to the pools, whose state starts fresh (or from their own state files)", "target", t.cfg.Name)
		default:
			l.log.Info("target switched from a prefill/decode pair to one pool: the pools' state does not carry over to the one pool, whose state starts fresh (or from its own state file)", "target", t.cfg.Name)
		}
	}
}

// logUnclaimed logs the state files that belong to no target of next
// (Store.Unclaimed): those of removed targets, or of a target's other form
// (switchedForm); at serve's start, then at a reload only when the list
// changed. They are left in place, never deleted: they are the user's
// data. Called with configMu held.
func (l *Loop) logUnclaimed(next []*target) {
	if l.store == nil {
		return
	}
	keys := make([]string, len(next))
	for i, t := range next {
		keys[i] = t.key
	}
	files, err := l.store.Unclaimed(keys)
	switch {
	case err != nil:
		l.log.Warn("state dir not listed: cannot tell which state files belong to no target", "dir", l.store.Dir, "err", err)
	case l.unclaimed != nil && slices.Equal(files, l.unclaimed):
		// Logged already, at the start or an earlier reload.
	case len(files) > 0:
		l.log.Info("state files of no configured target left in the state dir (serve does not delete them): a target configured again under that name restores from its file while it is younger than the state's maximum age; remove them once those targets are gone for good",
			"dir", l.store.Dir, "files", files, "max_age", l.store.MaxAge)
	}
	if err == nil {
		l.unclaimed = append([]string{}, files...)
	}
}

// deciding is targets without those still restoring (SetConfig); a P/D
// pair (prefill then decode, adjacent) is kept only when both pools are
// restored. It returns targets itself when none is restoring.
func (l *Loop) deciding(targets []*target) []*target {
	if l.restoring.Load() == 0 {
		return targets
	}
	out := make([]*target, 0, len(targets))
	for i := 0; i < len(targets); i++ {
		t := targets[i]
		if t.cfg.Role == recommend.RolePrefill && i+1 < len(targets) {
			if !t.restoring.Load() && !targets[i+1].restoring.Load() {
				out = append(out, t, targets[i+1])
			}
			i++
			continue
		}
		if !t.restoring.Load() {
			out = append(out, t)
		}
	}
	return out
}

// restoreParallel bounds the new targets' restores run at once by SetConfig.
const restoreParallel = 8

// restoreLogged restores t (restore) and logs and counts a failure.
func (l *Loop) restoreLogged(ctx context.Context, t *target, i int, down *unreached) {
	if err := l.restore(ctx, t); errors.Is(err, context.Canceled) {
		l.log.Info("state not restored: stopping", "target", t.key) // serve's stop ended the rebuild
	} else if rb, ok := errors.AsType[*rebuildError](err); ok {
		// Prometheus down or failing at startup is a failed read, not
		// a refused state file: counted under the query's reason.
		l.metrics.QueryError(t.key, promql.ReasonOf(rb.err).String())
		if !down.add(i, t.key, rb.err) {
			l.log.Warn("state not rebuilt from Prometheus; starting fresh", "target", t.key, "err", rb.err)
		}
	} else if err != nil {
		l.fileNotRestored(t, err, false)
	}
}

// fileNotRestored logs (and, unless it is only too old, counts) a state
// file Store.Load did not restore; rebuilding: the target is rebuilt from
// Prometheus instead, else it starts fresh.
func (l *Loop) fileNotRestored(t *target, err error, rebuilding bool) {
	refused, next := "state not restored; ", "starting fresh"
	if rebuilding {
		refused, next = "state file refused; ", "rebuilding from Prometheus"
	}
	if errors.Is(err, ErrStateFromFuture) {
		l.log.Warn("state file ignored; "+next, "target", t.key, "err", err)
		return
	}
	if errors.Is(err, ErrStateTooOld) {
		l.log.Info("state file ignored; "+next, "target", t.key, "err", err)
		return
	}
	l.metrics.QueryError(t.key, "state_read")
	l.log.Error(refused+next, "target", t.key, "err", err)
}

// newTarget is the run-time target of c under key (its name, or a P/D
// target's name@role).
func (l *Loop) newTarget(c config.Target, key string) (*target, error) {
	p, err := c.Policy()
	if err != nil {
		if c.Role != 0 {
			return nil, fmt.Errorf("target %q role %s: %w", c.Name, c.Role, err)
		}
		return nil, fmt.Errorf("target %q: %w", c.Name, err)
	}
	t := &target{cfg: c, policy: p, key: key}
	t.run.Scratch = &l.state
	return t, nil
}

// rebuildError is a failed Rebuild (a Prometheus query), as opposed to a
// state file refused by Store.
type rebuildError struct{ err error }

func (e *rebuildError) Error() string { return e.err.Error() }
func (e *rebuildError) Unwrap() error { return e.err }

// restore loads a new target's state from Store, else (no file, or one
// refused or too old: logged here) from Rebuild. A failed Rebuild is a
// *rebuildError.
func (l *Loop) restore(ctx context.Context, t *target) error {
	var ps *Persisted
	from := "state dir"
	canRebuild := l.rebuild != nil && t.cfg.Role == 0 // a pool's series are not rebuilt (role label)
	if l.store != nil {
		var err error
		if ps, err = l.store.Load(t.key); err != nil {
			if !canRebuild {
				return err
			}
			// A file that cannot be used is no saved state: rebuilt
			// as without one (an empty file after a power loss would
			// otherwise lose what a deleted one keeps).
			l.fileNotRestored(t, err, true)
		}
	}
	if ps == nil && canRebuild {
		var err error
		from = "prometheus"
		if ps, err = l.rebuild(ctx, &t.cfg, l.now()); err != nil {
			if errors.Is(err, context.Canceled) {
				return err
			}
			return &rebuildError{err}
		}
	}
	if ps == nil {
		return nil
	}
	if ps.HeldReader != "" && ps.HeldReader != t.heldReader {
		// Saved under another held reader (a restart with the keys
		// changed): its known 0 at zero is not this reader's (heldReader).
		ps.State.HeldZeroAt = time.Time{}
	}
	now := l.now()
	desired := t.run.Restore(&t.policy, ps.Desired, ps.Current, onMonotonic(ps.State, now), now)
	l.metrics.Restore(t.key, desired)
	l.log.Info("state restored", "target", t.key, "from", from, "desired", desired, "saved_desired", ps.Desired, "saved_at", ps.SavedAt)
	return nil
}

// SetSource swaps the source between cycles (config reload); the writers
// become the new source's (none when it writes nothing).
func (l *Loop) SetSource(s Source) {
	l.cycleMu.Lock()
	defer l.cycleMu.Unlock()
	l.source, l.writer, l.costs = s, writerOf(s), costWriterOf(s)
}

// SetInterval changes the period (ignored unless positive); Run picks it
// up at its next tick.
func (l *Loop) SetInterval(d time.Duration) {
	if d > 0 {
		l.interval.Store(int64(d))
	}
}

func (l *Loop) period() time.Duration { return time.Duration(l.interval.Load()) }

// Ready reports whether a cycle has completed with at least one decision
// made on known signals (/readyz).
func (l *Loop) Ready() bool { return l.ready.Load() }

// Run runs a cycle now and then every interval until ctx is done.
func (l *Loop) Run(ctx context.Context) error {
	every := l.period()
	l.Cycle(ctx)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if d := l.period(); d != every {
			every = d
			tick.Reset(every)
			// The next cycle is every away: a reload during the cycle
			// just run, after its decisions were exported with the old
			// period, would leave the gauge short of it until then
			// (InfscaleDecisionsStale paging a target decided on time).
			l.metrics.SetInterval(every)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			l.Cycle(ctx)
		}
	}
}

// outcome is one target's decision in a cycle.
type outcome struct {
	decision
	rd *Reading
}

// Cycle reads every target once, decides, exports and writes. A cycle is
// bounded by the interval (its reads and writes are cancelled after it),
// each write also by WriteTimeout. When ctx ends during the reads (serve
// stopping) the cycle is dropped: nothing is decided, exported or written
// from reads the stop cut short.
func (l *Loop) Cycle(ctx context.Context) {
	l.cycleMu.Lock()
	defer l.cycleMu.Unlock()
	start := time.Now()
	now := l.now()
	l.mu.Lock()
	targets := l.deciding(l.targets)
	l.mu.Unlock()
	if len(targets) == 0 {
		return
	}
	stopping := ctx
	ctx, cancel := context.WithTimeoutCause(ctx, l.period(), periodEnded(l.period()))
	defer cancel()
	cfgs := make([]*config.Target, len(targets))
	for i, t := range targets {
		cfgs[i] = &t.cfg
	}
	readings := l.source.Read(ctx, cfgs, now)
	if stopping.Err() != nil {
		return
	}
	l.noteClock(now)

	// Decide every target (one shared scratch State, so one at a time).
	out := l.scratch.out[:0]
	anyValid := false
	l.mu.Lock()
	for i, t := range targets {
		rd := &readings[i]
		// A batched source (Prometheus: one evaluation of every target)
		// carries the batch's time on its first reading and 0 on the
		// others: one observation per batch, not a 0 per target, which
		// pulled infscale_query_duration_seconds' quantiles to 0.
		if rd.Duration > 0 {
			l.metrics.ObserveQuery(l.source.Name(), rd.Duration)
		}
		carried := carryHeldZero(t, rd) // before its error is counted
		l.noteReads(now, t.key, rd.Errors)
		if rd.Diagnosis != "" {
			l.log.Warn("the target's reads found none of its server's series", "target", t.key, "why", rd.Diagnosis)
		}
		if len(rd.Warnings) > 0 {
			msg := "prometheus answered with warnings; its values were read"
			if l.source.Name() != "prometheus" { // embedded mode's pages
				msg = "pages read with warnings"
			} else if _, partial := promql.Partial(rd.Warnings); partial {
				msg = "prometheus answered with warnings, some of the data it could not read: the signals of those answers are unknown (reason partial)"
			}
			l.scratch.warned = append(l.scratch.warned, warnEvent{target: t.key, msg: msg, warnings: rd.Warnings})
		}
		if carried != "" { // the record's, not Prometheus's: not logged as its warnings
			rd.Warnings = append(slices.Clip(rd.Warnings), carried)
		}
		l.logStuck(now, t.key, rd)
		l.noteDuplicates(t, rd)
	}
	l.logReads(now)
	l.logWarnings(now)
	for i := 0; i < len(targets); i++ {
		t, rd := targets[i], &readings[i]
		if t.cfg.Role == recommend.RolePrefill && i+1 < len(targets) { // its decode pool follows (SetConfig)
			l.pairRolesRead(t, targets[i+1], rd, &readings[i+1], now)
			dp, dd := l.decidePair(t, targets[i+1], rd, &readings[i+1], now)
			for j, d := range [2]decision{dp, dd} {
				if d.decided {
					targets[i+j].remember(d.rec)
					anyValid = anyValid || d.valid
				}
				out = append(out, outcome{decision: d, rd: &readings[i+j]})
			}
			i++
			continue
		}
		d := l.decide(t, rd, now)
		if d.decided {
			t.remember(d.rec)
			anyValid = anyValid || d.valid
		}
		out = append(out, outcome{decision: d, rd: rd})
	}
	l.gen.Add(1)
	l.mu.Unlock()

	l.write(ctx, targets, out, now)

	skew := l.wallSkew(now)

	var auditW, stateW writeTally
	for i, t := range targets {
		o := &out[i]
		if !o.decided {
			continue
		}
		l.metrics.ReleaseDesired(t.key) // a scale-down deferred until its costs were written
		if l.audit != nil {
			auditW.note(t.key, l.writeAudit(o.rec))
		}
		if l.store != nil {
			st := t.run.State
			if skew != 0 {
				st = rebaseWall(st, now, skew)
			}
			err := l.store.Save(t.key, Persisted{Desired: t.run.Desired, Current: currentOrUnknown(t), State: st, SavedAt: now, HeldReader: t.heldReader})
			if err != nil {
				l.metrics.QueryError(t.key, "state_write")
			}
			stateW.note(t.key, err)
		}
		if l.onDecision != nil {
			l.onDecision(o.rec)
		}
	}
	l.logWrites(now, "audit_write", "audit log write failed", "audit log written again", &auditW)
	l.logWrites(now, "state_write", "state write failed", "state written again", &stateW)
	clear(out) // drop the records' references until the next cycle
	l.scratch.out = out[:0]
	if anyValid {
		l.ready.Store(true)
	}
	l.metrics.Cycle(time.Since(start))
}

// clockTeller is a source that tells Prometheus's clock offset
// (PrometheusSource, and a KubeSource around one).
type clockTeller interface {
	ClockOffset() (time.Duration, bool)
}

// noteClock exports Prometheus's clock offset when the source tells it
// (PrometheusSource) and warns, at most once per logEvery, when the clocks
// are clockWarn or more apart. Called with cycleMu held.
func (l *Loop) noteClock(now time.Time) {
	c, ok := l.source.(clockTeller)
	if !ok {
		l.metrics.PrometheusClockUnknown() // a reload to embedded mode
		return
	}
	off, known := c.ClockOffset()
	if !known {
		l.metrics.PrometheusClockUnknown()
		return
	}
	l.metrics.PrometheusClock(off)
	if off.Abs() < clockWarn {
		return
	}
	suppressed, ok := l.limiter.allow(now, "\x00prometheus_clock")
	if !ok {
		return
	}
	if off < -promql.MaxAnswerSkew { // past what evalTime follows
		l.log.Warn("serve's clock is ahead of Prometheus's (its answers' Date header) by more than "+promql.MaxAnswerSkew.String()+", too far to follow: the queries are evaluated at serve's now, where Prometheus has no data yet, and the last desired is held; set both clocks right (NTP)",
			"ahead", (-off).Round(time.Second), "suppressed_since_last", suppressed)
		return
	}
	if off < 0 {
		l.log.Warn("serve's clock is ahead of Prometheus's (its answers' Date header): the queries are evaluated at Prometheus's now; set both clocks right (NTP)",
			"ahead", (-off).Round(time.Second), "suppressed_since_last", suppressed)
		return
	}
	l.log.Warn("serve's clock is behind Prometheus's (its answers' Date header): each cycle reads Prometheus's data as of that long ago; set both clocks right (NTP)",
		"behind", off.Round(time.Second), "suppressed_since_last", suppressed)
}

// periodEnded is the cause of a cycle's deadline: a read it cuts says so
// (net/http's errors carry it, promql adds it where they do not), not
// "context deadline exceeded" alone beside a per-read timeout that did
// not pass. It is a context.DeadlineExceeded: still a timeout.
func periodEnded(d time.Duration) error {
	return fmt.Errorf("the decision period (pollingInterval %s) ended before this read: a cycle's reads end with it (raise pollingInterval, or make the source answer sooner): %w", d, context.DeadlineExceeded)
}

func currentOrUnknown(t *target) int {
	if t.run.HasCurrent {
		return t.run.Current
	}
	return -1
}

// decision is one target's decision in a cycle: rec is valid when decided
// (false while no current count was ever known and nothing decided
// before); valid is true when at least one metric was known.
type decision struct {
	rec     Record
	decided bool
	valid   bool
}

// decide makes one target's decision from its reading and exports it.
func (l *Loop) decide(t *target, rd *Reading, now time.Time) decision {
	return l.finish(t, rd, l.begin(t, rd, now), now, nil)
}

// pending is a target's decision made (begin) and not yet exported
// (finish): a P/D pair's ratio bound raises it in between.
type pending struct {
	d             recommend.Decision
	policy        *recommend.Policy
	reading       recommend.Reading
	decided, held bool
	prev          int
	hadPrev       bool
}

// begin is the first half of decide: Decider.Decide on t's reading.
func (l *Loop) begin(t *target, rd *Reading, now time.Time) pending {
	pd := l.prepare(t, rd)
	pd.decided, pd.held = t.run.Decide(&pd.d, pd.policy, pd.reading, now)
	return pd
}

// prepare is begin up to the decision: the reading and the policy.
func (l *Loop) prepare(t *target, rd *Reading) pending {
	pd := pending{prev: t.run.Desired, hadPrev: t.run.HasDesired}
	t.keepEvents()
	// The steps' words are most of a decision's cost: written each cycle
	// only for the audit log and OnDecision, else when /debug/decisions
	// asks for them (Recent).
	t.run.Quiet = l.audit == nil && l.onDecision == nil
	pd.reading = recommend.Reading{Obs: rd.Obs, CurrentKnown: rd.CurrentKnown, SpecFollows: t.cfg.Replicas == "" && t.cfg.ScaleTargetRef == nil}
	pd.policy = l.tuning.policyFor(t.key, &t.policy)
	return pd
}

// decidePair decides a P/D target's two pools, tp (prefill) and td
// (decode), each on its own reading, then applies the pair's ratio bound
// (recommend.Bound) when both decided, and exports both.
func (l *Loop) decidePair(tp, td *target, rp, rd *Reading, now time.Time) (decision, decision) {
	// Each pool's demand target lowered to what its queue allows
	// (recommend.PairPolicies), as the replay's pair rule decides.
	pp, pd := l.prepare(tp, rp), l.prepare(td, rd)
	q := recommend.PairPolicies(&recommend.Pair{Prefill: pp.policy, Decode: pd.policy}, recommend.PairReading{Prefill: pp.reading, Decode: pd.reading})
	pp.policy, pd.policy = q.Prefill, q.Decode
	pp.decided, pp.held = tp.run.Decide(&pp.d, pp.policy, pp.reading, now)
	pd.decided, pd.held = td.run.Decide(&pd.d, pd.policy, pd.reading, now)
	var np, nd *PairNote
	if pp.decided && pd.decided {
		before := [2]int{pp.d.Desired, pd.d.Desired}
		b := recommend.Bound(&pp.d, &pd.d, &tp.run, &td.run, &recommend.Pair{Prefill: pp.policy, Decode: pd.policy},
			recommend.PairReading{Prefill: pp.reading, Decode: pd.reading})
		note := func(floor, from, to int) *PairNote {
			n := &PairNote{Ratio: known(b.Ratio), Floor: floor}
			if to != from {
				n.RaisedFrom = &from
			}
			return n
		}
		np, nd = note(b.PrefillFloor, before[0], pp.d.Desired), note(b.DecodeFloor, before[1], pd.d.Desired)
	}
	return l.finish(tp, rp, pp, now, np), l.finish(td, rd, pd, now, nd)
}

// pairRolesRead warns, in a pool's record and the log, when a pool's pods
// do not generate what its role's pods do: llm-d's prefill pods generate 1
// token a request (the decode sidecar's max_tokens=1 requests), its decode
// pods the whole outputs. A prefill pool averaging 1.5 tokens or more, or a
// decode pool below 1.5, reads the other role's pods (the roles' scrape:
// or selector: swapped), and each pool would be decided on the other's
// load. The decisions are not changed.
func (l *Loop) pairRolesRead(tp, td *target, rp, rd *Reading, now time.Time) {
	const between = 1.5
	for _, c := range []struct {
		t        *target
		r        *Reading
		wrong    bool
		role, as string
	}{
		{tp, rp, rp.Obs.MeanOutput >= between, "prefill", "a decode pod does (whole outputs), where llm-d's prefill pods generate 1 (the decode sidecar's max_tokens=1 requests)"},
		{td, rd, rd.Obs.MeanOutput < between, "decode", "llm-d's prefill pods do (the decode sidecar's max_tokens=1 requests), where a decode pool generates the whole outputs"},
	} {
		if math.IsNaN(c.r.Obs.MeanOutput) || !c.wrong {
			continue
		}
		n := strconv.FormatFloat(math.Round(c.r.Obs.MeanOutput*100)/100, 'f', -1, 64)
		unit := "output tokens"
		if n == "1" {
			unit = "output token"
		}
		w := fmt.Sprintf("roles.%s: its pods generated %s %s a request, as %s: does roles.%s's scrape: or selector: name the other role's pods (the roles swapped)? Each pool is decided on the load it reads", c.role, n, unit, c.as, c.role)
		c.r.Warnings = append(c.r.Warnings, w)
		if suppressed, ok := l.limiter.allow(now, c.t.key+"\x00role"); ok {
			l.log.Warn("a P/D pool's pods do not look like its role's", "target", c.t.key, "why", w, "suppressed_since_last", suppressed)
		}
	}
}

// finish is the second half of decide: the decision exported and its
// Record (with pair, a P/D pool's note of the ratio bound).
func (l *Loop) finish(t *target, rd *Reading, pd pending, now time.Time, pair *PairNote) decision {
	observed := -1 // replicas read this cycle, for the current_replicas series
	if rd.CurrentKnown {
		observed = rd.Obs.Current
	}
	d, decided, held, prev, hadPrev, reading := &pd.d, pd.decided, pd.held, pd.prev, pd.hadPrev, pd.reading
	if !decided {
		// Current as read (-1 while unknown: no series), not the zero
		// value, which exported 0 replicas for a target never read.
		l.metrics.Record(Snapshot{Target: t.key, At: now, Interval: l.period(), Signals: l.signalMap(signalsOf(rd.Obs)), Current: observed, Stuck: rd.Stuck, StuckKnown: rd.StuckKnown})
		return decision{}
	}
	l.tuning.shadow(t.key, reading, d.Current, now) // the candidate on the same observation
	valid := false
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
	l.metrics.Record(Snapshot{
		Target: t.key, At: now, Interval: l.period(), Signals: l.signalMap(sig), Decided: true, Valid: valid,
		Desired: d.Desired, Previous: prev, HadPrevious: hadPrev, Current: observed,
		Reason: d.Reason.String(), Raw: raw, AllMetrics: names,
		Stuck: rd.Stuck, StuckKnown: rd.StuckKnown,
		// write sets the pods' deletion costs before a scale-down: the lower
		// count is exported after them (Cycle releases it), as it is
		// written after them with apply.
		DeferDesired: l.setsCosts(t, rd, observed, d.Desired),
	})
	l.scratch.names = names
	if hadPrev && prev != d.Desired {
		// The metric whose recommendation the decision took, as the HPA's
		// rescale event names the metric above or below its target: the
		// line alone says what drove the change; its record has the numbers.
		attrs := []any{"target", t.cfg.Name}
		if t.cfg.Role != 0 {
			attrs = append(attrs, "role", t.cfg.Role.String())
		}
		attrs = append(attrs, "from", prev, "to", d.Desired, "reason", d.Reason.String())
		if s, ok := d.Raw.Largest(); ok && metricDriven(d.Reason) {
			attrs = append(attrs, "metric", s.String())
		}
		l.log.Info("desired replicas changed", attrs...)
	}
	rec := Record{Target: t.cfg.Name, Role: roleName(t.cfg.Role), Pair: pair, At: now, Desired: d.Desired, Current: d.Current, Reason: d.Reason.String(),
		Held: held, Signals: sig, Raw: d.Raw, Steps: d.Steps, StuckReplicas: rd.StuckReplicas}
	if rd.StuckKnown {
		stuck := rd.Stuck
		rec.Stuck = &stuck
	}
	if observed >= 0 {
		rec.Observed = &observed
	}
	for _, e := range rd.Errors {
		rec.Errors = append(rec.Errors, fmt.Sprintf("%s: %s: %v", e.Signal, e.Reason, e.Err))
	}
	rec.Warnings = rd.Warnings
	return decision{rec: rec, decided: true, valid: valid}
}

// metricDriven reports whether a decision of reason r took the metrics'
// recommendation, as is or held, limited or bounded by the HPA's rules: the
// change line then names the metric. A scale to or from zero, a schedule
// floor, the lookahead, the hold, a pair's bound and a held count were not
// the metric's: the line names none there (idle-to-zero after the queue's
// 0 was the cooldown's doing).
func metricDriven(r recommend.Reason) bool {
	switch r {
	case recommend.ReasonMetric, recommend.ReasonTolerance, recommend.ReasonGuard,
		recommend.ReasonScaleUpStabilized, recommend.ReasonScaleDownStabilized,
		recommend.ReasonScaleUpLimit, recommend.ReasonScaleDownLimit,
		recommend.ReasonMin, recommend.ReasonMax:
		return true
	}
	return false
}

// signalMap is signalMap(s) in the loop's scratch map.
func (l *Loop) signalMap(s Signals) map[string]float64 {
	clear(l.scratch.signals)
	signalMapInto(l.scratch.signals, s)
	return l.scratch.signals
}

// writeJob is one target's writes in a cycle and what came of them.
type writeJob struct {
	t   *target
	rec *Record
	// outstanding, when not nil, are the pods' requests for the deletion
	// costs set before a scale-down.
	outstanding map[string]float64
	// scale is true when rec.Desired is written.
	scale bool

	costSet, costDeferred int
	costErr               error
	wrote                 bool
	err                   error
}

// setsCosts reports whether write sets t's pod deletion costs this cycle:
// a scale-down (desired below the observed replicas) of a
// pod_deletion_cost target whose pods' outstanding requests were read.
func (l *Loop) setsCosts(t *target, rd *Reading, observed, desired int) bool {
	return t.cfg.PodDeletionCost && l.costs != nil && rd.Outstanding != nil && observed >= 0 && desired < observed
}

// write runs the cycle's writes, at most writeWorkers targets at once,
// each call bounded by writeTimeout (and the cycle's ctx): a target's
// deletion costs, then its scale. Their outcomes are then counted,
// logged and set in the records from the loop's goroutine, in target
// order.
func (l *Loop) write(ctx context.Context, targets []*target, out []outcome, now time.Time) {
	jobs := l.scratch.jobs[:0]
	for i, t := range targets {
		o := &out[i]
		if !o.decided {
			continue
		}
		j := writeJob{t: t, rec: &o.rec}
		if o.rec.Observed != nil && l.setsCosts(t, o.rd, *o.rec.Observed, o.rec.Desired) {
			j.outstanding = o.rd.Outstanding // before the write lowers spec.replicas
		}
		// Nothing is written on no data, as the HPA does not scale without
		// metrics, nor when the workload runs the desired count already.
		j.scale = t.cfg.Apply && l.writer != nil && !o.rec.Held && (o.rec.Observed == nil || *o.rec.Observed != o.rec.Desired)
		if j.outstanding != nil || j.scale {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return
	}
	var g errgroup.Group
	g.SetLimit(l.writeWorkers)
	for i := range jobs {
		j := &jobs[i]
		g.Go(func() error {
			defer crashlog.Recover()
			if j.outstanding != nil {
				wctx, cancel := context.WithTimeout(ctx, l.writeTimeout)
				j.costSet, j.costDeferred, j.costErr = l.costs.SetDeletionCosts(wctx, &j.t.cfg, j.outstanding)
				cancel()
			}
			if j.scale {
				wctx, cancel := context.WithTimeout(ctx, l.writeTimeout)
				j.wrote, j.err = l.writer.Write(wctx, &j.t.cfg, j.rec.Desired)
				cancel()
			}
			return nil
		})
	}
	_ = g.Wait() // the jobs return no error: each outcome is reported below
	l.mu.Lock()
	for i := range jobs {
		j := &jobs[i]
		if j.outstanding != nil {
			l.reportCosts(j, now)
		}
		if j.scale {
			l.reportWrite(j, now)
			j.t.noteWrite(j.rec.Applied, j.rec.ApplyError, j.rec.ApplySkipped)
		}
	}
	l.gen.Add(1)
	l.mu.Unlock()
	clear(jobs)
	l.scratch.jobs = jobs[:0]
}

// reportWrite counts and logs a scale write: a refusal (an HPA or
// ScaledObject scales the workload) or a failure (a timeout included) is
// counted in infscale_apply_errors_total by kube.Reason, logged at error
// level at most once a minute per target and reason, and said in
// rec.ApplyError; the decision is exported all the same. Off the Lease
// nothing is written or counted, and rec.ApplySkipped says so.
func (l *Loop) reportWrite(j *writeJob, now time.Time) {
	name, rec := j.t.key, j.rec
	switch {
	case errors.Is(j.err, kube.ErrNotLeader):
		rec.ApplySkipped = j.err.Error()
	case j.err != nil:
		j.t.dropEvents() // not written: no scale event, as the HPA stores none after a failed update
		reason := kube.Reason(j.err)
		l.metrics.ApplyError(name, reason)
		rec.ApplyError = j.err.Error()
		if suppressed, ok := l.limiter.allow(now, name+"\x00apply\x00"+reason); ok {
			l.log.Error("replicas not applied", "target", name, "desired", rec.Desired, "reason", reason, "err", j.err, "suppressed_since_last", suppressed)
		}
	case j.wrote:
		l.metrics.Applied(name)
		d := rec.Desired
		rec.Applied = &d
		from := "unknown"
		if rec.Observed != nil {
			from = strconv.Itoa(*rec.Observed)
		}
		l.log.Info("replicas applied", "target", name, "from", from, "to", d, "workload", RefOf(&j.t.cfg).String())
	}
}

// writeAudit writes r as one JSON line to the audit log (set); a failed
// write (disk full, ...) is counted
// (infscale_query_errors_total{reason="audit_write"}) and returned, for
// logWrites.
func (l *Loop) writeAudit(r Record) error {
	b, err := json.Marshal(r)
	if err == nil {
		l.auditMu.Lock()
		_, err = l.audit.Write(append(b, '\n'))
		l.auditMu.Unlock()
	}
	if err != nil {
		l.metrics.QueryError(r.key(), "audit_write")
	}
	return err
}

// writeTally is one cycle's writes of one kind (audit lines, state
// files): how many, and the targets whose write failed with the first
// error.
type writeTally struct {
	writes int
	failed []string // targets
	err    error    // the first failure's
}

func (w *writeTally) note(target string, err error) {
	w.writes++
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		w.failed = append(w.failed, target)
	}
}

// logWrites logs a cycle's failed writes of one kind (a full disk, a
// read-only file system): a single target's as its own line, at most once
// a minute per target; several targets' as one line naming the first and
// how many (targets=N), at most once a minute: a full disk under 20
// targets was 40 lines a minute (state and audit), one cause. The first
// cycle whose writes of the kind all succeed after failures that were
// logged says so once, at INFO (ended, with failed_for and
// failed_cycles), so the end of a full disk is in the log as its start
// is. Called with cycleMu held.
func (l *Loop) logWrites(now time.Time, kind, failed, ended string, w *writeTally) {
	f := l.writeFail[kind]
	if len(w.failed) == 0 {
		if f != nil && w.writes > 0 {
			if f.logged {
				l.log.Info(ended, "reason", kind, "failed_for", now.Sub(f.since).Round(time.Second), "failed_cycles", f.cycles)
			}
			delete(l.writeFail, kind)
		}
		return
	}
	if f == nil {
		f = &failRun{since: now}
		l.writeFail[kind] = f
	}
	f.last = now
	f.cycles++
	if len(w.failed) == 1 {
		if suppressed, ok := l.limiter.allow(now, w.failed[0]+"\x00"+kind); ok {
			l.log.Warn(failed, "target", w.failed[0], "reason", kind, "err", w.err, "suppressed_since_last", suppressed)
			f.logged = true
		}
		return
	}
	if suppressed, ok := l.limiter.allow(now, "\x00targets\x00"+kind); ok {
		l.log.Warn(failed, "target", w.failed[0], "targets", len(w.failed), "reason", kind, "err", w.err, "suppressed_since_last", suppressed)
		f.logged = true
	}
}

// Recent returns the last decisions of every target (not those still
// restoring after a reload), newest last, an empty list for a target with
// none yet; the newest has its steps (written now when the cycle left them
// out: recommend.Decider.Quiet). It waits while a cycle decides, not while
// it reads or writes.
func (l *Loop) Recent() map[string][]Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]Record, len(l.targets))
	for _, t := range l.targets {
		if t.restoring.Load() {
			continue // its restore writes its decider (SetConfig); nothing decided yet
		}
		recs := t.records()
		if recs == nil {
			recs = []Record{} // no decision yet: [] in /debug/decisions, not null
		}
		if n := len(recs); n > 0 && recs[n-1].Steps == nil {
			recs[n-1].Steps = t.run.Explain()
		}
		out[t.key] = recs
	}
	return out
}

// RecentJSON is Recent as /debug/decisions writes it (indented JSON, a
// final newline), made once per change of what it shows (gen): each
// Recent explains every target's last decision again under mu (55 ms at
// 10,000 targets: BenchmarkRecent10000Targets), so a flood of reads held
// the cycles back, one read after another. Concurrent reads wait for the
// one that makes it. The bytes are shared: not to be modified.
func (l *Loop) RecentJSON() []byte {
	l.recentMu.Lock()
	defer l.recentMu.Unlock()
	g := l.gen.Load()
	if l.recentJSON != nil && l.recentGen == g {
		return l.recentJSON
	}
	b, err := json.MarshalIndent(l.Recent(), "", "  ")
	if err != nil { // not expected: said in the answer rather than an empty body
		b = []byte(`{"error": ` + strconv.Quote(err.Error()) + `}`)
	}
	l.recentJSON, l.recentGen = append(b, '\n'), g
	return l.recentJSON
}

// failRun is one signal's run of failed reads (Loop.noteReads).
type failRun struct {
	since  time.Time // the cycle of the first failed read
	last   time.Time // the cycle of the last one
	cycles int       // cycles whose read of the signal failed
	logged bool      // a "signal read failed" line was logged for the run
	// pos is the signal's place in its reading's errors in the run's
	// first cycle: the runs that end together are said in the order they
	// failed (noteReads), not a map's.
	pos int
	// cause is the transport cause its last failure was logged under
	// with other signals' (logTransportFailures), "" otherwise: its end
	// is logged with theirs.
	cause string
}

// readEvent is a target's failed read of a signal (e set) or a run of
// failed reads that ended (e unset), for logReads.
type readEvent struct {
	target string
	signal string
	e      ReadError
	cause  string   // transportCause(e.Err), worked out once at noteReads
	run    *failRun // the run's state (a copy once it ended)
}

// noteReads counts target's read errors of this cycle and keeps the new
// ones and the runs of failed reads that ended (signals that failed before
// and read without error now) for logReads. Called with mu held.
func (l *Loop) noteReads(now time.Time, target string, errs []ReadError) {
	runs := l.failing[target]
	for i, e := range errs {
		if runs == nil {
			runs = map[string]*failRun{}
			l.failing[target] = runs
		}
		f := runs[e.Signal]
		if f == nil {
			f = &failRun{since: now, pos: i}
			runs[e.Signal] = f
		}
		if !f.last.Equal(now) {
			f.last = now
			f.cycles++
		}
		if e.Reused {
			continue // counted and logged at its read
		}
		l.metrics.QueryError(target, e.Reason)
		l.scratch.failed = append(l.scratch.failed, readEvent{target: target, signal: e.Signal, e: e, cause: transportCause(e.Err), run: f})
	}
	from := len(l.scratch.ended)
	for sig, f := range runs {
		if f.last.Equal(now) {
			continue
		}
		if f.logged {
			ended := *f
			l.scratch.ended = append(l.scratch.ended, readEvent{target: target, signal: sig, run: &ended})
		}
		delete(runs, sig)
	}
	// In the order they failed: "signal read again" names them in it, as
	// the line of their failure did (a map's order made it differ from
	// one run to the next).
	slices.SortFunc(l.scratch.ended[from:], func(a, b readEvent) int {
		if c := a.run.since.Compare(b.run.since); c != 0 {
			return c
		}
		return a.run.pos - b.run.pos
	})
	if len(runs) == 0 {
		delete(l.failing, target)
	}
}

// logReads logs the cycle's read errors and ended runs noteReads kept.
// Errors of one signal and reason in one target are a line at most once
// per logEvery ("signal read failed"); the same signal and reason failing
// in several targets at once (Prometheus down: every target's reads) is
// one line for them all, naming the first target and how many
// (targets=N), at most once per logEvery: 20 targets were 80 lines a
// minute, each with the same cause. A signal read again after failed
// reads that were logged is logged once at INFO ("signal read again", how
// long since its first failed read and in how many cycles it failed;
// several targets at once: one line, the longest run's), so an outage's
// end is in the log as its start is; a run none of whose failures was
// logged ends unsaid, so a signal failing every other cycle logs at most
// one failure and one recovery a minute. Called with mu held.
func (l *Loop) logReads(now time.Time) {
	failed, ended := l.scratch.failed, l.scratch.ended
	defer func() {
		clear(failed)
		clear(ended)
		l.scratch.failed, l.scratch.ended = failed[:0], ended[:0]
	}()
	l.logTransportFailures(now, failed)
	for i, ev := range failed {
		if ev.run == nil {
			continue // logged with an earlier one of its group
		}
		// Errors of other transport causes are not one: embedded mode's
		// pages on other hosts, each down on its own, were one line
		// naming the first host (the others' limited away with it).
		cause := ev.cause
		group := failed[i:]
		targets, more := 1, false
		for j := 1; j < len(group); j++ {
			if o := group[j]; o.run != nil && o.signal == ev.signal && o.e.Reason == ev.e.Reason && o.target != ev.target && o.cause == cause {
				more = true
				break
			}
		}
		if !more { // one target: its own line per error
			if l.limiter.log(l.log, now, ev.target, ev.e, ev.cause) {
				ev.run.logged = true
			}
			failed[i].run = nil
			continue
		}
		runs := []*failRun{ev.run}
		seen := map[string]bool{ev.target: true}
		for j := i + 1; j < len(failed); j++ {
			if o := failed[j]; o.run != nil && o.signal == ev.signal && o.e.Reason == ev.e.Reason && o.cause == cause {
				if !seen[o.target] {
					seen[o.target] = true
					targets++
				}
				runs = append(runs, o.run)
				failed[j].run = nil
			}
		}
		failed[i].run = nil
		if suppressed, ok := l.limiter.allow(now, "\x00targets\x00"+ev.signal+"\x00"+ev.e.Reason+"\x00"+cause); ok {
			l.log.Warn("signal read failed", "target", ev.target, "targets", targets, "signal", ev.signal, "reason", ev.e.Reason, "err", ev.e.Err, "suppressed_since_last", suppressed)
			for _, f := range runs {
				f.logged = true
			}
		}
	}
	for i, ev := range ended {
		if ev.run == nil {
			continue
		}
		// The runs a transport failure's one line began end in one line
		// too, naming their signals; others one line per signal.
		same := func(o readEvent) bool { return o.signal == ev.signal && o.run.cause == "" }
		signals := []string{ev.signal}
		if ev.run.cause != "" {
			same = func(o readEvent) bool { return o.run.cause == ev.run.cause }
		}
		targets, longest := 1, ev.run
		seen := map[string]bool{ev.target: true}
		for j := i + 1; j < len(ended); j++ {
			if o := ended[j]; o.run != nil && same(o) {
				if !slices.Contains(signals, o.signal) {
					signals = append(signals, o.signal)
				}
				if !seen[o.target] {
					seen[o.target] = true
					targets++
				}
				if o.run.since.Before(longest.since) || o.run.since.Equal(longest.since) && o.run.cycles > longest.cycles {
					longest = o.run
				}
				ended[j].run = nil
			}
		}
		args := []any{"target", ev.target}
		if targets > 1 {
			args = append(args, "targets", targets)
		}
		if len(signals) > 1 {
			args = append(args, "signals", strings.Join(signals, ","))
		} else {
			args = append(args, "signal", ev.signal)
		}
		args = append(args, "failed_for", now.Sub(longest.since).Round(time.Second), "failed_cycles", longest.cycles)
		l.log.Info("signal read again", args...)
	}
}

// unreached gathers the targets whose state rebuild failed on one
// transport cause (transportCause: Prometheus unreachable at startup), to
// be said in one line per cause after the restores: one per target was
// as many lines as targets, each with the same DNS error. Safe for
// concurrent use.
type unreached struct {
	mu     sync.Mutex
	order  []string
	causes map[string][]unreachedTarget
}

// unreachedTarget is a target key and its place in the config.
type unreachedTarget struct {
	i   int
	key string
}

// add records the rebuild error err of target, the i-th restored, when it
// has a transport cause, and reports whether it did (else the caller logs
// it on its own).
func (u *unreached) add(i int, target string, err error) bool {
	c := transportCause(err)
	if c == "" {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.causes == nil {
		u.causes = map[string][]unreachedTarget{}
	}
	if _, ok := u.causes[c]; !ok {
		u.order = append(u.order, c)
	}
	u.causes[c] = append(u.causes[c], unreachedTarget{i, target})
	return true
}

// log says each cause once: the first target in the config, how many,
// the cause.
func (u *unreached) log(lg *slog.Logger) {
	for _, c := range u.order {
		ts := u.causes[c]
		first := slices.MinFunc(ts, func(a, b unreachedTarget) int { return a.i - b.i })
		args := []any{"target", first.key}
		if len(ts) > 1 {
			args = append(args, "targets", len(ts))
		}
		lg.Warn("state not rebuilt from Prometheus; starting fresh", append(args, "err", c)...)
	}
}

// transportCause is what a read failed on when the request never got an
// answer (a *url.Error: DNS, a refused or reset connection, TLS, a
// timeout): the operation and the server's address with the error, the
// path, the query and the connection's local address left out, so every
// query to one unreachable server has the same cause; for a query of
// Prometheus with what to check (promql.TransportHint). "" for any other
// error (the server answered).
func transportCause(err error) string {
	ue, ok := errors.AsType[*url.Error](err)
	if !ok {
		return ""
	}
	addr := ue.URL
	if u, perr := url.Parse(ue.URL); perr == nil {
		addr = u.Scheme + "://" + u.Host
	}
	cause := ue.Err
	// A reset or broken connection's error names its local address
	// ("read tcp 10.1.0.7:41234->10.0.0.5:9090: ..."): each query's own
	// ephemeral port made each its own cause, a line per signal again and
	// a new rate-limiter key every cycle (a line every cycle, the
	// limiter's map growing for the outage).
	if oe, ok := cause.(*net.OpError); ok && oe.Source != nil {
		c := *oe
		c.Source = nil
		cause = &c
	}
	hint := ""
	if _, ok := errors.AsType[*promql.QueryError](err); ok {
		// Prometheus's: what to check (the line said Go's words alone,
		// where each query's own error says it).
		hint = promql.TransportHint(err)
	}
	return ue.Op + " " + addr + ": " + cause.Error() + hint
}

// logTransportFailures logs as one line the cycle's failed reads of two or
// more signals that failed on one transport cause (transportCause: the
// server unreachable, every query of every target failing alike): which
// signals, how many targets, the cause once, at most once per logEvery.
// Prometheus down was a line per signal (seven for two targets), each
// with the same DNS error. It marks them logged and takes them out of
// failed (run nil); the rest are logReads' as before.
func (l *Loop) logTransportFailures(now time.Time, failed []readEvent) {
	type group struct {
		first   int
		signals []string
		targets map[string]bool
	}
	var groups map[string]*group
	var order []string
	for i, ev := range failed {
		if ev.run == nil {
			continue
		}
		if ev.cause == "" {
			continue
		}
		key := ev.e.Reason + "\x00" + ev.cause
		g := groups[key]
		if g == nil {
			if groups == nil {
				groups = map[string]*group{}
			}
			g = &group{first: i, targets: map[string]bool{}}
			groups[key] = g
			order = append(order, key)
		}
		if !slices.Contains(g.signals, ev.signal) {
			g.signals = append(g.signals, ev.signal)
		}
		g.targets[ev.target] = true
	}
	for _, key := range order {
		g := groups[key]
		if len(g.signals) < 2 {
			continue // one signal: logReads' own line
		}
		first := failed[g.first]
		cause := key[strings.IndexByte(key, 0)+1:]
		logged := false
		if suppressed, ok := l.limiter.allow(now, "\x00transport\x00"+key); ok {
			l.log.Warn("signal reads failed", "target", first.target, "targets", len(g.targets), "signals", strings.Join(g.signals, ","), "reason", first.e.Reason, "err", cause, "suppressed_since_last", suppressed)
			logged = true
		}
		for i := g.first; i < len(failed); i++ {
			if ev := failed[i]; ev.run != nil && ev.e.Reason == first.e.Reason && ev.cause == cause {
				ev.run.logged = ev.run.logged || logged
				ev.run.cause = key
				failed[i].run = nil
			}
		}
	}
}

// warnEvent is a target read with warnings this cycle (logWarnings).
type warnEvent struct {
	target, msg string
	warnings    []string
}

// logWarnings logs the cycle's reads with warnings: a single target's as
// its own line, at most once a minute per target; several targets' of one
// kind (msg) as one line naming the first target, how many (targets=N)
// and the first's warnings, at most once a minute: a Thanos store down
// answers every target's queries with the same partial-response warning,
// and 20 targets were 20 lines a minute. Called with mu held.
func (l *Loop) logWarnings(now time.Time) {
	warned := l.scratch.warned
	defer func() {
		clear(warned)
		l.scratch.warned = warned[:0]
	}()
	for i, ev := range warned {
		if ev.msg == "" {
			continue // logged with an earlier one of its kind
		}
		n := 1
		for j := i + 1; j < len(warned); j++ {
			if warned[j].msg == ev.msg {
				n++
				warned[j].msg = ""
			}
		}
		if n == 1 {
			if suppressed, ok := l.limiter.allow(now, ev.target+"\x00warnings"); ok {
				l.log.Warn(ev.msg, "target", ev.target, "warnings", ev.warnings, "suppressed_since_last", suppressed)
			}
			continue
		}
		if suppressed, ok := l.limiter.allow(now, "\x00targets\x00warnings\x00"+ev.msg); ok {
			l.log.Warn(ev.msg, "target", ev.target, "targets", n, "warnings", ev.warnings, "suppressed_since_last", suppressed)
		}
	}
}

// logLimiter logs each (target, signal, reason, transport cause) at most once per
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

// log logs e (of transport cause cause, "" for none) unless the limiter
// suppresses it, and reports whether it did.
// Its transport cause is in the key: two pages of one target on hosts
// down each on its own are two lines.
func (ll *logLimiter) log(lg *slog.Logger, now time.Time, target string, e ReadError, cause string) bool {
	suppressed, ok := ll.allow(now, target+"\x00"+e.Signal+"\x00"+e.Reason+"\x00"+cause)
	if ok {
		lg.Warn("signal read failed", "target", target, "signal", e.Signal, "reason", e.Reason, "err", e.Err, "suppressed_since_last", suppressed)
	}
	return ok
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
func (l *Loop) logStuck(now time.Time, target string, rd *Reading) {
	if !rd.StuckKnown || rd.Stuck == 0 {
		return
	}
	if suppressed, ok := l.limiter.allow(now, target+"\x00stuck"); ok {
		args := []any{"target", target, "stuck", rd.Stuck}
		if len(rd.StuckReplicas) > 0 { // Prometheus mode counts the pods, it does not name them
			args = append(args, "replicas", rd.StuckReplicas)
		}
		args = append(args, "source", l.source.Name(), "suppressed_since_last", suppressed)
		l.log.Warn("replicas look stuck (requests wait, nothing runs or no token is processed): not counted as load", args...)
	}
}

// noteDuplicates counts the series the source folded as copies
// (infscale_deduplicated_series_total) and logs it once per target (again
// only after a cycle without copies).
func (l *Loop) noteDuplicates(t *target, rd *Reading) {
	if rd.Duplicated <= 0 {
		t.dupLogged = false
		return
	}
	l.metrics.Deduplicated(t.key, rd.Duplicated)
	if !t.dupLogged {
		t.dupLogged = true
		l.log.Warn("duplicated series folded: a pod's series are collected more than once (two scrape jobs, an HA pair); read once per pod",
			"target", t.key, "series", rd.Duplicated, "source", l.source.Name())
	}
}
