package tune

import (
	"fmt"
	"slices"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/trace"
)

// stressSet is the sources of one copy (the screening sample, the
// held-out part, or a stressed copy of either); same: the copy is the
// unstressed one (nothing to stress), whose results it reuses.
type stressSet struct {
	srcs []trace.Source
	same bool
}

// setsWeight is the weight of replaying one candidate on every set (the
// same ones once: screen and finalists reuse their results).
func setsWeight(sets []stressSet) float64 {
	w := 0.0
	for k, set := range sets {
		if k > 0 && set.same {
			continue
		}
		for _, s := range set.srcs {
			w += weight(s)
		}
	}
	return w
}

// screen replays the candidates on the screening sample (sets[0]) and
// its stressed copies (sets[1:]).
func (e *evaluator) screen(cs []Candidate, sets []stressSet) ([]Row, error) {
	res := make([][][]replay.Result, len(cs))
	var jobs []job
	for i, c := range cs {
		p, err := c.replayPolicy()
		if err != nil {
			return nil, err
		}
		res[i] = make([][]replay.Result, len(sets))
		for k, set := range sets {
			if k > 0 && set.same {
				continue
			}
			res[i][k] = make([]replay.Result, len(set.srcs))
			for l, s := range set.srcs {
				jobs = append(jobs, job{pol: p, src: s, out: &res[i][k][l]})
			}
		}
	}
	if err := e.run(jobs); err != nil {
		return nil, err
	}
	rows := make([]Row, len(cs))
	for i, c := range cs {
		rows[i] = Row{Policy: c.Policy(), Candidate: c, Screen: figures(res[i][0]...)}
		for k, r := range res[i][1:] {
			if sets[k+1].same {
				r = res[i][0]
			}
			rows[i].screenStress = append(rows[i].screenStress, r)
			rows[i].ScreenStress = append(rows[i].ScreenStress, figures(r...))
		}
	}
	return rows, nil
}

// finalists replays rows on the whole in-sample part (unless the screen
// was it) and on every variant of the held-out part.
func (e *evaluator) finalists(rows []Row, in trace.Source, sameIn bool, variants []stressSet) error {
	type out struct {
		in   replay.Result
		vars [][]replay.Result
	}
	res := make([]out, len(rows))
	var jobs []job
	for i, r := range rows {
		p, err := r.Candidate.replayPolicy()
		if err != nil {
			return err
		}
		res[i].vars = make([][]replay.Result, len(variants))
		if !sameIn {
			jobs = append(jobs, job{pol: p, src: in, out: &res[i].in})
		}
		for k, vs := range variants {
			if k > 0 && vs.same {
				continue
			}
			res[i].vars[k] = make([]replay.Result, len(vs.srcs))
			for l, v := range vs.srcs {
				jobs = append(jobs, job{pol: p, src: v, out: &res[i].vars[k][l]})
			}
		}
	}
	if err := e.run(jobs); err != nil {
		return err
	}
	for i := range rows {
		f := rows[i].Screen
		if !sameIn {
			f = figures(res[i].in)
		}
		o := figures(res[i].vars[0]...)
		rows[i].InSample, rows[i].OutOfSample = &f, &o
		for k, v := range res[i].vars[1:] {
			if variants[k+1].same {
				v = res[i].vars[0]
			}
			rows[i].Stress = append(rows[i].Stress, figures(append(slices.Clone(rows[i].screenStress[k]), v...)...))
		}
	}
	return nil
}

// baselines replays each policy on in and out.
func (e *evaluator) baselines(policies []string, in, out trace.Source) ([]Baseline, error) {
	bs := make([]Baseline, len(policies))
	res := make([][2]replay.Result, len(policies))
	var jobs []job
	for i, s := range policies {
		pol, err := replay.ParsePolicy(s)
		if err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		bs[i].Policy = s
		jobs = append(jobs, job{pol: pol, src: in, out: &res[i][0]}, job{pol: pol, src: out, out: &res[i][1]})
	}
	if err := e.run(jobs); err != nil {
		return nil, err
	}
	for i := range bs {
		bs[i].InSample, bs[i].OutOfSample = figures(res[i][0]), figures(res[i][1])
	}
	return bs, nil
}
