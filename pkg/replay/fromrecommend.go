package replay

import (
	"fmt"

	"github.com/infscale/infscale/pkg/recommend"
)

// FromRecommend wraps a pkg/recommend policy (e.g. a serve config target's,
// config.Target.Policy) as a replay policy named name, decided by the same
// recommend.Decide as the policy strings. p is validated (and filled with
// its defaults) in place; it must not change while replays run. Errors:
// p's validation error.
func FromRecommend(name string, p *recommend.Policy) (Policy, error) {
	if err := p.Validate(); err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", name, err)
	}
	return Policy{Name: name, Recommend: p, min: max(p.Min, 1), max: p.Max,
		build: func(e env) (Controller, error) {
			rp, err := forReplica(p, e.sp)
			if err != nil {
				return nil, err
			}
			return newInfscale(rp, e.cfg.Epoch), nil
		}}, nil
}
