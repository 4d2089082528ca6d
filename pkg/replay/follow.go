package replay

import (
	"github.com/infscale/infscale/pkg/recommend"

	"fmt"
	"math"
)

// Follow returns a policy that replays a given replica timeline instead of
// deciding: at second t it wants replicas[floor(t/step)] (the last entry
// after the end; NaN entries keep the previous count). Backtests use it to
// replay what actually ran (kube_deployment_spec_replicas) through the same
// replica model as the policies, so the simulated TTFT can be compared with
// the observed one. New replicas still take the model's cold start, as the
// real pods did. name labels the result row. Errors: step <= 0, no entries,
// or a negative count.
func Follow(name string, step float64, replicas []float64) (Policy, error) {
	if !(step > 0) || len(replicas) == 0 {
		return Policy{}, fmt.Errorf("follow %s: want a step > 0 and at least one replica count", name)
	}
	tl := make([]int, len(replicas))
	last := 1
	for i, r := range replicas {
		if math.IsNaN(r) {
			tl[i] = last
			continue
		}
		if r < 0 || r > MaxReplicas {
			return Policy{}, fmt.Errorf("follow %s: replica count %g at entry %d: want 0..%d", name, r, i, MaxReplicas)
		}
		tl[i] = int(math.Round(r))
		last = tl[i]
	}
	ctl := &follow{step: step, tl: tl}
	return Policy{Name: name, min: tl[0], exact: true, build: func(env) (Controller, error) { return ctl, nil }}, nil
}

// follow wants the timeline's count at now; it holds no state, so one
// instance serves every replay.
type follow struct {
	step float64
	tl   []int
}

func (f *follow) Decide(now float64, _ recommend.Observation) int {
	i := int(now / f.step)
	if i >= len(f.tl) {
		i = len(f.tl) - 1
	}
	return f.tl[max(i, 0)]
}
