package replay

import (
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// infscaleCtl runs recommend.Decider, the code serve runs (Decide and
// the rules around it: the last desired held on no data), on the simulated
// clock: second t of the trace is Config.Epoch + t. The current count is
// the simulated Deployment's replicas, read every decision.
type infscaleCtl struct {
	p     *recommend.Policy
	run   recommend.Decider
	d     recommend.Decision
	epoch time.Time
}

func newInfscale(p *recommend.Policy, epoch time.Time) *infscaleCtl {
	return &infscaleCtl{p: p, epoch: epoch}
}

func (c *infscaleCtl) Decide(now float64, obs recommend.Observation) int {
	c.run.Decide(&c.d, c.p, recommend.Reading{Obs: obs, CurrentKnown: true}, c.epoch.Add(time.Duration(now*float64(time.Second))))
	return c.d.Desired
}

// explainer is a Controller that says why it decided its last count:
// recommend.Reason's name and the signal whose recommendation was the
// largest ("" when none was valid), for the timeline (Sample.Reason).
type explainer interface {
	explain() (reason, metric string)
}

func (c *infscaleCtl) explain() (reason, metric string) { return explainDecision(&c.d) }

// explainDecision is d's reason (recommend.Reason's name, "" for none) and
// the signal whose recommendation was the largest among the valid ones
// that did not abstain ("" when none was).
func explainDecision(d *recommend.Decision) (reason, metric string) {
	if d.Reason != 0 {
		reason = d.Reason.String()
	}
	best := -1
	for i, r := range d.Raw {
		if r.Valid && !r.Abstained && (best < 0 || r.Desired > d.Raw[best].Desired) {
			best = i
		}
	}
	if best >= 0 {
		metric = d.Raw[best].Signal.String()
	}
	return reason, metric
}

// outsideBounds is the HPA's check of a current count outside [min, max]
// (recommend.Policy.OutsideBounds) on the loop's state: when it sets a
// bound, that is the loop's output, and its decision (explain: the bound's
// reason, no metric read).
func (c *infscaleCtl) outsideBounds(now float64, cur int) (int, bool) {
	n, ok := c.p.OutsideBounds(&c.run.State, cur, c.epoch.Add(time.Duration(now*float64(time.Second))))
	if ok {
		c.run.Desired, c.run.HasDesired = n, true
		c.run.Current, c.run.HasCurrent = cur, true
		c.d.Desired, c.d.Raw, c.d.Steps = n, c.d.Raw[:0], c.d.Steps[:0]
		c.d.Reason = recommend.ReasonMin
		if n < cur {
			c.d.Reason = recommend.ReasonMax
		}
	}
	return n, ok
}

// fixed always wants n replicas.
type fixed int

func (f fixed) Decide(float64, recommend.Observation) int { return int(f) }

// warm makes the state look as if the policy had asked for n replicas up to
// the trace's start: the scale-down window holds n until it expires.
func (c *infscaleCtl) warm(n int, epoch time.Time) {
	c.run.State.Recommendations = []recommend.TimedReplicas{{At: epoch, Replicas: n}}
	c.run.State.LastDesired, c.run.State.LastAt = n, epoch
	c.run.Desired, c.run.HasDesired = n, true
	if c.p.Hold != nil {
		c.run.State.Inherited = n // the fleet its first decision found, as serve's
	}
}
