package tune

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	pr, err := prepare(src, cfg)
	if err != nil {
		return PDReport{}, err
	}
	e := &pdEvaluator{ctx: ctx, cfg: cfg, pd: pd}
	var names []string
	for _, tp := range PDPrefillTargets {
		for _, td := range PDDecodeTargets {
			names = append(names, pdCandidate(tp, td))
		}
	}
	// Screen.
	res := make([][][]replay.PDResult, len(names))
	var jobs []pdJob
	for i, n := range names {
		p, err := replay.ParsePDPolicy(n)
		if err != nil {
			return PDReport{}, err
		}
		res[i] = make([][]replay.PDResult, len(pr.sets))
		for k, set := range pr.sets {
			if k > 0 && set.same {
				continue
			}
			res[i][k] = make([]replay.PDResult, len(set.srcs))
			for l, s := range set.srcs {
				jobs = append(jobs, pdJob{pol: p, src: s, out: &res[i][k][l]})
			}
		}
	}
	if err := e.run(jobs); err != nil {
		return PDReport{}, err
	}
	rows := make([]Row, len(names))
	for i, n := range names {
		rows[i] = Row{Policy: n, Screen: pdFigures(res[i][0]...)}
		for k, r := range res[i][1:] {
			if pr.sets[k+1].same {
				r = res[i][0]
			}
			rows[i].ScreenStress = append(rows[i].ScreenStress, pdFigures(r...))
		}
	}
	markFrontier(rows)
	// Finalists: in sample, out of sample, stressed (each stressed figure
	// is the screening sample's copy and the held-out part's together).
	sameIn := len(pr.screen) == 1 && pr.screen[0].Duration == pr.in.Duration
	finals, best, ok, err := pickFinalists(rows, budget, cfg.Finalists, func(pick []Row) error { return e.finalists(pick, res, names, pr, sameIn) })
	if err != nil {
		return PDReport{}, err
	}
	w := finals[best]
	rep := PDReport{Policy: w.Policy, Outcome: Outcome{Holds: ok, MaxMissPct: budget, InSample: *w.InSample, OutOfSample: *w.OutOfSample, Stress: w.Stress},
		Split: pr.split, Duration: pr.dur, Screened: pr.name, Finalists: finals, Rows: rows}
	for _, s := range cfg.Stress {
		rep.StressNames = append(rep.StressNames, s.Name)
	}
	if len(cfg.Baselines) > 0 {
		bs := make([]Baseline, len(cfg.Baselines))
		out := make([][2]replay.PDResult, len(bs))
		jobs = jobs[:0]
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
	return rep, nil
}

// PDBaselines are the baselines RunPD's command replays beside the
// winner: the pair rule with each role's target from its queue, and
// llm-d's four paths.
var PDBaselines = append([]string{"recommended"}, replay.LLMDBaselines...)

// pdCandidate is the pair rule at targets tp and td.
func pdCandidate(tp, td float64) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return "recommended(prefill=" + f(tp) + ",decode=" + f(td) + ")"
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
	e.planned(len(jobs))
	return runPool(e.cfg.Workers, jobs, func(j pdJob) error {
		rc := e.cfg.Replay
		rc.Timeline, rc.Progress = false, nil
		r, err := replay.RunPD(e.ctx, j.src, j.pol, rc, e.pd)
		if err != nil {
			return err
		}
		*j.out = r
		e.finished(e.cfg.Progress)
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
	fmt.Fprintf(w, "P/D pair tuned on %s (in sample 0 to %gs, held out %gs to %gs; screened on %s): %d replays\n",
		traceName, r.Split, r.Split, r.Duration, r.Screened, r.Replays)
	fmt.Fprintf(w, "winner: %s, %s within %s misses\n\n", r.Policy, verdict, pct(r.MaxMissPct))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "policy\tin: miss\trmin\tout: miss\trmin"
	for _, s := range r.StressNames {
		head += "\t" + s + ": miss"
	}
	fmt.Fprintln(tw, head+"\t")
	for _, f := range r.Finalists {
		line := fmt.Sprintf("%s\t%s\t%.1f\t%s\t%.1f", f.Policy, pct(f.InSample.MissPct), f.InSample.ReplicaMinutes, pct(f.OutOfSample.MissPct), f.OutOfSample.ReplicaMinutes)
		for _, s := range f.Stress {
			line += "\t" + pct(s.MissPct)
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
