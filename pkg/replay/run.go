package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/trace"
)

// Config is the replay's setting, shared by every policy of a comparison.
// Zero fields take the defaults in brackets (Defaults fills them).
type Config struct {
	// Model is the replica (a *replica.Replica). Required.
	Model Model
	// SLOTTFT is the time-to-first-token SLO in seconds [2].
	SLOTTFT float64
	// Period is how often policies observe and decide, in seconds [15].
	Period float64
	// Prefill is how prompts share the GPU with decoding [PrefillChunked].
	Prefill PrefillMode
	// MaxBatchedTokens is vLLM's max_num_batched_tokens: the tokens one
	// step carries (chunked prefill: decode tokens + a prompt chunk); with
	// PrefillStall, the prompt tokens one prefill phase takes (at least one
	// whole prompt) [8192].
	MaxBatchedTokens int
	// Drain is how long after the trace's end requests may still finish, in
	// seconds [600]; requests without a first token by then miss.
	Drain float64
	// Epoch is the wall time of the trace's second 0, the clock Decide
	// sees (schedule windows read it) [2026-01-05 00:00 UTC, a Monday].
	Epoch time.Time
	// Initial is the replicas ready at second 0 [warm start: what the
	// oracle would run for the trace's first cold start + period, at least
	// the policy's minimum and 1: a trace that starts in the middle of
	// traffic does not charge every policy a cold start at second 0].
	// Policies start warm too: as if they had been asking for Initial.
	Initial int
	// TTFTWindow and TTFTQuantile are the ttft signal's window in seconds
	// and quantile [60, 0.95]; the queuewait signal uses them too.
	TTFTWindow, TTFTQuantile float64
	// RateWindow is the span of the demand signals' rates and means, in
	// seconds [30]: rate(...[30s]) of the arrival and token counters.
	RateWindow float64
	// Timeline records a Sample every Period.
	Timeline bool
	// Progress, when set, is called now and then with the simulated time and
	// the trace's end (+Inf while unknown), from the policy's goroutine.
	Progress func(now, end float64)
	// MaxBacklog is the most requests this replay keeps in the system
	// before it sheds arrivals (Result.Shed) [the package's MaxBacklog]: a
	// command that runs replays side by side lowers it when their queues
	// would not fit its memory budget (AtOnce).
	MaxBacklog int64
	// SearchAtOnce is the most seed policies optimal's hindsight search
	// replays side by side [0: GOMAXPROCS]. Each seed holds a replay's
	// backlog, so a search at GOMAXPROCS takes that many replays' memory
	// at most (a far-short seed is replayed to the end when the schedule
	// to beat misses as much); which seeds run together changes nothing.
	SearchAtOnce int
	// Size, when set, sizes RunAll's and RunAllPD's replays to the memory
	// a command may take, once before they start: given how many there
	// are, each of pools pools (1; 2 for a P/D pair), whether one of them
	// searches (Policy.Searches: optimal, whose seeds SearchAtOnce sizes),
	// and requests, which counts the trace's requests up to MaxBacklog (a
	// pass over it; 0 when it fails), it returns how many run at once,
	// each one's backlog bound and SearchAtOnce. Nil: all at once, each at
	// MaxBacklog. Run does not read it.
	Size func(n, pools int, search bool, requests func() int64) Sizing

	duration float64         // the trace's declared duration
	ctx      context.Context // Run's, for controllers that search before the replay (optimal)
}

// PrefillMode is how a replica schedules prompts beside running sequences.
type PrefillMode int

const (
	// PrefillChunked is vLLM V1's scheduling (chunked prefill, always on
	// in V1): each step carries the running sequences' decode tokens and a
	// chunk of waiting prompts, so decoding advances one token per step
	// while a prompt prefills. A step is compute-bound while it carries a
	// prompt chunk.
	PrefillChunked PrefillMode = iota
	// PrefillStall is vLLM V0's default: a prefill step runs alone and the
	// running sequences wait for it.
	PrefillStall
)

// ParsePrefillMode reads "chunked" or "stall".
func ParsePrefillMode(s string) (PrefillMode, error) {
	switch s {
	case "chunked":
		return PrefillChunked, nil
	case "stall":
		return PrefillStall, nil
	}
	return 0, fmt.Errorf("prefill mode %q: want chunked or stall", s)
}

// MinPeriod is the shortest Config.Period in seconds: policies observe what
// a Prometheus scrape shows, and the TTFT window keeps one slot per period.
const MinPeriod = 1.0

// searchShare is the part of a searching policy's progress that its
// search takes (the rest is its replay).
const searchShare = 0.9

// MaxPeriods bounds a replay's length in policy periods (about 4 years at
// 15 s, 194 days at Knative's 2 s tick): a trace whose arrivals (after
// rate scaling and windowing) or drain reach further is an error rather
// than a replay that never ends.
const MaxPeriods = 1 << 23

// DefaultEpoch is the default simulated wall time of the trace's second 0.
var DefaultEpoch = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// Defaults returns c with zero fields set to their defaults.
func (c Config) Defaults() Config {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.SLOTTFT, 2)
	def(&c.Period, 15)
	def(&c.Drain, 600)
	def(&c.TTFTWindow, 60)
	def(&c.RateWindow, 30)
	def(&c.TTFTQuantile, 0.95)
	if c.MaxBatchedTokens == 0 {
		c.MaxBatchedTokens = 8192
	}
	if c.Epoch.IsZero() {
		c.Epoch = DefaultEpoch
	}
	if c.MaxBacklog == 0 {
		c.MaxBacklog = MaxBacklog
	}
	return c
}

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	var errs []error
	pos := func(name string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("%s %g: want a finite number > 0", name, v))
		}
	}
	pos("SLO TTFT", c.SLOTTFT)
	pos("TTFT window", c.TTFTWindow)
	pos("rate window", c.RateWindow)
	if !(c.Period >= MinPeriod) || math.IsInf(c.Period, 0) {
		errs = append(errs, fmt.Errorf("period %g s: want a finite period >= %g s (policies observe what a scrape shows)", c.Period, MinPeriod))
	}
	if !(c.Drain >= 0) || c.Drain > MaxPeriods*max(c.Period, MinPeriod) {
		errs = append(errs, fmt.Errorf("drain %g s: want seconds >= 0, at most %d periods", c.Drain, MaxPeriods))
	}
	if !(c.TTFTQuantile > 0 && c.TTFTQuantile < 1) {
		errs = append(errs, fmt.Errorf("TTFT quantile %g: want a fraction in (0, 1)", c.TTFTQuantile))
	}
	if c.MaxBatchedTokens < 1 {
		errs = append(errs, fmt.Errorf("max batched tokens %d: want >= 1", c.MaxBatchedTokens))
	}
	if c.MaxBacklog < 1 {
		errs = append(errs, fmt.Errorf("backlog bound %d requests: want >= 1", c.MaxBacklog))
	}
	if c.Initial < 0 || c.Initial > MaxReplicas {
		errs = append(errs, fmt.Errorf("initial replicas %d: want 0..%d", c.Initial, MaxReplicas))
	}
	if c.Model == nil {
		errs = append(errs, errors.New("no replica model"))
	}
	return errors.Join(errs...)
}

// Result is one policy's replay.
type Result struct {
	// Policy is the policy string; Trace the trace's name.
	Policy string
	Trace  string
	// Requests is every request of the trace: Met + Late + Unserved + Rejected
	// (Shed among Unserved).
	Requests int64
	// Met got a first token within the SLO; Late after it; Unserved never
	// (still queued when the replay stopped, Drain after the trace's end);
	// Rejected could never fit a replica's KV cache.
	Met      int64
	Late     int64
	Unserved int64
	Rejected int64
	// Shed counts the requests that arrived while MaxBacklog requests were
	// in the system (held, waiting or running): counted unserved at
	// arrival, never queued, so that a policy far short of the traffic
	// does not take the replay's memory with its queue (ShedWarning);
	// FirstShed is the first one's arrival, in seconds.
	Shed      int64
	FirstShed float64
	// Backlog is the replay's bound on the requests in the system
	// (Config.MaxBacklog as defaulted).
	Backlog int64
	// LongestRejected is the tokens (prompt + output) of the longest
	// rejected request, KVCapacity a replica's KV cache in tokens: a
	// request longer than the cache is unservable by any replica
	// (RejectedWarning).
	LongestRejected, KVCapacity int64
	// ShortestPrompt is the shortest prompt, in tokens, of the requests
	// that fit a replica's KV cache (0 when none does). IdleTTFT is the
	// TTFT it has alone on an idle replica, in seconds: the model's request
	// overhead plus its prefill (0 when none fits). No request of the trace
	// has a shorter TTFT under any policy, so an SLO below IdleTTFT is
	// missed by every request.
	ShortestPrompt int32
	IdleTTFT       float64
	// TTFTP50 and TTFTP95 are TTFT quantiles over the requests that got a
	// first token, in seconds (within 0.25%); NaN when none did.
	TTFTP50 float64
	TTFTP95 float64
	// ReplicaSeconds is replica time over [0, Duration]: starting, ready and
	// draining replicas all count.
	ReplicaSeconds float64
	// Peak is the most replicas the policy asked for.
	Peak int
	// ScaleEvents counts changes of the replica count; Reversals the ones
	// opposite to the previous change made less than
	// recommend.ReversalWindow (300 s) before (recommend.IsReversal, as
	// serve counts them): thrash.
	ScaleEvents int
	Reversals   int
	// OutputTokens are the tokens of the requests that completed.
	OutputTokens int64
	// Duration is the trace's span in seconds (declared, or the last
	// arrival); Stop is when the replay stopped (>= Duration).
	Duration float64
	Stop     float64
	// Timeline is one Sample per Period when Config.Timeline is set.
	Timeline []Sample
	// LowerBound is the certified lower bound computed beside `optimal`'s
	// schedule (nil for every other policy).
	LowerBound *Bound
}

// RejectedWarning says, when the trace has requests longer than a
// replica's KV cache, how many and how long: no replica can serve them, so
// every policy misses them at no replica cost (a policy cannot do better
// on them; a larger model context, a bigger GPU or more tensor parallelism
// can). "" when there is none.
func (r Result) RejectedWarning() string {
	if r.Rejected == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %d of %d requests (%s) are longer than a replica's KV cache (the longest %d prompt+output tokens, the cache %d tokens): no replica can serve them; counted as unservable (rejected), an SLO miss of every policy that costs no replica time",
		r.Trace, r.Rejected, r.Requests, FormatPct(100*float64(r.Rejected)/float64(r.Requests)), r.LongestRejected, r.KVCapacity)
}

// SLOWarning says, when no request of the trace can meet slo (seconds)
// even alone on idle replicas, that every policy misses every request,
// the least TTFT a request has and what to change; "" otherwise (also when
// no request fits a replica, shortestPrompt 0). idleTTFT is that least
// TTFT in seconds, of the trace's shortest prompt (shortestPrompt tokens):
// Result.IdleTTFT on one replica, or with pair PDResult.IdleTTFT through a
// P/D pair's idle prefill and decode pools. Without the warning `optimal`
// answers quietly with no replica (one pool: no replica meets a request,
// so the cheapest schedule with the fewest misses runs none; a pair's
// keeps a decode replica for the requests it admits, so that is not said
// of it). The one rule of every command that judges a TTFT SLO through a
// replay (simulate, simulate --pd, tune, tune --pd, backtest, profile);
// Result.SLOWarning and PDResult.SLOWarning say it of a replay.
func SLOWarning(trace string, slo float64, shortestPrompt int32, idleTTFT float64, pair bool) string {
	if shortestPrompt == 0 || !(idleTTFT > slo) {
		return ""
	}
	tokens := "tokens"
	if shortestPrompt == 1 {
		tokens = "token"
	}
	where, optimal := "on an idle replica", " (optimal, the cheapest schedule with the fewest misses, runs no replica)"
	if pair {
		where, optimal = "through idle prefill and decode pools", ""
	}
	return fmt.Sprintf("%s: no request can meet the SLO TTFT of %gs: the least TTFT a request has %s is %.4gs (its shortest prompt, %d %s, alone); every policy misses every request%s. Raise --slo-ttft above %.4gs, or replay a faster replica (--gpu, --tp)",
		trace, slo, where, idleTTFT, shortestPrompt, tokens, optimal, idleTTFT)
}

// SLOWarning is SLOWarning of r's trace, shortest prompt and IdleTTFT on
// one replica.
func (r Result) SLOWarning(slo float64) string {
	return SLOWarning(r.Trace, slo, r.ShortestPrompt, r.IdleTTFT, false)
}

// MaxBacklog bounds the requests a replay keeps in the system (held,
// waiting and running, over the fleet), Config.MaxBacklog's default:
// 16,777,216, 0.5 GiB of queues at BacklogRequestBytes each. A request behind that many waits at least MaxBacklog / (the
// fleet's rate) to start: 8 s at 2 million requests a second, beyond any
// fleet the replica catalog sizes; past it a request is shed (Result.Shed).
// A variable so that the commands' tests can lower it (and restore it)
// rather than fill half a GiB; it is not to change while a replay runs.
var MaxBacklog int64 = 1 << 24

// ShedWarning says, when the policy's backlog reached its bound, how many
// requests were shed and from when: they count as unserved misses; the
// policy is far short of the traffic. "" when none was.
func (r Result) ShedWarning() string {
	if r.Shed == 0 {
		return ""
	}
	bound, lowered := r.Backlog, ""
	if bound == 0 {
		bound = MaxBacklog
	}
	if bound < MaxBacklog {
		lowered = fmt.Sprintf(", lowered from %d to what the process's memory holds: give it more to replay with the full bound", MaxBacklog)
	}
	return fmt.Sprintf("%s: %d requests were in the system (held, waiting, running) from t=%.0fs: %d later arrivals (%s of the trace) were counted unserved without being queued (the replay's memory bound%s); the policy is far short of this traffic",
		r.Policy, bound, r.FirstShed, r.Shed, FormatPct(100*float64(r.Shed)/float64(r.Requests)), lowered)
}

// Misses counts the requests that missed the SLO: late, unserved or rejected.
func (r Result) Misses() int64 { return r.Late + r.Unserved + r.Rejected }

// MissPct is Misses as a percentage of Requests.
func (r Result) MissPct() float64 {
	if r.Requests == 0 {
		return 0
	}
	return 100 * float64(r.Misses()) / float64(r.Requests)
}

// ReplicaMinutes is ReplicaSeconds / 60.
func (r Result) ReplicaMinutes() float64 { return r.ReplicaSeconds / 60 }

// TokensPerReplicaHour is output tokens per replica-hour (divide by the
// GPUs per replica for tokens per GPU-hour); NaN without replica time.
func (r Result) TokensPerReplicaHour() float64 {
	if r.ReplicaSeconds == 0 {
		return math.NaN()
	}
	return float64(r.OutputTokens) / (r.ReplicaSeconds / 3600)
}

// warmer is a Controller that can start as if it had been asking for n
// replicas before the trace began.
type warmer interface {
	warm(n int, epoch time.Time)
}

// warmSize is the oracle's replica count for the trace's first cold start
// plus one period.
func warmSize(e env) (int, error) {
	c, err := newOracle(e, 0, MaxReplicas)
	if err != nil {
		return 0, err
	}
	defer c.(*oracleCtl).rd.Close()
	n := c.Decide(0, recommend.Observation{})
	if e.cfg.ctx != nil && e.cfg.ctx.Err() != nil {
		return 0, e.cfg.ctx.Err()
	}
	return n, nil
}

// Controller decides the replica count of one replay from what it
// observes; a Policy builds a fresh one per replay. Controllers may
// optionally implement Period() float64 to observe at their own period
// (Knative's 2 s tick) instead of Config.Period.
type Controller interface {
	// Decide returns the desired replicas at now (seconds since the trace
	// start) given the observation.
	Decide(now float64, obs recommend.Observation) int
}

// Run replays src through simulated replicas under pol. It is
// deterministic: the same inputs give the same Result. Errors: an invalid
// Config, the policy failing to build, a trace error (naming file:line), or
// ctx's error when cancelled.
func Run(ctx context.Context, src trace.Source, pol Policy, cfg Config) (Result, error) {
	cfg.ctx = ctx
	s, err := newSim(src, pol, cfg)
	if err != nil {
		return Result{}, err
	}
	defer s.rd.Close()
	return s.replay(ctx)
}

// newSim prepares one replay.
func newSim(src trace.Source, pol Policy, cfg Config) (*sim, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pol.build == nil {
		return nil, errors.New("replay: policy not parsed (use ParsePolicy)")
	}
	cfg.duration = src.Duration
	sp, err := newSpeed(cfg.Model)
	if err != nil {
		return nil, err
	}
	bcfg := cfg
	if p := cfg.Progress; p != nil && pol.search {
		// A policy that searches before its replay (optimal) reports one
		// monotonic progress: the search first, then the replay.
		bcfg.Progress = func(now, end float64) { p(searchShare*now/end, 1) }
		cfg.Progress = func(now, end float64) {
			if end > 0 && !math.IsInf(end, 0) {
				p(searchShare+(1-searchShare)*min(now/end, 1), 1)
			}
		}
	}
	ctl, err := pol.build(env{cfg: bcfg, sp: sp, src: src})
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", pol.Name, err)
	}
	rd, err := openAhead(src)
	if err != nil {
		return nil, err
	}
	s := &sim{cfg: cfg, sp: sp, ctl: ctl, rd: rd, end: math.Inf(1), ttftWin: newWindow(ttftBuckets, cfg.TTFTWindow, cfg.Period),
		queueWin: newWindow(queueBuckets, cfg.TTFTWindow, cfg.Period), demand: newDemandWindow(cfg.RateWindow, cfg.Period)}
	if src.Duration > 0 {
		s.end = src.Duration
	}
	s.res.Policy, s.res.Trace, s.res.Backlog = pol.Name, src.Name, cfg.MaxBacklog
	if b, ok := ctl.(interface{ lowerBound() *Bound }); ok {
		s.res.LowerBound = b.lowerBound()
	}
	initial := cfg.Initial
	switch {
	case initial == 0 && pol.exact:
		initial = pol.min // fixed:N and Follow start where they are
	case initial == 0:
		initial = max(pol.min, 1)
		if need, err := warmSize(env{cfg: cfg, sp: sp, src: src}); err == nil {
			initial = max(initial, need)
		}
		if pol.max > 0 {
			initial = min(initial, pol.max) // never warmer than the policy may ask for
		}
	}
	if o, ok := ctl.(interface{ initialReplicas() int }); ok && cfg.Initial == 0 {
		initial = o.initialReplicas() // the hindsight optimum sizes its own warm start
	}
	if w, ok := ctl.(warmer); ok {
		w.warm(initial, cfg.Epoch)
	}
	for range initial {
		s.addReplica(0, true)
	}
	s.res.Peak = initial
	return s, nil
}

// replay runs the event loop and returns the result.
func (s *sim) replay(ctx context.Context) (Result, error) {
	if err := s.run(ctx); err != nil {
		if errors.Is(err, trace.ErrEmpty) {
			return Result{}, fmt.Errorf("%s: %w", s.res.Trace, err)
		}
		return Result{}, err
	}
	return s.res, nil
}

// RunAll replays src under every policy, each in its own goroutine (as
// many at once as Config.Size says), and returns the results in policy
// order. Config.Progress, when set, is called with the least advanced
// policy's share done (now/end, 1). Each replay is independent, so the
// results are the same whatever the parallelism. The first error wins.
func RunAll(ctx context.Context, src trace.Source, pols []Policy, cfg Config) ([]Result, error) {
	return runAll(ctx, src, len(pols), 1, slices.ContainsFunc(pols, Policy.Searches), cfg, func(i int, cfg Config) (Result, error) { return Run(ctx, src, pols[i], cfg) })
}

// RunAllPD is RunAll for P/D pairs: src replayed under every pair policy
// (RunPD with pd), in policy order, with RunAll's progress and errors.
func RunAllPD(ctx context.Context, src trace.Source, pols []PDPolicy, cfg Config, pd PDConfig) ([]PDResult, error) {
	return runAll(ctx, src, len(pols), 2, slices.ContainsFunc(pols, PDPolicy.Searches), cfg, func(i int, cfg Config) (PDResult, error) { return RunPD(ctx, src, pols[i], cfg, pd) })
}

// runAll runs run(i, cfg) for i in [0, n), each in its own goroutine, as
// many at once and with the backlog bound cfg.Size gives for n replays of
// pools pools over src, search when one of them searches (all,
// MaxBacklog without it), cfg's Progress
// reporting the least advanced run's share; the results in order, or the
// first error.
func runAll[R any](ctx context.Context, src trace.Source, n, pools int, search bool, cfg Config, run func(i int, cfg Config) (R, error)) ([]R, error) {
	atOnce := n
	if cfg.Size != nil {
		s := cfg.Size(n, pools, search, func() int64 {
			c, err := trace.Count(ctx, src, MaxBacklog)
			if err != nil {
				return 0
			}
			return c
		})
		atOnce, cfg.MaxBacklog, cfg.SearchAtOnce = s.AtOnce, s.Backlog, s.SearchAtOnce
	}
	slots := make(chan struct{}, max(atOnce, 1))
	res := make([]R, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := make([]float64, n)
	for i := range n {
		cfg := cfg
		if prog := cfg.Progress; prog != nil {
			// One progress for all: the least advanced run's share.
			cfg.Progress = func(now, end float64) {
				if !(end > 0) || math.IsInf(end, 0) {
					return
				}
				mu.Lock()
				done[i] = max(done[i], min(now/end, 1))
				lo := slices.Min(done)
				mu.Unlock()
				prog(lo, 1)
			}
		}
		wg.Go(func() {
			defer crashlog.Recover() // serve's tuning replays
			slots <- struct{}{}
			defer func() { <-slots }()
			if res[i], errs[i] = run(i, cfg); errs[i] == nil && cfg.Progress != nil {
				cfg.Progress(1, 1) // done
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// openAhead opens a pass over src, read ahead on a second core when there
// is one (trace.ReadAhead): the trace's generation or parsing beside the
// replay's event loop.
func openAhead(src trace.Source) (trace.Reader, error) {
	rd, err := src.Open()
	if err != nil || runtime.GOMAXPROCS(0) == 1 {
		return rd, err
	}
	return trace.ReadAhead(rd), nil
}
