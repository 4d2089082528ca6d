package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/trace"
)

// The hindsight optimum (`optimal`): the cheapest replica schedule with
// the fewest SLO misses that the search below finds, piecewise constant per
// decision period, with the replay itself as the evaluator.
//
// The search plans the ready replicas R_j of every period j = [jP, (j+1)P)
// forward in time on a planning replay (the same event loop and replicas,
// its state cloned for each trial):
//
//  1. Greedy. At second jP, each candidate x is tried on a clone: the fleet
//     set to x ready replicas (added ready, or the least loaded drained, as
//     a scale-down does), then replayed to (j+1)P + SLO with the trace's
//     arrivals. Its misses are the late first tokens plus the requests
//     still waiting past their deadline. R_j is the fewest replicas with
//     the fewest misses (a galloping search from R_{j-1}, taking misses as
//     non-increasing in x); the planning replay then moves on one period
//     with R_j.
//  2. Cold start. A replica that serves from jP must be asked for L =
//     ceil(cold start / P) periods earlier, and kept while any period up to
//     L ahead needs it: the schedule asks for d_k = max(R_k, ..., R_{k+L})
//     at second kP (and starts with max(R_0, ..., R_L), ready, like every
//     policy's warm start). Dropping a replica and asking for it again costs
//     its cold start, which is what keeping it through a gap of up to L
//     periods costs, so the max is also the cheaper of the two. The real
//     schedule never has fewer ready replicas than the plan.
//  3. Repair. The schedule is replayed for real (Run); for each request
//     that still misses, R of its arrival period is raised by one, and the
//     schedule is replayed again, up to optimalRepairs times while the
//     misses fall.
//  4. Seeds. The oracle's schedule and the asks of every causal policy of
//     OptimalSeeds, recorded during their own replays, are candidates too;
//     the best (fewest misses, then least replica time) goes on, so none
//     of them beats `optimal`.
//  5. Descent. Each plateau of the asks, then its first and last period,
//     is lowered by one and kept when the replay misses no more and costs
//     less, within a budget of replays that shrinks with the trace.
//  6. Cap. The lowest ceiling C on the asks (min(d_k, C)) that misses no
//     more is bisected (misses taken as non-increasing in C) and kept
//     when it costs less: where misses cannot be avoided, peaks that buy
//     one request each are cut.
//
// It is not a proven optimum: the greedy is myopic (a period's minimum
// ignores that one more replica now might save two later), misses are
// only near monotone in x and the descent is local. lowerBound
// (optimal_bound.go) states how far from the optimum it can be at most.
type optimalCtl struct {
	period float64 // its tick: the replay's period, or a seed's own (knative's 2 s)
	init   int
	d      []int  // d[k]: replicas asked for at second kP
	bound  *Bound // the certified lower bound beside the schedule
}

// Period is the schedule's tick (sim.ctlPeriod): a seed recorded on its
// own tick replays on it.
func (c *optimalCtl) Period() float64 { return c.period }

// lowerBound is the Bound computed beside the schedule (run.go puts it in
// the Result).
func (c *optimalCtl) lowerBound() *Bound { return c.bound }

func (c *optimalCtl) Decide(now float64, _ recommend.Observation) int {
	k := int(math.Round(now / c.period))
	if k < len(c.d) {
		return c.d[k]
	}
	return 0
}

// initialReplicas is the schedule's own warm start (run.go's newSim).
func (c *optimalCtl) initialReplicas() int { return c.init }

// optimalRepairs bounds the repair replays of the hindsight optimum.
const optimalRepairs = 6

// parseOptimal reads `optimal` (no options).
func parseOptimal(full, s string, parts []part, off int) (Policy, error) {
	if len(parts) > 1 {
		return Policy{}, policyError(full, off+parts[1].at+1, "optimal takes no options")
	}
	return Policy{Name: s, min: 1, search: true, build: func(e env) (Controller, error) { return newOptimal(e) }}, nil
}

// newOptimal runs the search and returns the schedule.
func newOptimal(e env) (Controller, error) {
	ctx := e.cfg.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	prog := progressPhases(e.cfg.Progress)
	plan, err := planGreedy(ctx, e, prog(0, 0.3))
	if err != nil {
		return nil, err
	}
	// After the greedy, which refuses a trace longer than a replay covers.
	bound, err := lowerBound(ctx, e)
	if err != nil {
		return nil, err
	}
	lead := int(math.Ceil(e.sp.cold/e.cfg.Period - 1e-9))
	best, bestRes, err := replaySchedule(ctx, e, plan, lead, prog(0.3, 0.35))
	if err != nil {
		return nil, err
	}
	for round := 0; round < optimalRepairs && bestRes.misses > 0; round++ {
		next := append([]int(nil), best.r...)
		for j, n := range bestRes.missPer {
			for len(next) <= j {
				next = append(next, 0)
			}
			next[j] += int(n)
		}
		cand, res, err := replaySchedule(ctx, e, next, lead, prog(0.35, 0.4))
		if err != nil {
			return nil, err
		}
		if !res.better(bestRes) {
			break
		}
		best, bestRes = cand, res
	}
	// The oracle's and the causal policies' own schedules: the search
	// starts from the best of all, so no seeded policy beats it.
	if o, ores, err := oracleSchedule(ctx, e, prog(0.4, 0.45)); err == nil && ores.better(bestRes) {
		best, bestRes = o, ores
	}
	if bestRes.misses == bound.Unmeetable && bestRes.seconds <= bound.ReplicaSeconds*(1+1e-9) {
		// At the certified bound: provably the least; nothing to search.
		best.ctl.bound = &bound
		return best.ctl, nil
	}
	if s, sres, ok, err := seedSchedules(ctx, e, bestRes, prog(0.45, 0.7)); err != nil {
		return nil, err
	} else if ok && sres.better(bestRes) {
		best, bestRes = s, sres
	}
	// Descent: lower each plateau of the asks while the misses do not grow.
	budget := min(max(int(optimalDescentWork/max(float64(bound.requests), 1)), 4), optimalDescents)
	if d, dres, err := descend(ctx, e, best.ctl, bestRes, budget, prog(0.7, 0.95)); err != nil {
		return nil, err
	} else if dres.better(bestRes) {
		best, bestRes = schedule{ctl: d}, dres
	}
	// A cap: the lowest ceiling on the schedule that misses no more.
	if c, cres, ok, err := capSchedule(ctx, e, best.ctl, bestRes, prog(0.95, 0.98)); err != nil {
		return nil, err
	} else if ok && cres.better(bestRes) {
		best, bestRes = c, cres
	}
	// The warm start alone: a seed's (its policy's, the oracle's) is not
	// one of the asks the descent lowers.
	if w, wres, ok, err := warmStart(ctx, e, best.ctl, bestRes, prog(0.98, 1)); err != nil {
		return nil, err
	} else if ok && wres.better(bestRes) {
		best, bestRes = w, wres
	}
	best.ctl.bound = &bound
	return best.ctl, nil
}

// OptimalSeeds are the causal policies whose schedules seed the search:
// the default set's causal policies, knative:16 on its own 2 s tick,
// recommended and fixed:1 to fixed:6 (docs/evaluation/recommended.md's
// columns), so that none of them beats `optimal` on a trace.
var OptimalSeeds = []string{
	"cpu:60", "cpu:25", "queue:24", "queue:24,lookahead=90", "queue:24,min=0,cooldown=120",
	"knative:16", "hpa(recommended)", "recommended", "fixed:1", "fixed:2", "fixed:3", "fixed:4", "fixed:5", "fixed:6",
}

// seedSchedules replays each of OptimalSeeds (as many at once as there
// are cores), records its asks as a schedule and returns the best (fewest
// misses, then least replica time, then the first in OptimalSeeds) when it
// is better than bar. A policy that decides every period replays its
// recorded schedule exactly, so the schedule's result is the policy's. A
// seed that can no longer beat bar (its misses and replica time only
// grow) is stopped at the tick that shows it; fixed:N, whose cost N × the
// span is known before its replay, is not replayed when that alone loses.
// Each seed is judged against bar alone, so the result does not depend on
// which replay finishes first.
func seedSchedules(ctx context.Context, e env, bar scheduleResult, prog func(float64)) (schedule, scheduleResult, bool, error) {
	type seed struct {
		s   schedule
		r   scheduleResult
		ok  bool
		err error
	}
	out := make([]seed, len(OptimalSeeds))
	end := e.src.Duration
	var mu sync.Mutex
	finished := 0
	var wg sync.WaitGroup
	atOnce := runtime.GOMAXPROCS(0)
	if e.cfg.SearchAtOnce > 0 {
		atOnce = e.cfg.SearchAtOnce
	}
	sem := make(chan struct{}, max(atOnce, 1))
	for i, spec := range OptimalSeeds {
		pol, err := ParsePolicy(spec)
		if err != nil {
			return schedule{}, scheduleResult{}, false, err
		}
		if pol.exact && end > 0 && float64(pol.min)*end >= bar.seconds && bar.misses == 0 {
			continue
		}
		wg.Go(func() {
			defer crashlog.Recover()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i].s, out[i].r, out[i].ok, out[i].err = seedOne(ctx, e, pol, bar)
			mu.Lock()
			finished++
			prog(float64(finished) / float64(len(OptimalSeeds)))
			mu.Unlock()
		})
	}
	wg.Wait()
	best, bestRes, found := schedule{}, bar, false
	for _, o := range out {
		if o.err != nil {
			return schedule{}, scheduleResult{}, false, o.err
		}
		if o.ok && o.r.better(bestRes) {
			best, bestRes, found = o.s, o.r, true
		}
	}
	prog(1)
	return best, bestRes, found, nil
}

// seedOne replays pol with its asks recorded; ok is false when the replay
// was stopped because it could no longer beat bar.
func seedOne(ctx context.Context, e env, pol Policy, bar scheduleResult) (schedule, scheduleResult, bool, error) {
	cfg := e.cfg
	cfg.Timeline, cfg.Progress = false, nil
	s, err := newSim(e.src, pol, cfg)
	if err != nil {
		return schedule{}, scheduleResult{}, false, err
	}
	defer s.rd.Close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rec := &recorder{Controller: s.ctl, period: s.ctlPeriod()} // knative's 2 s tick
	rec.stop = func(now float64) {
		cost := s.res.ReplicaSeconds
		for _, r := range s.reps {
			cost += max(0, min(now, s.end)-r.added)
		}
		if m := s.res.Late + s.res.Rejected; m > bar.misses || (m == bar.misses && cost >= bar.seconds) {
			cancel() // it cannot beat bar any more
		}
	}
	s.ctl = rec
	init := s.spec()
	res, err := s.replay(sctx)
	if sctx.Err() != nil && ctx.Err() == nil {
		return schedule{}, scheduleResult{}, false, nil
	}
	if se := (spanError{}); errors.As(err, &se) && rec.period < e.cfg.Period {
		// A seed on a shorter tick (knative's 2 s) covers fewer seconds
		// than the replay: left out on a trace past its reach.
		return schedule{}, scheduleResult{}, false, nil
	}
	if err != nil {
		return schedule{}, scheduleResult{}, false, err
	}
	r := scheduleResult{misses: res.Misses(), seconds: res.ReplicaSeconds}
	return schedule{ctl: &optimalCtl{period: rec.period, init: init, d: rec.d}}, r, true, nil
}

// optimalDescents bounds the descent's replays; optimalDescentWork is the
// requests replayed in all that it aims at: 48 replays up to about 42,000
// requests, fewer beyond, at least 4 (a week of 30 req/s: 4).
const (
	optimalDescents    = 48
	optimalDescentWork = 2e6
)

// descend lowers the schedule's plateaus (maximal runs of equal asks above
// both neighbours' level) one replica at a time, the highest first, then
// their edges (descentMoves), and keeps each change that misses no more
// and costs less; it stops after optimalDescents replays or when a pass
// keeps nothing.
func descend(ctx context.Context, e env, ctl *optimalCtl, res scheduleResult, budget int, prog func(float64)) (*optimalCtl, scheduleResult, error) {
	tries := 0
	cur, curRes, err := descendWith(ctx, ctl, res, budget, e.cfg.Initial == 0, func(n *optimalCtl) (scheduleResult, error) {
		r, err := replayCtl(ctx, e, n, n.init, func(float64) {})
		tries++
		prog(float64(tries) / float64(budget))
		return r, err
	})
	if err != nil {
		return nil, scheduleResult{}, err
	}
	prog(1)
	return cur, curRes, nil
}

// descendWith is the descent with eval scoring each lowered schedule; with
// warmFollows the warm start is lowered with the first ask when they were
// equal (the replay starts cold when its initial count is 0).
func descendWith(ctx context.Context, ctl *optimalCtl, res scheduleResult, budget int, warmFollows bool, eval func(*optimalCtl) (scheduleResult, error)) (*optimalCtl, scheduleResult, error) {
	cur, curRes := ctl, res
	tries := 0
	for tries < budget {
		kept := false
		for _, pl := range descentMoves(cur.d) {
			if tries >= budget {
				break
			}
			if err := ctx.Err(); err != nil {
				return nil, scheduleResult{}, err
			}
			n := &optimalCtl{period: cur.period, init: cur.init, d: append([]int(nil), cur.d...)}
			for k := pl[0]; k < pl[1]; k++ {
				n.d[k] = max(n.d[k]-1, 0)
			}
			if warmFollows && pl[0] == 0 && n.init > 0 && n.init == cur.d[0] {
				n.init-- // the warm start follows the first ask
			}
			tries++
			r, err := eval(n)
			if err != nil {
				return nil, scheduleResult{}, err
			}
			if r.misses <= curRes.misses && r.seconds < curRes.seconds {
				cur, curRes, kept = n, r, true
			}
		}
		if !kept {
			break
		}
	}
	return cur, curRes, nil
}

// descentMoves are the runs [i, j) of asks the descent lowers by one: each
// plateau whole, then the first and the last period of each longer one
// (a rise one period later, a fall one period earlier).
func descentMoves(d []int) [][2]int {
	pl := plateaus(d)
	out := append([][2]int(nil), pl...)
	for _, p := range pl {
		if p[1]-p[0] > 1 {
			out = append(out, [2]int{p[0], p[0] + 1}, [2]int{p[1] - 1, p[1]})
		}
	}
	return out
}

// plateaus are the maximal runs [i, j) of equal positive asks higher than
// the asks just before and after them, highest first (ties: earliest).
func plateaus(d []int) [][2]int {
	var out [][2]int
	for i := 0; i < len(d); {
		j := i
		for j < len(d) && d[j] == d[i] {
			j++
		}
		if d[i] > 0 && (i == 0 || d[i-1] < d[i]) && (j == len(d) || d[j] < d[i]) {
			out = append(out, [2]int{i, j})
		}
		i = j
	}
	slices.SortStableFunc(out, func(a, b [2]int) int { return d[b[0]] - d[a[0]] })
	return out
}

// capSchedule bisects the lowest cap C on ctl's asks (d_k -> min(d_k, C),
// the warm start too) with no more misses than res, taking misses as
// non-increasing in C: where some misses cannot be avoided, the search's
// peaks may buy little.
func capSchedule(ctx context.Context, e env, ctl *optimalCtl, res scheduleResult, prog func(float64)) (schedule, scheduleResult, bool, error) {
	peak := ctl.init
	for _, v := range ctl.d {
		peak = max(peak, v)
	}
	capped := func(c int) *optimalCtl {
		n := &optimalCtl{period: ctl.period, init: min(ctl.init, c), d: make([]int, len(ctl.d))}
		if e.cfg.Initial > 0 {
			n.init = ctl.init
		}
		for k, v := range ctl.d {
			n.d[k] = min(v, c)
		}
		return n
	}
	// The cap at the peak is the schedule itself; 0 asks for nothing.
	return bisectSchedule(ctx, e, 0, peak, res, prog, capped)
}

// bisectSchedule bisects c strictly between lo and hi (at(hi) is the
// schedule res is of) for the lowest whose schedule at(c) misses no more
// than res, misses taken as non-increasing in c, and returns that schedule
// and its replay; false when none held or a replay failed (then with its
// error). capSchedule's ceiling and warmStart's warm start are such a c.
func bisectSchedule(ctx context.Context, e env, lo, hi int, res scheduleResult, prog func(float64), at func(int) *optimalCtl) (schedule, scheduleResult, bool, error) {
	var best schedule
	var bestRes scheduleResult
	var err error
	found := false
	bisect(lo, hi, func(c int) bool {
		if err != nil {
			return true
		}
		n := at(c)
		var r scheduleResult
		if r, err = replayCtl(ctx, e, n, n.init, prog); err != nil {
			return true
		}
		if r.misses <= res.misses {
			best, bestRes, found = schedule{ctl: n}, r, true
			return true
		}
		return false
	})
	return best, bestRes, found && err == nil, err
}

// warmStart bisects the fewest replicas ready at second 0 (ctl's asks
// unchanged) with no more misses than res, taking misses as non-increasing
// in the warm start; with Config.Initial set the warm start is given, and
// nothing is searched. A seed's schedule (a policy's recorded asks) starts
// with the policy's own warm start, which no ask of the descent holds: on
// a trace whose first request comes after a cold start, one replica
// idled from second 0 until the schedule dropped it.
func warmStart(ctx context.Context, e env, ctl *optimalCtl, res scheduleResult, prog func(float64)) (schedule, scheduleResult, bool, error) {
	if e.cfg.Initial > 0 || ctl.init == 0 {
		return schedule{}, scheduleResult{}, false, nil
	}
	return bisectSchedule(ctx, e, -1, ctl.init, res, prog, func(w int) *optimalCtl {
		return &optimalCtl{period: ctl.period, init: w, d: ctl.d}
	})
}

// progressPhases maps a phase's [0, 1] onto [lo, hi] of the progress bar.
func progressPhases(p func(now, end float64)) func(lo, hi float64) func(frac float64) {
	return func(lo, hi float64) func(float64) {
		return func(f float64) {
			if p != nil {
				p(lo+(hi-lo)*min(max(f, 0), 1), 1)
			}
		}
	}
}

// schedule is a candidate: the planned ready replicas and the controller.
type schedule struct {
	r   []int
	ctl *optimalCtl
}

// scheduleResult is a candidate's real replay.
type scheduleResult struct {
	misses  int64
	seconds float64
	missPer []int32 // late and unserved requests by arrival period
}

// better orders candidates: fewer misses, then less replica time.
func (a scheduleResult) better(b scheduleResult) bool {
	return a.misses < b.misses || (a.misses == b.misses && a.seconds < b.seconds)
}

// toSchedule turns planned ready counts into the asks: d_k = max(R_k..R_{k+lead}).
func toSchedule(e env, r []int, lead int) *optimalCtl {
	c := &optimalCtl{period: e.cfg.Period, d: make([]int, len(r))}
	// A sliding maximum over [k, k+lead] (a monotone deque).
	var dq []int
	for k := len(r) - 1; k >= 0; k-- {
		for len(dq) > 0 && r[dq[len(dq)-1]] <= r[k] {
			dq = dq[:len(dq)-1]
		}
		dq = append(dq, k)
		for dq[0] > k+lead {
			dq = dq[1:]
		}
		c.d[k] = r[dq[0]]
	}
	if e.cfg.Initial > 0 {
		c.init = e.cfg.Initial
	} else if len(c.d) > 0 {
		c.init = max(c.d[0], 1)
	} else {
		c.init = 1
	}
	return c
}

// replaySchedule replays the schedule of plan r for real.
func replaySchedule(ctx context.Context, e env, r []int, lead int, prog func(float64)) (schedule, scheduleResult, error) {
	ctl := toSchedule(e, r, lead)
	res, err := replayCtl(ctx, e, ctl, ctl.init, prog)
	return schedule{r: r, ctl: ctl}, res, err
}

// replayCtl replays ctl from initial ready replicas and records the misses.
func replayCtl(ctx context.Context, e env, ctl Controller, initial int, prog func(float64)) (scheduleResult, error) {
	cfg := e.cfg
	cfg.Timeline = false
	cfg.Progress = func(now, end float64) {
		if !math.IsInf(end, 0) && end > 0 {
			prog(now / end)
		}
	}
	rd, err := e.src.Open()
	if err != nil {
		return scheduleResult{}, err
	}
	defer rd.Close()
	s := &sim{cfg: cfg, sp: e.sp, ctl: ctl, rd: rd, end: math.Inf(1), ttftWin: newWindow(ttftBuckets, cfg.TTFTWindow, cfg.Period)}
	if e.src.Duration > 0 {
		s.end = e.src.Duration
	}
	var out scheduleResult
	miss := func(arrival float64) {
		j := int(arrival / cfg.Period)
		for len(out.missPer) <= j {
			out.missPer = append(out.missPer, 0)
		}
		out.missPer[j]++
	}
	s.onFirst = func(now float64, p pending) {
		if now-p.arrival > cfg.SLOTTFT {
			miss(p.arrival)
		}
	}
	s.onShed = miss // unserved, never queued
	for range initial {
		s.addReplica(0, true)
	}
	if err := s.run(ctx); err != nil {
		return scheduleResult{}, err
	}
	out.misses, out.seconds = s.res.Misses(), s.res.ReplicaSeconds
	// Unserved requests: still queued at the stop.
	s.eachPending(func(p pending) { miss(p.arrival) })
	return out, nil
}

// recorder records the decisions of a controller on its tick (period);
// stop, when set, is called at each decision first.
type recorder struct {
	Controller
	period float64
	d      []int
	stop   func(now float64)
}

// Period keeps the recorded controller's tick (sim.ctlPeriod).
func (r *recorder) Period() float64 { return r.period }

func (r *recorder) Decide(now float64, obs recommend.Observation) int {
	if r.stop != nil {
		r.stop(now)
	}
	v := r.Controller.Decide(now, obs)
	k := int(math.Round(now / r.period))
	v = min(max(v, 0), MaxReplicas) // as sim.tick applies it
	for len(r.d) <= k {
		r.d = append(r.d, 0)
	}
	r.d[k] = v
	return v
}

// oracleSchedule replays the oracle and returns its decisions as a schedule.
func oracleSchedule(ctx context.Context, e env, prog func(float64)) (schedule, scheduleResult, error) {
	o, err := newOracle(e, 0, MaxReplicas)
	if err != nil {
		return schedule{}, scheduleResult{}, err
	}
	initial := e.cfg.Initial
	if initial == 0 {
		initial = 1
		if n, err := warmSize(e); err == nil {
			initial = max(initial, n)
		}
	}
	rec := &recorder{Controller: o, period: e.cfg.Period}
	res, err := replayCtl(ctx, e, rec, initial, prog)
	if err != nil {
		return schedule{}, scheduleResult{}, err
	}
	return schedule{ctl: &optimalCtl{period: e.cfg.Period, init: initial, d: rec.d}}, res, nil
}

// planner is the greedy's planning replay and its look-ahead buffer.
type planner struct {
	e    env
	base *sim
	rd   trace.Reader
	buf  []trace.Request // arrivals not yet fed to base, in order
	eof  bool
	last float64 // the last arrival seen
}

// fill reads arrivals up to second t into buf.
func (p *planner) fill(t float64) error {
	for !p.eof && (len(p.buf) == 0 || p.buf[len(p.buf)-1].Arrival <= t) {
		q, err := p.rd.Next()
		if err == io.EOF {
			p.eof = true
			break
		}
		if err != nil {
			return err
		}
		if int64(len(p.buf)) >= p.e.cfg.MaxBacklog && q.Arrival <= t {
			// A period and the SLO of arrivals are held at once: a trace
			// this dense would take the machine's memory (10^8 req/s ran
			// out of it), and the replay sheds past its backlog bound anyway.
			// (Every one in buf is by t; q past t only ends the window.)
			return fmt.Errorf("optimal: more than %d requests arrive between second %.0f and %.0f (a period and the SLO), the most the hindsight search holds; leave optimal out (--policy) or replay a lower rate", p.e.cfg.MaxBacklog, p.buf[0].Arrival, t)
		}
		p.buf = append(p.buf, q)
		p.last = q.Arrival
	}
	return nil
}

// planGreedy is step 1: the fewest ready replicas per period.
func planGreedy(ctx context.Context, e env, prog func(float64)) ([]int, error) {
	rd, err := e.src.Open()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	cfg := e.cfg
	cfg.Timeline = false
	base := &sim{cfg: cfg, sp: e.sp, end: math.Inf(1), quiet: true}
	base.res.Trace = e.src.Name
	p := &planner{e: e, base: base, rd: rd}
	P, slo := cfg.Period, cfg.SLOTTFT
	lead := int(math.Ceil(e.sp.cold/P - 1e-9))
	end := e.src.Duration
	var plan []int
	prev := 1
	if e.cfg.Initial > 0 {
		prev = e.cfg.Initial
	}
	for j := 0; ; j++ {
		t0 := float64(j) * P
		if err := p.fill(t0 + P + slo); err != nil {
			return nil, err
		}
		// The bound every replay has (sim.checkSpan): a far arrival would
		// have the planner step through every period up to it.
		if err := base.checkSpan(max(p.last, end)); err != nil {
			return nil, err
		}
		if p.eof && len(p.buf) == 0 && base.outstanding == 0 && base.held.n == 0 && (t0 >= end || end == 0) {
			break
		}
		if t0 > max(end, p.last)+cfg.Drain {
			break
		}
		// Every period: one period's search replays it several times, and
		// at 20,000 req/s 64 periods took over a minute to notice an
		// interrupt.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if j&63 == 0 && end > 0 {
			prog(t0 / end)
		}
		hi := base.spec() + base.held.n + 1
		for _, q := range p.buf {
			if q.Arrival > t0+P+slo {
				break
			}
			hi++
		}
		lo := 0
		switch {
		case j == 0 && e.cfg.Initial > 0:
			lo, hi = e.cfg.Initial, e.cfg.Initial
		case j == 0:
			lo = 1
		case e.cfg.Initial > 0 && j <= lead:
			hi = min(hi, base.spec()) // nothing asked for after second 0 serves yet
		}
		x := p.search(t0, min(max(prev, lo), hi), lo, hi)
		plan = append(plan, x)
		prev = x
		p.setReady(base, t0, x)
		p.advance(base, t0+P, true)
	}
	prog(1)
	return plan, nil
}

// search finds the fewest replicas in [lo, hi] with the fewest misses,
// starting at x0 and galloping.
func (p *planner) search(t0 float64, x0, lo, hi int) int {
	memo := map[int]int64{}
	m := func(x int) int64 {
		if v, ok := memo[x]; ok {
			return v
		}
		v := p.trial(t0, x)
		memo[x] = v
		return v
	}
	if lo == hi {
		return lo
	}
	m0 := m(x0)
	// At most double in one period (a few replicas more, from few): a
	// period that misses anyway is not bought down one request at a time
	// with a replica per arrival; the next period may double again.
	hi = min(hi, max(2*x0, x0+4))
	if m0 > 0 && x0 < hi {
		// Up until no miss, or hi.
		good, step := x0, 1
		bad := x0
		for {
			good = min(x0+step, hi)
			if m(good) == 0 || good == hi {
				break
			}
			bad = good
			step *= 2
		}
		target := m(good)
		if target >= m0 {
			// More replicas do not help: the misses are already decided.
			return p.down(m, x0, lo, m0)
		}
		return bisect(bad, good, func(x int) bool { return m(x) <= target })
	}
	return p.down(m, x0, lo, 0)
}

// down finds the fewest replicas below x0 (and >= lo) with at most target
// misses, galloping down then bisecting.
func (p *planner) down(m func(int) int64, x0, lo int, target int64) int {
	good, step := x0, 1
	bad := lo - 1
	for good > lo {
		try := max(good-step, lo)
		if m(try) > target {
			bad = try
			break
		}
		good = try
		step *= 2
	}
	return bisect(bad, good, func(x int) bool { return m(x) <= target })
}

// bisect returns the least x in (bad, good] with ok(x), given ok(good) and
// ok taken as monotone (false up to some x, true from there).
func bisect(bad, good int, ok func(int) bool) int {
	for bad+1 < good {
		mid := (bad + good) / 2
		if ok(mid) {
			good = mid
		} else {
			bad = mid
		}
	}
	return good
}

// trial replays a clone of the plan from t0 with x ready replicas to
// t0 + period + SLO and counts its misses.
func (p *planner) trial(t0 float64, x int) int64 {
	c := p.base.clone()
	p.setReady(c, t0, x)
	late := c.res.Late
	stop := t0 + p.e.cfg.Period + p.e.cfg.SLOTTFT
	p.advance(c, stop, false)
	n := c.res.Late - late
	c.eachPending(func(q pending) {
		if q.arrival+p.e.cfg.SLOTTFT < stop {
			n++
		}
	})
	return n
}

// setReady sets s's fleet to x ready replicas at now: new ones ready at
// once (asked for a cold start earlier), or the least loaded drained.
func (p *planner) setReady(s *sim, now float64, x int) {
	cur := s.spec()
	if x < cur {
		s.scale(now, x)
		return
	}
	for range x - cur {
		s.addReplica(now, true)
	}
}

// advance runs s's events up to second until (inclusive) with the
// buffered arrivals; consume drops the arrivals fed from the buffer.
func (p *planner) advance(s *sim, until float64, consume bool) {
	i := 0
	for {
		tr := s.nextEvent()
		ta := math.Inf(1)
		if i < len(p.buf) {
			ta = p.buf[i].Arrival
		}
		if min(tr, ta) > until {
			break
		}
		if tr <= ta {
			r := s.heap[s.evMin].r
			if r.state == starting {
				s.becomeReady(r, tr)
			} else {
				r.phaseEnd(s, tr)
			}
			continue
		}
		s.arrive(ta, p.buf[i])
		i++
	}
	if consume {
		p.buf = p.buf[i:]
		if cap(p.buf) > 4096 && len(p.buf) < cap(p.buf)/4 {
			p.buf = append([]trace.Request(nil), p.buf...)
		}
	}
}

// eachPending calls f on every request without a first token: held,
// queued in a replica, or in a prefill.
func (s *sim) eachPending(f func(pending)) {
	each := func(q *fifo) {
		for i := 0; i < q.n; i++ {
			f(q.buf[(q.head+i)%len(q.buf)])
		}
	}
	each(&s.held)
	for _, r := range s.reps {
		each(&r.waiting)
		for _, p := range r.pre {
			f(p)
		}
	}
}

// clone copies a quiet planning replay (no reader, controller or statistics).
func (s *sim) clone() *sim {
	c := *s
	c.countsLo, c.countsHi, c.countsCur = 0, 0, nil // its own scratch slot, found again
	c.held = s.held.clone()
	c.reps = make([]*replica, len(s.reps))
	m := make(map[*replica]*replica, len(s.reps))
	for i, r := range s.reps {
		nr := *r
		nr.waiting = r.waiting.clone()
		nr.pre = append([]pending(nil), r.pre...)
		nr.run = append(runHeap(nil), r.run...)
		c.reps[i] = &nr
		m[r] = &nr
	}
	c.heap = make([]heapEvent, len(s.heap))
	for i, e := range s.heap {
		c.heap[i] = heapEvent{next: e.next, id: e.id, r: m[e.r]}
	}
	c.route = make([]*replica, len(s.route))
	for i, r := range s.route {
		c.route[i] = m[r]
	}
	return &c
}

func (q fifo) clone() fifo {
	c := fifo{n: q.n}
	if q.n > 0 {
		c.buf = make([]pending, q.n)
		for i := range q.n {
			c.buf[i] = q.buf[(q.head+i)%len(q.buf)]
		}
	}
	return c
}
