// Package tune searches a space of infscale policies for the cheapest one
// that keeps SLO misses within a budget, and chooses by robustness: the
// winner must hold on the held-out last part of the history and on
// stressed copies of it, not only on the part it was chosen on.
//
// Pipeline (Run): split the history in time (in-sample first, held out
// last); screen a coarse grid of policies on the in-sample (or on its
// busiest and steepest windows when it is long); refine around the
// cheapest feasible ones (targets between grid points, neighbouring
// lookaheads and windows); replay the cheapest feasible finalists on the
// whole in-sample, the held-out part, and stressed copies (the screening
// sample and the held-out part at 1.5x and 2x rate and with their bursts
// doubled); the winner is the cheapest finalist (by
// in-sample replica time) within the budget everywhere (Choose). Every
// replay runs on a pool of workers, one per core; results do not depend on
// the parallelism.
package tune

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/trace"
)

// Config is a tuning run's setting.
type Config struct {
	// Replay is the replay's setting (replica model, SLO, period).
	Replay replay.Config
	// Requests is the trace's requests when the caller counted them
	// already (tune --trace's up-front read of a file or a --window), so
	// that sizing the replays (Replay.Size) takes no second pass; 0:
	// unknown, counted when Size asks.
	Requests int64
	// MaxMissPct is the miss budget in percent of requests, 0 to 100
	// (0: no miss at all); nil is DefaultMaxMissPct.
	MaxMissPct *float64
	// Holdout is the fraction of the history's span held out at its end
	// [0.25].
	Holdout float64
	// Space is the search space [DefaultSpace]; Stress the stressed copies
	// [DefaultStress].
	Space  Space
	Stress []Stress
	// Finalists is how many candidates are replayed out of sample [3].
	Finalists int
	// Baselines are policy strings replayed in and out of sample beside
	// the winner, for the report (nil: none; the command passes
	// DefaultBaselines).
	Baselines []string
	// ScreenWindows and ScreenWindow are the in-sample excerpts the grid is
	// screened on when the in-sample is longer than their total: the
	// busiest and the steepest windows of ScreenWindow seconds, then
	// evenly spread ones [4, 3600].
	ScreenWindows int
	ScreenWindow  float64
	// Workers is the replays run at once [GOMAXPROCS].
	Workers int
	// Seed draws the burst copies [1].
	Seed uint64
	// Serve is where the printed serve block reads its series (empty
	// fields: placeholders).
	Serve Serve
	// Progress, when set, is called after each replay with the work done
	// and the whole search's work expected, in seconds of trace replayed
	// (a replay's time follows its span): the stages planned so far and
	// estimates of those to come (the fine screen, the finalists, the
	// baselines; not the floor rounds, which run when no finalist holds or
	// a floor would be cheaper than the winner).
	// Calls come from the workers as replays end, so one may carry less
	// done than the one before; done <= total in each.
	Progress func(done, total int)
	// Warn, when set, gets the warning of a replay whose backlog reached
	// the replay's bound (replay.Result.ShedWarning; a pair's, each
	// pool's), once per policy however many parts and copies shed, one
	// call at a time: those requests are counted unserved, as simulate
	// counts and warns of them; and, once after a search that completes,
	// replay.SLOWarning when no request of the trace can meet the SLO.
	Warn func(msg string)
}

// DefaultMaxMissPct is the miss budget when Config.MaxMissPct is nil: one
// request in a thousand.
const DefaultMaxMissPct = 0.1

// Budget is the miss budget in percent: *MaxMissPct, or DefaultMaxMissPct
// when it is nil.
func (c Config) Budget() float64 {
	if c.MaxMissPct == nil {
		return DefaultMaxMissPct
	}
	return *c.MaxMissPct
}

// DefaultHoldout is Config.Holdout's default: the last quarter of the
// history's span is held out.
const DefaultHoldout = 0.25

// splitAt is where a history of dur seconds is split, in seconds from its
// start: the last holdout of it is held out, the rest tuned on.
func splitAt(dur, holdout float64) float64 { return math.Round(dur * (1 - holdout)) }

func (c Config) defaults() Config {
	if c.Holdout == 0 {
		c.Holdout = DefaultHoldout
	}
	if len(c.Space.Metrics) == 0 {
		c.Space = DefaultSpace
	}
	if c.Stress == nil {
		c.Stress = DefaultStress
	}
	if c.Finalists == 0 {
		c.Finalists = 3
	}
	if c.ScreenWindows == 0 {
		c.ScreenWindows = 4
	}
	if c.ScreenWindow == 0 {
		c.ScreenWindow = 3600
	}
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}

// sized is c with Workers, Replay.MaxBacklog and SearchAtOnce as Replay.Size gives
// them for Workers replays at once, each of pools pools, over src (c as
// it is without Size); src's requests are c.Requests when known, else a
// pass counts them. No replay holds more requests than the largest
// copy of src it replays: src's, times the largest bursts stress rounded
// up (AmplifyBursts copies a request at most ceil(k) - 1 times; rate and
// gaps copies keep the count).
func (c Config) sized(ctx context.Context, src trace.Source, pools int) Config {
	if c.Replay.Size == nil {
		return c
	}
	k := 1.0
	for _, s := range c.Stress {
		k = max(k, math.Ceil(s.Bursts))
	}
	// No tuning replay searches: candidates are infscale policies.
	s := c.Replay.Size(c.Workers, pools, false, func() int64 {
		n := c.Requests
		if n <= 0 {
			var err error
			if n, err = trace.Count(ctx, src, replay.MaxBacklog); err != nil {
				return 0
			}
		}
		return min(int64(float64(n)*k), replay.MaxBacklog)
	})
	c.Workers, c.Replay.MaxBacklog, c.Replay.SearchAtOnce = max(s.AtOnce, 1), s.Backlog, s.SearchAtOnce
	return c
}

// Run tunes on src. Errors: an empty or unreadable trace, an invalid
// setting, or ctx's error.
func Run(ctx context.Context, src trace.Source, cfg Config) (Report, error) {
	cfg = cfg.defaults()
	if !(cfg.Holdout > 0 && cfg.Holdout < 1) {
		return Report{}, fmt.Errorf("holdout %g: want a fraction in (0, 1)", cfg.Holdout)
	}
	budget := cfg.Budget()
	if !(budget >= 0 && budget <= 100) {
		return Report{}, fmt.Errorf("miss budget %g%%: want a percentage from 0 to 100", budget)
	}
	cfg = cfg.sized(ctx, src, 1)
	pr, err := prepare(ctx, src, cfg)
	if err != nil {
		return Report{}, err
	}
	rc, dur, split, in, out, screen, name, sets, variants := pr.rc, pr.dur, pr.split, pr.in, pr.out, pr.screen, pr.name, pr.sets, pr.variants
	cold := cfg.Replay.Model.ColdStart()
	cfg.Space = cfg.Space.forReplica(cfg.Replay.Model.MaxBatch())
	e := &evaluator{ctx: ctx, cfg: cfg, workers: cfg.Workers}
	// Coarse grid.
	var coarse []Candidate
	for _, m := range cfg.Space.Metrics {
		for _, t := range m.Targets {
			for _, opts := range grid(cfg.Space.Dims, cold) {
				c := Candidate{Metric: m.Name, Target: t, Options: opts}
				if m.Guards {
					c.Guard = rc.SLOTTFT
					c.recommendedRules(cold)
				}
				coarse = append(coarse, c)
			}
		}
	}
	// The later stages' expected weight (the progress's whole): the fine
	// screen as many candidates as coarse[0]'s neighbours for each
	// finalist, the finalists' round, the baselines. The floor rounds and
	// a second finalists' round are not expected: they run when no
	// finalist holds (the cheaper-floor round, small, when one does).
	sameIn := len(screen) == 1 && screen[0].Duration == in.Duration
	screenW, finalW := setsWeight(sets), setsWeight(variants)
	if !sameIn {
		finalW += weight(in)
	}
	fineW := 0.0
	if len(coarse) > 0 {
		fineW = float64(cfg.Finalists*len(neighbours(coarse[0], cfg.Space, cold))) * screenW
	}
	baseW := float64(len(cfg.Baselines)) * (weight(in) + weight(out))
	e.expect(fineW + float64(cfg.Finalists)*finalW + baseW)
	rows, err := e.screen(coarse, sets)
	if err != nil {
		return Report{}, err
	}
	e.expect(-fineW)
	// Fine: around the cheapest feasible coarse rows.
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Policy] = true
	}
	var fine []Candidate
	for _, r := range cheapest(rows, budget, cfg.Finalists) {
		for _, c := range neighbours(r.Candidate, cfg.Space, cold) {
			c.recommendedRules(cold)
			if p := c.Policy(); !seen[p] {
				seen[p] = true
				fine = append(fine, c)
			}
		}
	}
	more, err := e.screen(fine, sets)
	if err != nil {
		return Report{}, err
	}
	rows = append(rows, more...)
	markFrontier(rows)

	// Finalists: in sample, out of sample, stressed.
	e.expect(-float64(cfg.Finalists) * finalW)
	finals, best, ok, err := pickFinalists(rows, budget, cfg.Finalists, func(pick []Row) error { return e.finalists(pick, in, sameIn, variants) })
	if err != nil {
		return Report{}, err
	}
	// The floor rounds' probes: a candidate screened (on the sample and its
	// stressed copies), and a screened row replayed as a finalist.
	screenOne := func(c Candidate) (Row, error) {
		rs, err := e.screen([]Candidate{c}, sets)
		if err != nil {
			return Row{}, err
		}
		return rs[0], nil
	}
	finalOne := func(r Row) (Row, error) {
		rs := []Row{r}
		err := e.finalists(rs, in, sameIn, variants)
		return rs[0], err
	}
	if !ok && !cfg.Space.FixedFloor {
		// The floor round: the finalist nearest to holding, its floor
		// raised to the peak its replays reached, then bisected.
		more, err := floorSearch(finals, budget, func(c Candidate) (Row, error) {
			r, err := screenOne(c)
			if err != nil {
				return Row{}, err
			}
			return finalOne(r)
		})
		if err != nil {
			return Report{}, err
		}
		rows, finals = append(rows, more...), append(finals, more...)
		best, ok = Choose(finals, budget)
	}
	if ok && !cfg.Space.FixedFloor {
		// A winner dearer than a floor would be: per metric the screen's
		// nearest to holding and cheapest among the cheaper rows, each
		// one's floor bisected on the screen below the winner's mean
		// replicas in sample (cheaperFloor).
		screened, more, err := cheaperFloor(rows, finals, finals[best], in.Duration/60, budget, screenOne, finalOne)
		if err != nil {
			return Report{}, err
		}
		rows, finals = append(rows, screened...), append(finals, more...)
	}
	best, ok = Choose(finals, budget)
	w := finals[best]
	rep := Report{
		Policy:  w.Policy,
		Outcome: Outcome{Holds: ok, MaxMissPct: budget, InSample: *w.InSample, OutOfSample: *w.OutOfSample, Stress: w.Stress},
		Split:   split, Duration: dur, Screened: name, Finalists: finals, Rows: rows,
		Replays: e.done, winner: w.Candidate,
	}
	for _, s := range cfg.Stress {
		rep.StressNames = append(rep.StressNames, s.Name)
	}
	e.expect(-baseW)
	if len(cfg.Baselines) > 0 {
		if rep.Baselines, err = e.baselines(cfg.Baselines, in, out); err != nil {
			return Report{}, err
		}
		rep.Replays = e.done
	}
	for _, r := range rows {
		if r.Frontier {
			rep.Frontier = append(rep.Frontier, r)
		}
	}
	slices.SortStableFunc(rep.Frontier, func(a, b Row) int { return cmp.Compare(a.Screen.ReplicaMinutes, b.Screen.ReplicaMinutes) })
	rep.Target = w.Candidate.Block(cfg.Serve, max(2*w.InSample.Peak, 8))
	e.warnSLO(cfg.Warn, src.Name, cfg.Replay.SLOTTFT, false)
	return rep, nil
}

// prep is what Run and RunPD replay: the replay's setting, the span and
// split, the two parts, the screening sample (named), and the stressed
// copies of the sample (sets) and of the held-out part (variants), each
// set's first the unstressed one.
type prep struct {
	rc             replay.Config
	dur, split     float64
	in, out        trace.Source
	screen         []trace.Source
	name           string
	sets, variants []stressSet
}

// prepare splits src and builds the screening sample and the stressed
// copies for cfg (defaulted). Errors as Run's.
func prepare(ctx context.Context, src trace.Source, cfg Config) (prep, error) {
	rc := cfg.Replay.Defaults()
	if err := rc.Validate(); err != nil {
		return prep{}, err
	}
	dur := src.Duration
	if dur <= 0 {
		_, last, err := trace.Check(ctx, src)
		if err != nil {
			return prep{}, err
		}
		dur = last
	}
	split := splitAt(dur, cfg.Holdout)
	if err := splitCheck(ctx, src, dur, split, cfg.Holdout); err != nil {
		return prep{}, err
	}
	// Each part needs one decision period at least: a shorter one has no
	// decision in it (and no stressed copy of it could span one).
	need := math.Ceil(rc.Period / min(cfg.Holdout, 1-cfg.Holdout)) // the span that gives both parts a period
	for _, part := range []struct {
		name, flag string
		span       float64
	}{{"tuning", "a smaller --holdout", split}, {"held-out", "a larger --holdout", dur - split}} {
		if part.span < rc.Period {
			or := ""
			if dur >= 2*rc.Period {
				or = ", or " + part.flag
			}
			return prep{}, fmt.Errorf("%s: %w: the %s part (%g s of the trace's %g s) is shorter than one decision period (%g s), so no decision falls in it; give a trace (or --window) of %g s or more%s",
				src.Name, ErrShortTrace, part.name, ms(part.span), ms(dur), rc.Period, need, or)
		}
	}
	in, out := trace.WindowContext(ctx, src, 0, split), trace.WindowContext(ctx, src, split, dur)
	out.Duration = dur - split
	for _, s := range cfg.Stress {
		if s.Rate > 1 && (dur-split)/s.Rate < rc.Period {
			return prep{}, &StressError{Stress: s, Span: dur - split, Period: rc.Period}
		}
	}

	// Screening sample, and the stressed copies of it and of the held-out
	// part (together the whole history when it is short).
	screen, name, err := screening(ctx, in, cfg)
	if err != nil {
		return prep{}, err
	}
	// A stressed copy with nothing to stress (no silent gap to stretch)
	// is its source: alias marks it, and its replays are not run again.
	stress := func(vs []trace.Source, s Stress) ([]trace.Source, bool, error) {
		var out []trace.Source
		same := true
		for _, v := range vs {
			if s.Gaps > 1 {
				g, n, err := StretchGaps(ctx, v, s.Gaps, 2*rc.Period)
				if err != nil {
					return nil, false, err
				}
				v, same = g, same && n == 0
			}
			if s.Bursts > 1 {
				v, same = trace.AmplifyBursts(v, s.Bursts, 60, cfg.Seed), false
			}
			if s.Rate > 0 && s.Rate != 1 {
				v, same = trace.RateScale(v, s.Rate), false
			}
			out = append(out, v)
		}
		return out, same, nil
	}
	sets := []stressSet{{srcs: screen}}
	variants := []stressSet{{srcs: []trace.Source{out}}}
	for _, s := range cfg.Stress {
		vs, same, err := stress(screen, s)
		if err != nil {
			return prep{}, err
		}
		sets = append(sets, stressSet{srcs: vs, same: same})
		vo, same, err := stress([]trace.Source{out}, s)
		if err != nil {
			return prep{}, err
		}
		variants = append(variants, stressSet{srcs: vo, same: same})
	}
	return prep{rc: rc, dur: dur, split: split, in: in, out: out, screen: screen, name: name, sets: sets, variants: variants}, nil
}
