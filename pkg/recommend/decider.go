package recommend

import (
	"fmt"
	"math"
	"time"
)

// Decider is one target's decisions over time: State plus the last desired
// value it output and the last current count it read. Its Decide is the
// package's Decide with the two rules every loop needs around it, so that
// serve and the replay decide alike: when no count is read this cycle, or
// the consumer sets the replicas to the output (Reading.SpecFollows), the
// previous desired or last count read is current; with no metric known the
// last desired is held (Policy.Bound) and counts as that value in the
// windows. The zero Decider is a fresh start.
type Decider struct {
	// State is Decide's window samples and scale events.
	State State
	// Desired is the last desired output, valid when HasDesired.
	Desired    int
	HasDesired bool
	// Current is the last current replica count read, valid when HasCurrent.
	Current    int
	HasCurrent bool
	// Quiet leaves Decision.Steps empty, their text being most of a
	// decision's cost; Explain writes the last decision's when asked.
	Quiet bool
	// trialSet has bit i set when the loop's own scratch list i
	// (Recommendations, ScaleUpEvents, ScaleDownEvents, Demand) would be
	// non-nil: what Decide's copy of an empty list is (nil or empty), as
	// when each loop had its own scratch, so that a State (and its JSON)
	// is the same whichever scratch is used.
	trialSet uint8
	// Scratch, when set, is the State Decide works on, left in any shape
	// after each decision: Deciders used one at a time (serve's targets)
	// share one instead of keeping a second State each. Nil: Decide makes
	// one. Decisions are the same either way.
	Scratch *State

	// start is what the last decision started from, for Explain, kept as
	// a difference from State: its lists hold only their first elements,
	// and keep[i] more of list i are State's first keep[i] (a decision
	// usually drops a few entries of a list and appends some).
	start State
	keep  [4]uint16
	// last is the input of the last decision besides start, for Explain.
	last lastDecision
}

// lastDecision is the input of a Decider's last decision besides the State
// it started from (Decider.start).
type lastDecision struct {
	ok                     bool
	p                      *Policy
	r                      Reading
	now                    time.Time
	desired, current       int
	hasDesired, hasCurrent bool
	pair                   *Step // the P/D ratio bound's raise after it (Bound), nil when none
}

// Reading is one cycle's observation for Decider.Decide.
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

// Decide is one cycle: the package's Decide with the rules above, written
// into d (its slices reused: the replay's hot loop passes the same d each
// time, serve a fresh one it keeps). decided is false, and only Current
// changed, while no current count was ever known; held is true when the
// last desired value was held on no data.
func (l *Decider) Decide(d *Decision, p *Policy, r Reading, now time.Time) (decided, held bool) {
	last := lastDecision{ok: true, p: p, r: r, now: now, desired: l.Desired, current: l.Current, hasDesired: l.HasDesired, hasCurrent: l.HasCurrent}
	if decided, held = l.decide(d, p, r, now, l.Quiet); decided {
		l.last = last
	}
	return decided, held
}

// Explain returns the steps of the last decision (what Decide returns
// without Quiet): it decides again from what that decision started from,
// on a copy. Nil when nothing was decided since the loop was made or
// restored, or when State no longer holds what that decision left
// (changed outside Decide).
func (l *Decider) Explain() []Step {
	if !l.last.ok {
		return nil
	}
	a := l.last
	start, ok := l.startState()
	if !ok {
		return nil
	}
	re := Decider{State: start, Desired: a.desired, Current: a.current, HasDesired: a.hasDesired, HasCurrent: a.hasCurrent}
	var d Decision
	re.decide(&d, a.p, a.r, a.now, false)
	if a.pair != nil {
		d.Steps = append(d.Steps, *a.pair)
	}
	return d.Steps
}

func (l *Decider) decide(d *Decision, p *Policy, r Reading, now time.Time, quiet bool) (decided, held bool) {
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
	trial := l.scratch()
	*trial = l.copyTrial(*trial)
	decideInto(d, p, obs, trial, now, quiet)
	if d.Reason == ReasonNoData && l.HasDesired {
		hold := p.Bound(l.Desired, now)
		if !quiet {
			text := fmt.Sprintf("no metric is known: hold the last desired %d", l.Desired)
			if hold != l.Desired {
				text = fmt.Sprintf("no metric is known: hold the last desired %d within min %d (schedule included), max %d: %d", l.Desired, p.Floor(now), p.Max, hold)
			}
			if obs.Current != hold { // said only where it differs: "(not current 4)" beside 4 read as a contradiction
				text += fmt.Sprintf(" (not current %d)", obs.Current)
			}
			// This step replaces the pipeline's own no-data answer (keep
			// its base, which is current once the last decision is older
			// than the windows) and its bound steps: one answer, the output.
			for i, s := range d.Steps {
				if s.Stage == StageMissingData {
					d.Steps = d.Steps[:i]
					break
				}
			}
			d.stage = StageMissingData
			d.step(ReasonNoData, hold, text)
		}
		d.Desired, held = hold, true
		// The trial is dropped: the outage counts as the held value. Its
		// idle bookkeeping stays: requests held (or activity unknown) while
		// no metric is known are activity, and the cooldown runs from them.
		// (Made on a copy of State, which stays what the decision started
		// from.)
		firstSeen, lastActive := trial.FirstSeen, trial.LastActive
		*trial = copyState(*trial, &l.State)
		// Pruned as stabilization prunes (an outage would otherwise grow
		// the list by one per cycle); without behavior the window counts its start.
		trial.Recommendations = append(pruneOld(trial.Recommendations, now.Add(-p.Horizon()), recAt, p.NoBehavior),
			TimedReplicas{At: now, Replicas: hold})
		trial.FirstSeen, trial.LastActive = firstSeen, lastActive
		// The held value is the output the consumer saw: base() starts
		// from it after the outage, not from a current count the consumer
		// had not yet brought up to it (an outage past the windows with
		// the consumer behind, 3 of a desired 4, exported 4, 3, 4). What
		// it left coming is not known (nothing was read): none. Replicas
		// the last decision left coming are dated as the runaway guard
		// dates them (guard): ready at the last decision that saw them
		// coming, not at a hold (that would hold a scale-up after every
		// outage), and not forgotten (an outage of one cycle during a
		// scale-up would end the guard's drain and settle). While some are
		// still coming after the outage, asked − ready > 0 holds anyway.
		if trial.Coming > 0 {
			trial.ReadyAt = trial.LastAt
		}
		// A hold a bound moved (a reload's max, a schedule window) changed
		// the output: a scale event, as finish records one, counted now
		// since the next decision starts from the hold.
		p.recordEvent(trial, l.Desired, hold, now)
		trial.LastDesired, trial.LastAt, trial.Coming = hold, now, 0
	}
	heldZero(trial, r, now)
	l.remember(trial)
	l.State, *trial = *trial, l.State
	l.Desired, l.HasDesired = d.Desired, true
	return true, held
}

// scratch is the State Decide works on (Scratch, made when nil).
func (l *Decider) scratch() *State {
	if l.Scratch == nil {
		l.Scratch = new(State)
	}
	return l.Scratch
}

// copyTrial is copyState(dst, &l.State) with each empty list nil or not
// as the loop's own scratch list would leave it (trialSet), whatever dst's
// lists are.
func (l *Decider) copyTrial(dst State) State {
	dst = copyState(dst, &l.State)
	fix := func(bit uint8, n int, set func(empty bool)) {
		if n == 0 {
			set(l.trialSet&bit != 0)
		}
	}
	fix(1, len(dst.Recommendations), func(e bool) { dst.Recommendations = emptyOrNil[TimedReplicas](e) })
	fix(2, len(dst.ScaleUpEvents), func(e bool) { dst.ScaleUpEvents = emptyOrNil[ScaleEvent](e) })
	fix(4, len(dst.ScaleDownEvents), func(e bool) { dst.ScaleDownEvents = emptyOrNil[ScaleEvent](e) })
	fix(8, len(dst.Demand), func(e bool) { dst.Demand = emptyOrNil[DemandSample](e) })
	return dst
}

// emptyOrNil is an empty non-nil list when empty is true, else nil.
func emptyOrNil[T any](empty bool) []T {
	if empty {
		return []T{}
	}
	return nil
}

// remember records what the decision that made next started from (State)
// as start and keep, and which of its lists are non-nil (trialSet: the
// start becomes the loop's own scratch, as Decide swaps them).
func (l *Decider) remember(next *State) {
	s0 := &l.State
	st := l.start
	r, u, dn, dm := st.Recommendations[:0], st.ScaleUpEvents[:0], st.ScaleDownEvents[:0], st.Demand[:0]
	st = *s0
	var k int
	k, st.Recommendations = startDiff(r, s0.Recommendations, next.Recommendations, func(a, b TimedReplicas) bool { return a == b })
	l.keep[0] = uint16(k)
	k, st.ScaleUpEvents = startDiff(u, s0.ScaleUpEvents, next.ScaleUpEvents, func(a, b ScaleEvent) bool { return a == b })
	l.keep[1] = uint16(k)
	k, st.ScaleDownEvents = startDiff(dn, s0.ScaleDownEvents, next.ScaleDownEvents, func(a, b ScaleEvent) bool { return a == b })
	l.keep[2] = uint16(k)
	k, st.Demand = startDiff(dm, s0.Demand, next.Demand, func(a, b DemandSample) bool {
		return a.At == b.At && math.Float64bits(a.Demand) == math.Float64bits(b.Demand)
	})
	l.keep[3] = uint16(k)
	l.start = st
	l.trialSet = 0
	for i, set := range []bool{s0.Recommendations != nil, s0.ScaleUpEvents != nil, s0.ScaleDownEvents != nil, s0.Demand != nil} {
		if set {
			l.trialSet |= 1 << i
		}
	}
}

// startDiff splits s0 into a head, appended to dst, and its last k
// elements (at most maxKeep), which are next's first k (identical values:
// times compared with ==, wall clock, monotonic reading and location),
// with the head as short as that allows. It is Knuth-Morris-Pratt's
// search of next's start in s0's end: linear, where trying each start in
// turn took len² comparisons of a list of equal entries (a state file's).
func startDiff[T any](dst, s0, next []T, eq func(a, b T) bool) (k int, head []T) {
	m := min(len(s0), len(next), maxKeep)
	pat, text := next[:m], s0[len(s0)-m:]
	// fail[i]: the longest proper prefix of pat[:i+1] that is also its suffix.
	var buf [64]int
	fail := buf[:0]
	if m > len(buf) {
		fail = make([]int, 0, m)
	}
	fail = fail[:m]
	for i, j := 1, 0; i < m; i++ {
		for j > 0 && !eq(pat[i], pat[j]) {
			j = fail[j-1]
		}
		if eq(pat[i], pat[j]) {
			j++
		}
		fail[i] = j
	}
	// j: the longest prefix of pat ending at text[i].
	j := 0
	for i := range text {
		for j > 0 && (j == m || !eq(text[i], pat[j])) {
			j = fail[j-1]
		}
		if eq(text[i], pat[j]) {
			j++
		}
	}
	return j, append(dst, s0[:len(s0)-j]...)
}

// startState is the State the last decision started from (start and
// State's first keep elements), in lists of its own; false when State no
// longer has them (changed outside Decide).
func (l *Decider) startState() (State, bool) {
	st := l.start
	var ok [4]bool
	st.Recommendations, ok[0] = joinStart(l.start.Recommendations, l.State.Recommendations, l.keep[0])
	st.ScaleUpEvents, ok[1] = joinStart(l.start.ScaleUpEvents, l.State.ScaleUpEvents, l.keep[1])
	st.ScaleDownEvents, ok[2] = joinStart(l.start.ScaleDownEvents, l.State.ScaleDownEvents, l.keep[2])
	st.Demand, ok[3] = joinStart(l.start.Demand, l.State.Demand, l.keep[3])
	return st, ok[0] && ok[1] && ok[2] && ok[3]
}

// maxKeep bounds Decider.keep.
const maxKeep = math.MaxUint16

func joinStart[T any](head, next []T, keep uint16) ([]T, bool) {
	if int(keep) > len(next) {
		return nil, false
	}
	return append(append([]T(nil), head...), next[:keep]...), true
}

// Restore sets the loop's memory from a saved state (a restart): desired is
// bounded by p.Bound at now and returned; current < 0 is unknown.
func (l *Decider) Restore(p *Policy, desired, current int, st State, now time.Time) int {
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

// heldZero keeps st.HeldZeroAt from a decision's reading r at now: zero
// when r reads current above 0 or held above 0; now when r reads current
// 0 and held 0 and it was zero (the first such decision of a stay at
// zero); kept otherwise (current not read, held unknown at zero, or held 0
// at zero again).
func heldZero(st *State, r Reading, now time.Time) {
	switch {
	case r.CurrentKnown && r.Obs.Current > 0 || r.Obs.Held > 0:
		st.HeldZeroAt = time.Time{}
	case st.HeldZeroAt.IsZero() && r.CurrentKnown && r.Obs.Current == 0 && r.Obs.Held == 0:
		st.HeldZeroAt = now
	}
}
