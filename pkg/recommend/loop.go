package recommend

import (
	"fmt"
	"time"
)

// Loop is what a decision loop remembers for one target beyond State: the
// last desired value it output and the last current replica count it read.
// Its Decide applies the rules every loop needs around Decide (serve on the
// wall clock, the replay on the simulated one, so both run the same):
//
//   - current: the replicas read this cycle; when the consumer sets the
//     workload's replicas to the desired output (Reading.SpecFollows: serve
//     without a replicas query, the replay's Deployment) the previous desired
//     is the current count the HPA's arithmetic starts from (pods still
//     starting or not answering are then missing pods, never a smaller
//     fleet); nothing read, the last current read, else the last desired;
//     nothing at all known, no decision;
//   - no data: when no metric is known (ReasonNoData) and a desired value was
//     output before, it is held (bounded by Policy.Bound) rather than the
//     count Decide falls back to, and the outage counts as that value in the
//     stabilisation windows: the first reading after an outage longer than
//     the scale-down window, often a partial one, cannot scale down before a
//     full window has passed.
//
// The zero Loop is a fresh start.
type Loop struct {
	// State is Decide's window history and scale events.
	State State
	// Desired is the last desired output, valid when HasDesired.
	Desired    int
	HasDesired bool
	// Current is the last current replica count read, valid when HasCurrent.
	Current    int
	HasCurrent bool
	// Quiet leaves the steps of Decide's decisions out (Decision.Steps
	// empty): their text is most of a decision's cost, and a loop that
	// shows only some of them (serve: its newest decision, when asked)
	// writes them with Explain.
	Quiet bool

	// trial is Decide's scratch copy of State (its slices reused); after a
	// decision it holds the State the decision started from.
	trial State
	// last is what the last decision started from, for Explain.
	last lastDecision
}

// lastDecision is the input of a Loop's last decision besides the State
// it started from (Loop.trial).
type lastDecision struct {
	ok                     bool
	p                      *Policy
	r                      Reading
	now                    time.Time
	desired, current       int
	hasDesired, hasCurrent bool
}

// Reading is one cycle's observation for Loop.Decide.
type Reading struct {
	// Obs is the observation; Obs.Current is read only when CurrentKnown.
	Obs Observation
	// CurrentKnown is true when Obs.Current was read this cycle.
	CurrentKnown bool
	// SpecFollows is true when the workload's replicas are set to the
	// desired output by the consumer and not read (serve without a
	// replicas query): the previous desired is then the current count.
	SpecFollows bool
}

// Decide is one cycle (see Loop). decided is false, and nothing but
// Current changed, when no current count has ever been known; held is true
// when the last desired value was held on no data (the decision's last
// step says so).
func (l *Loop) Decide(p *Policy, r Reading, now time.Time) (d Decision, decided, held bool) {
	decided, held = l.DecideInto(&d, p, r, now)
	return d, decided, held
}

// DecideInto is Decide writing into d, reusing its slices (the replay's hot
// loop).
func (l *Loop) DecideInto(d *Decision, p *Policy, r Reading, now time.Time) (decided, held bool) {
	last := lastDecision{ok: true, p: p, r: r, now: now, desired: l.Desired, current: l.Current, hasDesired: l.HasDesired, hasCurrent: l.HasCurrent}
	if decided, held = l.decide(d, p, r, now, l.Quiet); decided {
		l.last = last
	}
	return decided, held
}

// Explain returns the steps of the last decision (what Decide returns
// without Quiet): it decides again from what that decision started from,
// on a copy. Nil when nothing was decided since the loop was made or
// restored.
func (l *Loop) Explain() []Step {
	if !l.last.ok {
		return nil
	}
	a := l.last
	re := Loop{State: copyState(State{}, &l.trial), Desired: a.desired, Current: a.current, HasDesired: a.hasDesired, HasCurrent: a.hasCurrent}
	var d Decision
	re.decide(&d, a.p, a.r, a.now, false)
	return d.Steps
}

func (l *Loop) decide(d *Decision, p *Policy, r Reading, now time.Time, quiet bool) (decided, held bool) {
	obs := r.Obs
	if r.CurrentKnown {
		l.Current, l.HasCurrent = obs.Current, true
	}
	switch {
	case r.SpecFollows && l.HasDesired:
		obs.Current = l.Desired
		if obs.Reporting <= 0 && r.CurrentKnown {
			obs.Reporting = r.Obs.Current
		}
	case r.CurrentKnown:
	case l.HasCurrent:
		obs.Current = l.Current
	case l.HasDesired:
		obs.Current = l.Desired
	default:
		return false, false
	}
	l.trial = copyState(l.trial, &l.State)
	decideInto(d, p, obs, &l.trial, now, quiet)
	if d.Reason == ReasonNoData && l.HasDesired {
		hold := p.Bound(l.Desired, now)
		if !quiet {
			text := fmt.Sprintf("no metric is known: hold the last desired %d (not current %d)", l.Desired, obs.Current)
			if hold != l.Desired {
				text = fmt.Sprintf("no metric is known: hold the last desired %d within min %d (schedule included), max %d: %d (not current %d)", l.Desired, p.Floor(now), p.Max, hold, obs.Current)
			}
			d.step(ReasonNoData, hold, text)
		}
		d.Desired, held = hold, true
		// The trial is dropped: the outage counts as the held value. Its
		// idle bookkeeping stays: requests held (or activity unknown) while
		// no metric is known are activity, and the cooldown runs from them.
		// (Made on a copy of State, so that trial keeps the State the
		// decision started from, as after any decision.)
		firstSeen, lastActive := l.trial.FirstSeen, l.trial.LastActive
		l.trial = copyState(l.trial, &l.State)
		l.trial.Recommendations = append(pruneBefore(l.trial.Recommendations, now.Add(-p.Horizon())),
			TimedReplicas{At: now, Replicas: hold})
		l.trial.FirstSeen, l.trial.LastActive = firstSeen, lastActive
	}
	l.State, l.trial = l.trial, l.State
	l.Desired, l.HasDesired = d.Desired, true
	return true, held
}

// Restore sets the loop's memory from a saved state (a restart): desired is
// bounded by p.Bound at now and returned; current < 0 is unknown.
func (l *Loop) Restore(p *Policy, desired, current int, st State, now time.Time) int {
	l.State, l.last = st, lastDecision{}
	l.Desired, l.HasDesired = p.Bound(desired, now), true
	// The downtime is unknown: no scale-down below the held value until a
	// full window of fresh observations (Resume).
	Resume(&l.State, l.Desired, now)
	if current >= 0 {
		l.Current, l.HasCurrent = current, true
	}
	return l.Desired
}

// Bound bounds a desired value held or restored outside Decide (an outage,
// a restart, a reload that narrowed the bounds) to [Floor(now), Max].
func (p *Policy) Bound(n int, now time.Time) int {
	return min(max(n, p.Floor(now)), p.Max)
}

// Horizon is how far back the policy's windows and periods reach: the
// longest stabilisation window or rate-limit period, at least the HPA's
// default scale-down window (5 minutes). A loop keeps that much history
// (and serve rebuilds that much after a restart).
func (p *Policy) Horizon() time.Duration {
	p.prepare()
	return max(defaultDownWindowSeconds*time.Second, p.upWindow, p.downWindow, p.upPeriod, p.downPeriod)
}

// copyState copies src into dst, reusing dst's slices.
func copyState(dst State, src *State) State {
	r, u, dn, dm := dst.Recommendations[:0], dst.ScaleUpEvents[:0], dst.ScaleDownEvents[:0], dst.Demand[:0]
	dst = *src
	dst.Recommendations = append(r, src.Recommendations...)
	dst.ScaleUpEvents = append(u, src.ScaleUpEvents...)
	dst.ScaleDownEvents = append(dn, src.ScaleDownEvents...)
	dst.Demand = append(dm, src.Demand...)
	return dst
}

// pruneBefore drops the recommendations older than cutoff (an outage would
// otherwise grow the list by one per cycle).
func pruneBefore(rs []TimedReplicas, cutoff time.Time) []TimedReplicas {
	i := 0
	for i < len(rs) && rs[i].At.Before(cutoff) {
		i++
	}
	return rs[i:]
}
