package tune

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/trace"
)

// PDPrefillTargets and PDDecodeTargets are the grid RunPD screens: each
// role's demand target (replicas busy per replica) for the pair rule
// recommended(prefill=TP,decode=TD). A prefill replica is one FIFO
// server, so its grid reaches lower (recommend.PrefillTarget is 0.69 for
// 45 ms prefills in 0.386 s); a decode replica's batch slots pool its
// queue, so its grid reaches 1.
var (
	PDPrefillTargets = []float64{0.5, 0.6, 0.7, 0.8, 0.9}
	PDDecodeTargets  = []float64{0.7, 0.8, 0.9, 1}
)

// PDReport is a pair's tuning run (RunPD): the winner as a `simulate --pd
// --policy` string and its figures (each Figures sums both pools' replica
// time; Peak is the prefill and decode peaks added), the finalists, every
// screened row, and the baselines (the queue-derived pair rule
// `recommended` and llm-d's four paths, one ScaledObject per role).
type PDReport struct {
	Policy string `json:"policy"`
	Outcome
	Split     float64    `json:"split_s"`
	Duration  float64    `json:"duration_s"`
	Screened  string     `json:"screened_on"`
	Finalists []Row      `json:"finalists"`
	Rows      []Row      `json:"rows"`
	Baselines []Baseline `json:"baselines,omitempty"`
	Replays   int        `json:"replays"`
}

// pdFigures is a pair's result as one pool's: the pair's requests and
// misses, both pools' replica time, the peaks added.
func pdFigures(rs ...replay.PDResult) Figures {
	out := make([]replay.Result, len(rs))
	for i, r := range rs {
		out[i] = replay.Result{Requests: r.Requests, Met: r.Met, Late: r.Late, Unserved: r.Unserved, Rejected: r.Rejected,
			ReplicaSeconds: r.ReplicaSeconds(), Peak: r.Prefill.Peak + r.Decode.Peak}
	}
	return figures(out...)
}

// RunPD tunes a prefill/decode pair on src with tune's rule: screen the
// grid of each role's demand target (PDPrefillTargets x PDDecodeTargets)
// on the screening sample and its stressed copies, replay the cheapest
// within budget on the whole in-sample part, the held-out part and the
// stressed copies of both, and choose the cheapest finalist within the
// budget everywhere (Choose), as Run does for one pool. pd is the pair's
// KV link. Errors: Run's, and RunPD's replay errors (a link not > 0, an SLO
// the transfer takes).
func RunPD(ctx context.Context, src trace.Source, cfg Config, pd replay.PDConfig) (PDReport, error) {
	cfg = cfg.defaults()
	if !(cfg.Holdout > 0 && cfg.Holdout < 1) {
		return PDReport{}, fmt.Errorf("holdout %g: want a fraction in (0, 1)", cfg.Holdout)
	}
	budget := cfg.Budget()
	if !(budget >= 0 && budget <= 100) {
		return PDReport{}, fmt.Errorf("miss budget %g%%: want a percentage from 0 to 100", budget)
	}
	cfg = cfg.sized(ctx, src, 2)
	pr, err := prepare(ctx, src, cfg)
	if err != nil {
		return PDReport{}, err
	}
	e := &pdEvaluator{ctx: ctx, cfg: cfg, pd: pd}
	var grid []pdCandidate
	for _, tp := range PDPrefillTargets {
		for _, td := range PDDecodeTargets {
			grid = append(grid, pdCandidate{tp: tp, td: td})
		}
	}
	// names and res are every screened candidate's policy and results
	// (per stress set, per source), the grid's and the floor round's.
	var names []string
	var res [][][]replay.PDResult
	screen := func(cands []pdCandidate) ([]Row, error) {
		first := len(names)
		var jobs []pdJob
		for _, c := range cands {
			p, err := replay.ParsePDPolicy(c.Policy())
			if err != nil {
				return nil, err
			}
			r := make([][]replay.PDResult, len(pr.sets))
			for k, set := range pr.sets {
				if k > 0 && set.same {
					continue
				}
				r[k] = make([]replay.PDResult, len(set.srcs))
				for l, s := range set.srcs {
					jobs = append(jobs, pdJob{pol: p, src: s, out: &r[k][l]})
				}
			}
			names, res = append(names, c.Policy()), append(res, r)
		}
		if err := e.run(jobs); err != nil {
			return nil, err
		}
		rows := make([]Row, len(cands))
		for i, c := range cands {
			sr := res[first+i]
			rows[i] = Row{Policy: c.Policy(), pair: c, Screen: pdFigures(sr[0]...), rolePeak: pdPeaks([2]int{}, sr[0]...)}
			for k, r := range sr[1:] {
				if pr.sets[k+1].same {
					r = sr[0]
				}
				rows[i].ScreenStress = append(rows[i].ScreenStress, pdFigures(r...))
				rows[i].rolePeak = pdPeaks(rows[i].rolePeak, r...)
			}
		}
		return rows, nil
	}
	// The later stages' expected weight, as Run's: the finalists and the
	// baselines (the floor rounds run when no finalist holds).
	sameIn := len(pr.screen) == 1 && pr.screen[0].Duration == pr.in.Duration
	finalW := setsWeight(pr.variants)
	if !sameIn {
		finalW += weight(pr.in)
	}
	baseW := float64(len(cfg.Baselines)) * (weight(pr.in) + weight(pr.out))
	e.expect(float64(cfg.Finalists)*finalW + baseW)
	rows, err := screen(grid)
	if err != nil {
		return PDReport{}, err
	}
	markFrontier(rows)
	// Finalists: in sample, out of sample, stressed (each stressed figure
	// is the screening sample's copy and the held-out part's together).
	e.expect(-float64(cfg.Finalists) * finalW)
	finals, best, ok, err := pickFinalists(rows, budget, cfg.Finalists, func(pick []Row) error { return e.finalists(pick, res, names, pr, sameIn) })
	if err != nil {
		return PDReport{}, err
	}
	if !ok {
		// The floor round: the finalist nearest to holding, each role's
		// floor raised to its peak, then bisected (pdFloorSearch).
		more, err := pdFloorSearch(finals, budget, func(c pdCandidate) (Row, error) {
			rs, err := screen([]pdCandidate{c})
			if err != nil {
				return Row{}, err
			}
			if err := e.finalists(rs, res, names, pr, sameIn); err != nil {
				return Row{}, err
			}
			return rs[0], nil
		})
		if err != nil {
			return PDReport{}, err
		}
		if len(more) > 0 {
			finals = append(finals, more...)
			best, ok = Choose(finals, budget)
		}
	} else {
		// A winner dearer than floors would be (pdCheaperFloor).
		screened, more, err := pdCheaperFloor(rows, finals, finals[best], pr.in.Duration/60, budget, func(c pdCandidate) (Row, error) {
			rs, err := screen([]pdCandidate{c})
			if err != nil {
				return Row{}, err
			}
			return rs[0], nil
		}, func(r Row) (Row, error) {
			rs := []Row{r}
			err := e.finalists(rs, res, names, pr, sameIn)
			return rs[0], err
		})
		if err != nil {
			return PDReport{}, err
		}
		rows, finals = append(rows, screened...), append(finals, more...)
		best, ok = Choose(finals, budget)
	}
	w := finals[best]
	rep := PDReport{Policy: w.Policy, Outcome: Outcome{Holds: ok, MaxMissPct: budget, InSample: *w.InSample, OutOfSample: *w.OutOfSample, Stress: w.Stress},
		Split: pr.split, Duration: pr.dur, Screened: pr.name, Finalists: finals, Rows: rows}
	for _, s := range cfg.Stress {
		rep.StressNames = append(rep.StressNames, s.Name)
	}
	e.expect(-baseW)
	if len(cfg.Baselines) > 0 {
		bs := make([]Baseline, len(cfg.Baselines))
		out := make([][2]replay.PDResult, len(bs))
		var jobs []pdJob
		for i, s := range cfg.Baselines {
			p, err := replay.ParsePDPolicy(s)
			if err != nil {
				return PDReport{}, fmt.Errorf("baseline: %w", err)
			}
			bs[i].Policy = s
			jobs = append(jobs, pdJob{pol: p, src: pr.in, out: &out[i][0]}, pdJob{pol: p, src: pr.out, out: &out[i][1]})
		}
		if err := e.run(jobs); err != nil {
			return PDReport{}, err
		}
		for i := range bs {
			bs[i].InSample, bs[i].OutOfSample = pdFigures(out[i][0]), pdFigures(out[i][1])
		}
		rep.Baselines = bs
	}
	rep.Replays = e.done
	e.warnSLO(cfg.Warn, src.Name, cfg.Replay.SLOTTFT, true)
	return rep, nil
}

// PDBaselines are the baselines RunPD's command replays beside the
// winner: the pair rule with each role's target from its queue, and
// llm-d's four paths.
var PDBaselines = append([]string{"recommended"}, replay.LLMDBaselines...)

// pdCandidate is the pair rule recommended(prefill=TP,decode=TD) with
// each role's floor (0: the rule's own, 1).
type pdCandidate struct {
	tp, td     float64
	minP, minD int
}

// Policy is c as a `simulate --pd --policy` string.
func (c pdCandidate) Policy() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	s := "recommended(prefill=" + f(c.tp) + ",decode=" + f(c.td)
	if c.minP > 0 {
		s += ",prefill_min=" + strconv.Itoa(c.minP)
	}
	if c.minD > 0 {
		s += ",decode_min=" + strconv.Itoa(c.minD)
	}
	return s + ")"
}

// floors are c's floors, the rule's own 1 for 0.
func (c pdCandidate) floors() [2]int { return [2]int{max(c.minP, 1), max(c.minD, 1)} }

// pdPeaks are the most prefill and decode replicas over rs, with at.
func pdPeaks(at [2]int, rs ...replay.PDResult) [2]int {
	for _, r := range rs {
		at[0], at[1] = max(at[0], r.Prefill.Peak), max(at[1], r.Decode.Peak)
	}
	return at
}

// pdFloorSearch is RunPD's floor round, run when no finalist holds: the
// finalist of lowest worst miss % with both roles' floors (prefill_min,
// decode_min) raised to the most replicas each role reached over its
// replays (a role that never rose above its floor: one above it); when
// that holds, each role's floor is bisected down in turn, prefill first
// with decode's at its peak, then decode with prefill's at what was
// found, to the lowest that still holds. It returns the rows replayed
// (screened and as finalists); a pair whose policy is a finalist already
// is read from it, not replayed. probe screens and replays one candidate.
//
// Per role, not jointly (both floors scaled by one fraction): the pair's
// misses are counted on the whole path, so which pool a ramp outran is
// not in the figures, but holding is taken as monotone in each floor, as
// bisecting one floor takes it (a higher floor only adds replicas, ready
// sooner; the pair rule's ratio bound, recommend.Bound, only ever raises
// the other pool). Then no prefill floor below P (the lowest that holds
// with decode's at its peak) holds with decode's at its peak, so none
// does with a lower decode floor either, and D is the lowest decode
// floor that holds with P: neither floor of (P, D) can be lowered alone. A joint search would keep the pool that did not need
// its peak at nearly all of it. The cost is a bisection per role:
// 1 + ceil(log2(n+1)) + ceil(log2(m+1)) probes at most for floors raised
// by n and m (each bisection also tries the floor it started from, which
// with the other role raised may hold).
func pdFloorSearch(finals []Row, budget float64, probe func(pdCandidate) (Row, error)) ([]Row, error) {
	if len(finals) == 0 {
		return nil, nil
	}
	r := nearest(finals)
	var out []Row
	try := func(f [2]int) (bool, error) {
		c := r.pair
		c.minP, c.minD = f[0], f[1]
		if f[0] == 1 && r.pair.minP == 0 {
			c.minP = 0 // the rule's own floor, as the grid writes it
		}
		if f[1] == 1 && r.pair.minD == 0 {
			c.minD = 0
		}
		return probeOnce(c, c.Policy(), finals, &out, budget, probe)
	}
	lo := r.pair.floors()
	hi := [2]int{max(r.rolePeak[0], lo[0]+1), max(r.rolePeak[1], lo[1]+1)}
	_, _, err := pdLowest(lo, hi, try)
	return out, err
}

// pdLowest is the pair's floor search between lo and hi: whether hi holds
// (try), then, when it does, each role's floor bisected down in turn,
// prefill first with decode's at hi, then decode with prefill's at what
// was found (lo-1 stands for a floor that does not hold). It returns the
// floors found and whether hi held.
func pdLowest(lo, hi [2]int, try func([2]int) (bool, error)) ([2]int, bool, error) {
	if ok, err := try(hi); err != nil || !ok {
		return hi, false, err
	}
	for role := range 2 {
		h, err := lowestHolding(lo[role]-1, hi[role], func(floor int) (bool, error) {
			f := hi
			f[role] = floor
			return try(f)
		})
		if err != nil {
			return hi, false, err
		}
		hi[role] = h
	}
	return hi, true, nil
}

// pdCheaperFloor is RunPD's floor round when a finalist (w) holds, as
// cheaperFloor is Run's: floors (P, D) cost at least (P + D) x inMinutes
// replica-minutes in sample, so only floors summing below w's mean
// replicas in sample (both pools') can undercut it. Its bases are two of
// the screened rows without floors that are cheaper than w on the screen
// and miss the budget there (its stressed copies included): the nearest
// to holding and the cheapest. Each base's floors are raised to the most
// replicas each role reached on the screen and, when that holds there,
// bisected role by role on the screen (pdLowest); the pair found, when
// its floors sum below that bound, is replayed as a finalist (final), and
// when it does not hold there each role's floor alone (decode's first) is
// raised towards the screen's peak as far as the bound allows, replayed,
// and where that holds bisected back down on finalist replays. It
// returns the rows screened and the new finalists, none when no floor
// could undercut w.
func pdCheaperFloor(rows, finalists []Row, w Row, inMinutes, budget float64, screen func(pdCandidate) (Row, error), final func(Row) (Row, error)) (screened, finals []Row, err error) {
	if w.InSample == nil || !(inMinutes > 0) {
		return nil, nil, nil
	}
	top := int(math.Ceil(w.InSample.ReplicaMinutes/inMinutes)) - 1
	fr := &floorRound[pdCandidate]{rows: rows, finalists: finalists, budget: budget, screen: screen, final: final}
	// One group: the grid's rows, without floors.
	bases := floorBases(rows, w, budget, func(r Row) (string, bool) { return "", r.pair.minP == 0 && r.pair.minD == 0 })
	for _, base := range bases {
		lo := base.pair.floors()
		if lo[0]+lo[1]+1 > top {
			continue // one replica more than the rule's own floors already costs what w does
		}
		hi := [2]int{max(base.rolePeak[0], lo[0]+1), max(base.rolePeak[1], lo[1]+1)}
		at := func(f [2]int) pdCandidate {
			c := base.pair
			c.minP, c.minD = f[0], f[1]
			if f[0] == 1 {
				c.minP = 0 // the rule's own floor, as the grid writes it
			}
			if f[1] == 1 {
				c.minD = 0
			}
			return c
		}
		onScreen := func(f [2]int) (bool, error) { return fr.onScreen(at(f)) }
		whole := func(f [2]int) (bool, error) {
			if f[0]+f[1] > top {
				return false, nil // it cannot undercut w: not replayed
			}
			return fr.whole(at(f))
		}
		f, ok, err := pdLowest(lo, hi, onScreen)
		if err != nil {
			return fr.screened, fr.finals, err
		}
		if !ok || f[0]+f[1] > top {
			continue
		}
		if ok, err := whole(f); err != nil || ok || f == hi {
			if err != nil {
				return fr.screened, fr.finals, err
			}
			continue
		}
		// Short on the whole replays: each role's floor alone, decode's
		// first, raised towards hi as far as the bound allows and, where
		// that holds, bisected back down on finalist replays.
		for _, role := range []int{1, 0} {
			up := f
			up[role] = min(hi[role], top-f[1-role])
			if up[role] <= f[role] {
				continue
			}
			ok, err := whole(up)
			if err != nil {
				return fr.screened, fr.finals, err
			}
			if !ok {
				continue
			}
			if _, err := lowestHolding(f[role], up[role], func(floor int) (bool, error) {
				x := f
				x[role] = floor
				return whole(x)
			}); err != nil {
				return fr.screened, fr.finals, err
			}
			break
		}
	}
	return fr.screened, fr.finals, nil
}

// finalists replays rows (named in names, screened into res) on the whole
// in-sample part (unless the screen was it) and every variant of the
// held-out part.
func (e *pdEvaluator) finalists(rows []Row, res [][][]replay.PDResult, names []string, pr prep, sameIn bool) error {
	type out struct {
		in   replay.PDResult
		vars [][]replay.PDResult
	}
	o := make([]out, len(rows))
	var jobs []pdJob
	for i, r := range rows {
		p, err := replay.ParsePDPolicy(r.Policy)
		if err != nil {
			return err
		}
		o[i].vars = make([][]replay.PDResult, len(pr.variants))
		if !sameIn {
			jobs = append(jobs, pdJob{pol: p, src: pr.in, out: &o[i].in})
		}
		for k, vs := range pr.variants {
			if k > 0 && vs.same {
				continue
			}
			o[i].vars[k] = make([]replay.PDResult, len(vs.srcs))
			for l, v := range vs.srcs {
				jobs = append(jobs, pdJob{pol: p, src: v, out: &o[i].vars[k][l]})
			}
		}
	}
	if err := e.run(jobs); err != nil {
		return err
	}
	for i := range rows {
		f := rows[i].Screen
		if !sameIn {
			f = pdFigures(o[i].in)
		}
		of := pdFigures(o[i].vars[0]...)
		rows[i].InSample, rows[i].OutOfSample = &f, &of
		rows[i].rolePeak = pdPeaks(rows[i].rolePeak, o[i].in)
		rows[i].rolePeak = pdPeaks(rows[i].rolePeak, o[i].vars[0]...)
		sr := res[slices.Index(names, rows[i].Policy)]
		for k, v := range o[i].vars[1:] {
			if pr.variants[k+1].same {
				v = o[i].vars[0]
			}
			s := sr[k+1]
			if pr.sets[k+1].same {
				s = sr[0]
			}
			rows[i].Stress = append(rows[i].Stress, pdFigures(append(slices.Clone(s), v...)...))
			rows[i].rolePeak = pdPeaks(rows[i].rolePeak, v...)
		}
	}
	return nil
}

// pdEvaluator runs pair replays on a pool of workers.
type pdEvaluator struct {
	ctx context.Context
	cfg Config
	pd  replay.PDConfig
	tally
}

type pdJob struct {
	pol replay.PDPolicy
	src trace.Source
	out *replay.PDResult
}

func (e *pdEvaluator) run(jobs []pdJob) error {
	e.planned(len(jobs), weightOf(jobs, func(j pdJob) trace.Source { return j.src }))
	return runPool(e.cfg.Workers, jobs, func(j pdJob) error {
		rc := e.cfg.Replay
		rc.Timeline, rc.Progress = false, nil
		r, err := replay.RunPD(e.ctx, j.src, j.pol, rc, e.pd)
		if err != nil {
			return err
		}
		*j.out = r
		e.shed(e.cfg.Warn, r.Policy, r.ShedWarnings()...)
		e.idle(r.ShortestPrompt, r.IdleTTFT)
		e.finished(e.cfg.Progress, weight(j.src))
		return nil
	})
}

// WriteJSON writes r as one JSON object.
func (r PDReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r for a terminal: the winner and its verdict, the
// finalists on every part, and the baselines.
func (r PDReport) WriteText(w io.Writer, traceName string) error {
	verdict := "holds"
	if !r.Holds {
		verdict = "does not hold (no finalist kept within the budget everywhere; the one with the lowest worst miss %)"
	}
	fmt.Fprintf(w, "P/D pair tuned on %s (in sample 0 to %.0fs, held out %.0fs to %.0fs; screened on %s): %d replays\n",
		traceName, r.Split, r.Split, r.Duration, r.Screened, r.Replays)
	fmt.Fprintf(w, "winner: %s, %s within %s misses\n\n", r.Policy, verdict, pct(r.MaxMissPct))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "policy\tin: miss\trmin\tout: miss\trmin"
	for _, s := range r.StressNames {
		head += "\t" + s + ": miss"
	}
	fmt.Fprintln(tw, head+"\t")
	for _, f := range r.Finalists {
		line := fmt.Sprintf("%s\t%s\t%.1f\t%s\t%.1f", f.Policy, pctAgainst(f.InSample.MissPct, r.MaxMissPct), f.InSample.ReplicaMinutes, pctAgainst(f.OutOfSample.MissPct, r.MaxMissPct), f.OutOfSample.ReplicaMinutes)
		for _, s := range f.Stress {
			line += "\t" + pctAgainst(s.MissPct, r.MaxMissPct)
		}
		fmt.Fprintln(tw, line+"\t")
	}
	for _, b := range r.Baselines {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%.1f\t\n", b.Policy, pct(b.InSample.MissPct), b.InSample.ReplicaMinutes, pct(b.OutOfSample.MissPct), b.OutOfSample.ReplicaMinutes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nrmin: replica-minutes of both pools. Finalists above the baselines; the baselines run in and out of sample only.")
	return err
}
