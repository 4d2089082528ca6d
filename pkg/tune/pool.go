package tune

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/trace"
)

// evaluator runs replays on a pool of workers.
type evaluator struct {
	ctx     context.Context
	cfg     Config
	workers int
	tally
}

type job struct {
	pol replay.Policy
	src trace.Source
	out *replay.Result
}

func (e *evaluator) run(jobs []job) error {
	e.planned(len(jobs), weightOf(jobs, func(j job) trace.Source { return j.src }))
	return runPool(e.workers, jobs, func(j job) error {
		rc := e.cfg.Replay
		rc.Timeline, rc.Progress = false, nil
		r, err := replay.Run(e.ctx, j.src, j.pol, rc)
		if err != nil {
			return err
		}
		*j.out = r
		e.shed(e.cfg.Warn, r.Policy, r.ShedWarning())
		e.idle(r.ShortestPrompt, r.IdleTTFT)
		e.finished(e.cfg.Progress, weight(j.src))
		return nil
	})
}

// weight is a replay's share of a search's work: the seconds of trace it
// replays (at least 1). A replay's time follows its span: on a week of
// history the screen, the finalists and the baselines each replayed 0.25
// to 0.5 million seconds of trace a second, a whole-history replay 10,080
// times a one-minute window's work.
func weight(src trace.Source) float64 { return max(src.Duration, 1) }

// weightOf is the weight of jobs, each replaying src(job).
func weightOf[J any](jobs []J, src func(J) trace.Source) float64 {
	w := 0.0
	for _, j := range jobs {
		w += weight(src(j))
	}
	return w
}

// tally counts a search's replays, planned (growing by stage) and done,
// and their weights for Config.Progress, and the policies warned of
// (Config.Warn).
type tally struct {
	mu          sync.Mutex
	done, total int     // replays
	doneW       float64 // weight of the replays done
	plannedW    float64 // weight of the replays planned
	aheadW      float64 // expected weight of the stages not yet planned (expect)
	warned      map[string]bool
	// shortest and idleTTFT are the shortest prompt over the replays and
	// its TTFT alone on an idle replica (replay.Result.IdleTTFT; 0: none
	// yet): the trace's parts and stressed copies together hold the
	// trace's shortest prompt, whatever the screen sampled.
	shortest int32
	idleTTFT float64
}

// idle keeps a replay's shortest prompt and its IdleTTFT when shorter
// than the shortest so far.
func (t *tally) idle(prompt int32, ttft float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if prompt > 0 && (t.shortest == 0 || prompt < t.shortest) {
		t.shortest, t.idleTTFT = prompt, ttft
	}
}

// warnSLO passes to warn (when set) replay.SLOWarning of the shortest
// prompt the search's replays held: no request of trace can meet slo, on
// one replica or, with pair, through a P/D pair's idle pools. Called
// once, after the search.
func (t *tally) warnSLO(warn func(string), trace string, slo float64, pair bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := replay.SLOWarning(trace, slo, t.shortest, t.idleTTFT, pair); warn != nil && w != "" {
		warn(w)
	}
}

// shed passes policy's shed warnings to warn, the first time a replay of
// policy has any.
func (t *tally) shed(warn func(string), policy string, msgs ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if warn == nil || t.warned[policy] || !slices.ContainsFunc(msgs, func(m string) bool { return m != "" }) {
		return
	}
	if t.warned == nil {
		t.warned = map[string]bool{}
	}
	t.warned[policy] = true
	for _, m := range msgs {
		if m != "" {
			warn(m)
		}
	}
}

// expect adds w to the expected weight of the stages still to be
// planned: a search adds each later stage's estimate at its start and
// takes it back (a negative w) when it plans that stage, so the share
// done follows the whole search, not the stages planned so far.
func (t *tally) expect(w float64) {
	t.mu.Lock()
	t.aheadW = max(t.aheadW+w, 0)
	t.mu.Unlock()
}

// planned counts n replays of weight w (weightOf) as planned.
func (t *tally) planned(n int, w float64) {
	t.mu.Lock()
	t.total += n
	t.plannedW += w
	t.mu.Unlock()
}

// finished counts a replay of weight w done and calls progress with the
// weights done and planned or expected, in whole seconds of trace.
func (t *tally) finished(progress func(done, total int), w float64) {
	t.mu.Lock()
	t.done++
	t.doneW += w
	d, n := t.doneW, t.plannedW+t.aheadW
	t.mu.Unlock()
	if progress != nil {
		progress(int(d), max(int(n), int(d), 1))
	}
}

// runPool runs do on every job over workers goroutines; a worker skips
// the jobs after its first error. The errors, joined, each message once
// (workers replaying one bad setting fail alike).
func runPool[J any](workers int, jobs []J, do func(J) error) error {
	workers = min(workers, len(jobs)) // a worker without a job would only hold memory
	ch := make(chan J)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			defer crashlog.Recover() // serve's tuning runs
			for j := range ch {
				if errs[w] == nil {
					errs[w] = do(j)
				}
			}
		})
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	seen := map[string]bool{}
	var distinct []error
	for _, err := range errs {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			distinct = append(distinct, err)
		}
	}
	return errors.Join(distinct...)
}

// pickFinalists replays the cheapest rows within budget, n at a time
// (replay fills their in-sample, held-out and stressed figures), for at
// most two rounds or until one holds; it returns the finalists and
// Choose's pick among them. Error: replay's, or no row to choose from.
func pickFinalists(rows []Row, budget float64, n int, replay func([]Row) error) (finals []Row, best int, holds bool, err error) {
	tried := map[string]bool{}
	for round := 0; round < 2; round++ {
		var pick []Row
		for _, r := range cheapest(rows, budget, len(rows)) {
			if !tried[r.Policy] && len(pick) < n {
				tried[r.Policy] = true
				pick = append(pick, r)
			}
		}
		if len(pick) == 0 {
			break
		}
		if err := replay(pick); err != nil {
			return nil, 0, false, err
		}
		finals = append(finals, pick...)
		if _, ok := Choose(finals, budget); ok {
			break
		}
	}
	if len(finals) == 0 {
		return nil, 0, false, errors.New("tune: no candidate to choose from (empty search space)")
	}
	best, holds = Choose(finals, budget)
	return finals, best, holds, nil
}

// floorSearch is the floor round, run when no finalist holds: the
// finalist of lowest worst miss % with its floor (min) raised, first to
// the highest peak any of its replays reached (the stressed copies' above
// all: a fleet that large from the start has what the steepest ramp
// needed before a cold start could bring it; one above its floor when it
// never rose above it), then bisected down to the lowest floor that still
// holds. It returns the rows replayed (screened and as finalists), none
// when the finalist has no min option; a floor whose policy is a finalist
// already is read from it, not replayed. probe screens and replays one
// candidate.
func floorSearch(finals []Row, budget float64, probe func(Candidate) (Row, error)) ([]Row, error) {
	if len(finals) == 0 {
		return nil, nil
	}
	r := nearest(finals)
	m, ok := r.Candidate.Option("min")
	if !ok {
		return nil, nil
	}
	var out []Row
	try := func(f int) (bool, error) {
		c := r.Candidate.with("min", float64(f))
		return probeOnce(c, c.Policy(), finals, &out, budget, probe)
	}
	// lo does not hold (the finalist); hi is tried first: the peak, or one
	// replica more than the floor when the finalist never rose above it
	// (its misses came while it stayed at its floor).
	lo := int(m)
	hi := max(r.peak(), lo+1)
	if top, ok := r.Candidate.Option("max"); ok && hi > int(top) {
		// Replayed under a target's max (Space.capped): no floor above it.
		if hi = int(top); hi <= lo {
			return nil, nil
		}
	}
	if ok, err := try(hi); err != nil || !ok {
		return out, err
	}
	_, err := lowestHolding(lo, hi, try)
	return out, err
}

// lowestHolding bisects (lo, hi] for the lowest floor that holds, lo
// known not to (or standing for one that does not) and hi to: try reports
// whether a floor holds, which is taken as monotone in the floor.
func lowestHolding(lo, hi int, try func(int) (bool, error)) (int, error) {
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := try(mid)
		if err != nil {
			return hi, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// cheaperFloor is the floor round run when a finalist (w) holds: a floor of
// f replicas costs at least f x inMinutes replica-minutes in sample, so only
// the floors below w's mean replicas in sample (w's in-sample replica-minutes
// / inMinutes) can undercut it. Its bases are, per metric, two of the
// screened rows cheaper than w on the screen: the nearest to holding (lowest
// worst miss % over the screen and its stressed copies) and the cheapest
// there (over a floor, a policy's own overshoot is what it adds). Each
// base's floor is raised to the most replicas its screen replays reached (at
// most that bound) and bisected on the screen (screen probes a candidate
// there: cheap), down to the lowest floor within budget on the screen and
// its stressed copies; that one alone is replayed as a finalist (final), and
// when it does not hold there the capped top is, and between the two the
// floor is bisected on finalist replays; a policy among finalists (the
// search's) is read from there. It returns the rows screened and the new
// finalists, none when no floor could undercut w.
func cheaperFloor(rows, finalists []Row, w Row, inMinutes, budget float64, screen func(Candidate) (Row, error), final func(Row) (Row, error)) (screened, finals []Row, err error) {
	if w.InSample == nil || !(inMinutes > 0) {
		return nil, nil, nil
	}
	top := int(math.Ceil(w.InSample.ReplicaMinutes/inMinutes)) - 1
	bases := floorBases(rows, w, budget, func(r Row) (string, bool) {
		_, ok := r.Candidate.Option("min")
		return r.Candidate.Metric, ok
	})
	fr := &floorRound[Candidate]{rows: rows, finalists: finalists, budget: budget, screen: screen, final: final}
	for _, base := range bases {
		m, _ := base.Candidate.Option("min")
		lo := int(m)
		peak := base.Screen.Peak
		for _, f := range base.ScreenStress {
			peak = max(peak, f.Peak)
		}
		hi := min(max(peak, lo+1), top)
		if hi <= lo {
			continue
		}
		at := func(f int) Candidate { return base.Candidate.with("min", float64(f)) }
		onScreen := func(f int) (bool, error) { return fr.onScreen(at(f)) }
		finalAt := func(f int) (bool, error) { return fr.whole(at(f)) }
		if err := floorOf(lo, hi, onScreen, finalAt); err != nil {
			return fr.screened, fr.finals, err
		}
	}
	return fr.screened, fr.finals, nil
}

// floorBases are a cheaper-floor round's bases among rows: per group
// (group's key, in the order first met; rows it says no to are not
// bases), of the rows cheaper than w on the screen that miss budget there
// (its stressed copies included), the nearest to holding (lowest worst
// miss %) and the cheapest, one base when they are the same row.
func floorBases(rows []Row, w Row, budget float64, group func(Row) (string, bool)) []Row {
	var keys []string
	near, cheap := map[string]Row{}, map[string]Row{}
	for _, r := range rows {
		k, ok := group(r)
		if !ok || r.Screen.ReplicaMinutes >= w.Screen.ReplicaMinutes || r.screenWorst() <= budget {
			continue
		}
		n, seen := near[k]
		if !seen {
			keys = append(keys, k)
			near[k], cheap[k] = r, r
			continue
		}
		if r.screenWorst() < n.screenWorst() {
			near[k] = r
		}
		if r.Screen.ReplicaMinutes < cheap[k].Screen.ReplicaMinutes {
			cheap[k] = r
		}
	}
	var bases []Row
	for _, k := range keys {
		bases = append(bases, near[k])
		if cheap[k].Policy != near[k].Policy {
			bases = append(bases, cheap[k])
		}
	}
	return bases
}

// floorRound is a cheaper-floor round's probes of candidates C: each
// screened once (read from rows or from the round's screened rows
// otherwise), and replayed as a finalist once (read from finalists or the
// round's finals otherwise).
type floorRound[C interface{ Policy() string }] struct {
	rows, finalists  []Row
	budget           float64
	screen           func(C) (Row, error)
	final            func(Row) (Row, error)
	screened, finals []Row
}

// screenAt is c's row on the screen.
func (fr *floorRound[C]) screenAt(c C) (Row, error) {
	if r, ok := replayedAs(c.Policy(), fr.rows, fr.screened); ok {
		return r, nil
	}
	r, err := fr.screen(c)
	if err != nil {
		return Row{}, err
	}
	fr.screened = append(fr.screened, r)
	return r, nil
}

// onScreen reports whether c is within budget on the screen and its
// stressed copies.
func (fr *floorRound[C]) onScreen(c C) (bool, error) {
	r, err := fr.screenAt(c)
	return r.screenWorst() <= fr.budget, err
}

// whole reports whether c holds replayed as a finalist.
func (fr *floorRound[C]) whole(c C) (bool, error) {
	r, err := fr.screenAt(c)
	if err != nil {
		return false, err
	}
	if x, ok := replayedAs(r.Policy, fr.finalists, fr.finals); ok {
		return x.within(fr.budget), nil
	}
	if r, err = fr.final(r); err != nil {
		return false, err
	}
	fr.finals = append(fr.finals, r)
	return r.within(fr.budget), nil
}

// floorOf is one base's search in (lo, hi]: the lowest floor that holds on
// the screen (none when hi does not), replayed whole; when it does not hold
// there, hi is, and between them the floor is bisected on whole replays.
func floorOf(lo, hi int, onScreen, whole func(int) (bool, error)) error {
	if ok, err := onScreen(hi); err != nil || !ok {
		return err
	}
	f, err := lowestHolding(lo, hi, onScreen)
	if err != nil {
		return err
	}
	if ok, err := whole(f); err != nil || ok || f == hi {
		return err
	}
	if ok, err := whole(hi); err != nil || !ok {
		return err
	}
	_, err = lowestHolding(f, hi, whole)
	return err
}
