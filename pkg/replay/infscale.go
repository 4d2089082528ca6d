package replay

import (
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// infscaleCtl runs pkg/recommend's Decide, the code serve runs, on the
// simulated clock: second t of the trace is Config.Epoch + t.
type infscaleCtl struct {
	p     *recommend.Policy
	st    recommend.State
	d     recommend.Decision
	epoch time.Time
}

func newInfscale(p *recommend.Policy, epoch time.Time) *infscaleCtl {
	return &infscaleCtl{p: p, epoch: epoch}
}

func (c *infscaleCtl) Decide(now float64, obs recommend.Observation) int {
	recommend.DecideInto(&c.d, c.p, obs, &c.st, c.epoch.Add(time.Duration(now*float64(time.Second))))
	return c.d.Desired
}

// fixed always wants n replicas.
type fixed int

func (f fixed) Decide(float64, recommend.Observation) int { return int(f) }

// warm makes the state look as if the policy had asked for n replicas up to
// the trace's start: the scale-down window holds n until it expires.
func (c *infscaleCtl) warm(n int, epoch time.Time) {
	c.st.Recommendations = []recommend.TimedReplicas{{At: epoch, Replicas: n}}
	c.st.LastDesired, c.st.LastAt = n, epoch
}
