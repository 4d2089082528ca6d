package recommend

import (
	"strings"
	"time"
)

// Decide computes the desired replicas for one observation at now and
// updates st: the HPA's algorithm plus lookahead, scale to zero and the
// schedule floor (docs/recommend.md, "The pipeline"). It never reads the
// clock and does no I/O. A nil st is a one-shot question: no history, and
// nothing recorded. now must not be before st.LastAt (callers refuse a
// clock that went back); entries dated after now are dropped.
func Decide(p *Policy, obs Observation, st *State, now time.Time) Decision {
	var d Decision
	decideInto(&d, p, obs, st, now, false)
	return d
}

// decideInto is Decide writing into d, its slices reused (Decider's, the
// replay's hot loop); quiet leaves d.Steps empty (Decider.Quiet). The
// pipeline itself is decide.
func decideInto(d *Decision, p *Policy, obs Observation, st *State, now time.Time, quiet bool) {
	d.quiet = quiet
	p.prepare()
	if st == nil {
		decide(d, p, obs, new(State), now, false)
		return
	}
	decide(d, p, obs, st, now, true)
	// What this output leaves coming, for the guard's next decision.
	st.Coming = max(0, d.Desired-present(obs))
}

// decide is the pipeline, one step per stage; stateful is false for a
// one-shot question (st is then a throwaway).
func decide(d *Decision, p *Policy, obs Observation, st *State, now time.Time, stateful bool) {
	initial := false
	if stateful {
		dropFuture(st, now)
		initial = recordInitial(st, obs.Current, now)
		if initial && p.Hold != nil {
			st.Inherited = obs.Current
		}
	}
	cur := max(obs.Current, 0)
	d.Current, d.Desired, d.Reason = obs.Current, cur, 0
	d.Raw, d.Steps = d.Raw[:0], d.Steps[:0]
	d.stage = StageMetric

	active, activityKnown := p.activity(obs, cur)
	trackIdle(st, active || (p.Min == 0 && !activityKnown), now)
	floor, byWindow := p.floor(now)

	// 1-2. per metric, the largest wins; the guard holds a ratio or backlog
	// metric while the capacity asked for earlier is coming (guard.go).
	base := p.base(st, cur, now)
	g := p.guard(st, obs, base, now, !d.quiet)
	rec, reason, valid, invalid := cur, Reason(0), 0, 0
	var unknown []string // the unknown metrics' signals, for the partial-data text
	for _, m := range p.Metrics {
		var r Raw
		var why Reason
		var text string
		if m.Signal == SignalDemand {
			r, why, text = p.demandRaw(m, obs, cur, st, now, !d.quiet)
		} else {
			r, why, text = rawFor(m, obs, cur, p.tol, !d.quiet)
			if n, capText, ok := p.latencyCap(m, r, obs, cur, st, now); ok {
				r.Desired, why = n, ReasonGuard
				if !d.quiet {
					text += "; " + capText
				}
			}
		}
		if g.holds(m.Signal) && r.Valid && r.Desired > g.at {
			r.Desired, why = g.at, ReasonGuard
			if !d.quiet {
				text += "; " + g.text + g.held(m.Signal) + ": hold " + itoa(r.Desired) + g.holdText()
			}
		}
		if !r.Valid {
			// An unknown metric recommends nothing and sets no count: its
			// step is unlabelled, as a stage that changed nothing. no-data
			// is the decision's reason only when no metric is known (the
			// hold below), never beside a metric that decided.
			why = 0
		}
		d.Raw = append(d.Raw, r)
		d.step(why, r.Desired, text)
		if r.Abstained {
			continue // neither a recommendation nor missing data
		}
		if !r.Valid {
			if !d.quiet {
				unknown = append(unknown, m.Signal.String())
			}
			invalid++
			continue
		}
		if valid == 0 || r.Desired > rec {
			rec, reason = r.Desired, why
		}
		valid++
	}
	if valid == 0 && cur > 0 {
		p.hold(d, st, base, cur, floor, byWindow, ReasonNoData, "no metric is known: keep "+itoa(base), now)
		return
	}
	// At zero replicas a metric that needs a pod (ttft) is unknown by
	// nature; held requests (step 5) still decide.
	if valid == 0 {
		rec = 0
	}
	if valid > 1 && !d.quiet {
		d.stage = StageLargest
		largest, _ := d.Raw.Largest()
		d.step(reason, rec, "largest of the metrics' recommendations = "+itoa(rec)+" ("+largest.String()+")")
	}

	// 3. lookahead on the first additive metric's demand.
	d.stage = StageLookahead
	if p.Lookahead > 0 && p.demandMetric >= 0 && d.Raw[p.demandMetric].Valid {
		la, text := p.lookahead(st, p.Metrics[p.demandMetric], d.Raw[p.demandMetric].Value, cur, now, !d.quiet)
		why := Reason(0) // a step is labelled only when it changed the count
		if la > rec {
			rec, reason, why = la, ReasonLookahead, ReasonLookahead
			text += ": raises the recommendation to " + itoa(rec)
		} else {
			text += ": not above the present " + itoa(rec)
		}
		d.step(why, rec, text)
	}

	// 4. missing data never scales down (HPA: "invalid metrics and we would
	// scale down": no change).
	if invalid > 0 && rec < base {
		p.hold(d, st, base, cur, floor, byWindow, ReasonPartialData, "partial data: "+strings.Join(unknown, ", ")+" unknown ("+itoa(invalid)+" of "+itoa(valid+invalid)+" metrics), no scale-down from "+itoa(base)+" to "+itoa(rec)+" on the others", now)
		return
	}

	// 5. at zero replicas.
	d.stage = StageZero
	if cur == 0 {
		switch {
		case !active && floor == 0 && !activityKnown:
			p.finish(d, st, 0, ReasonNoData, "held unknown at zero replicas: unknown is not \"no demand\", nothing to activate on; keep the floor min 0", now)
			return
		case !active && floor == 0:
			p.finish(d, st, 0, ReasonIdleToZero, "no requests held at zero replicas: stay at 0", now)
			return
		case active:
			// Labelled when it sets the count (on a tie too: it lifts the
			// target from zero); a metric asking for more keeps its reason.
			n, text := p.activation(obs)
			if n >= rec {
				rec, reason = n, ReasonActivate
				d.step(reason, rec, text)
			} else {
				d.step(0, rec, text+": not above the present "+itoa(rec))
			}
		}
	}

	// 6. stabilisation, from the previous output (see the doc comment).
	d.stage = StageStabilization
	baseAt := st.LastAt // before stabilize and finish record this decision
	out, text := p.stabilize(st, rec, base, now, !d.quiet)
	if base != cur && !d.quiet {
		text += p.baseText(base, cur, baseAt, now)
	}
	if initial && !d.quiet {
		if p.NoBehavior || p.upWindow > 0 || p.downWindow > 0 {
			text += " (the windows include the current " + itoa(obs.Current) + ", recorded at this first decision as the HPA's recordInitialRecommendation does)"
		} else { // a window excludes its start: 0 s windows hold nothing
			text += " (the current " + itoa(obs.Current) + ", recorded at this first decision as the HPA's recordInitialRecommendation does, is outside both 0s windows (a window excludes its start))"
		}
	}
	why := Reason(0)
	switch {
	case out > rec: // a higher recent recommendation holds a scale-down
		reason, why = ReasonScaleDownStabilized, ReasonScaleDownStabilized
	case out < rec:
		reason, why = ReasonScaleUpStabilized, ReasonScaleUpStabilized
	}
	d.step(why, out, text)

	// 6b. the cost-aware scale-down (hold.go).
	if p.Hold != nil {
		held, text := p.Hold.apply(st, rec, base, out, now, p.holdWatch(), p.late(obs), d.quiet)
		if held != out {
			out, reason = held, ReasonHold // it holds replicas a scale-down would release
			d.step(ReasonHold, out, text)
		} else if text != "" {
			d.step(0, out, text)
		}
	}

	// 7. rate limits, min/max, floors.
	b := bounds{lo: floor, hi: p.Max, loReason: ReasonMin, hiReason: ReasonMax, observed: cur}
	if !d.quiet {
		b.loText = "min " + itoa(floor)
	}
	if byWindow != nil {
		b.loReason = ReasonSchedule
		if !d.quiet {
			b.loWindow, b.loFloor, b.at = byWindow, floor, now
		}
	}
	zeroing := floor == 0
	if zeroing {
		// The last replica goes only by the cooldown (step 8), as under KEDA,
		// which keeps the HPA's minReplicas at 1.
		b.lo, b.loReason, b.loText, b.loWindow = 1, ReasonCooldown, "scale to zero: the last replica goes only after the cooldown, floor 1", nil
	}
	d.stage = StageLimits
	if limited, why, text := p.rateLimit(st, out, base, b, now); text != "" {
		if limited != out {
			out, reason = limited, why
		}
		d.step(why, out, text) // why is 0 when the limits did not bind: explained, unlabelled
	}
	if out < b.lo {
		out, reason = b.lo, b.loReason
		d.step(reason, out, b.lowText()+": raised to "+itoa(out))
	}
	if out > b.hi {
		out, reason = b.hi, ReasonMax
		d.step(reason, out, "max "+itoa(b.hi)+": lowered to "+itoa(out))
	}

	// 8. scale to zero after the cooldown.
	d.stage = StageZero
	if zeroing && cur > 0 && !activityKnown && out == 1 {
		reason = ReasonCooldown
		d.step(reason, out, "scale to zero: activity unknown (running, waiting or held): idleness is not known, keep 1")
	}
	if zeroing && cur > 0 && activityKnown && !active {
		idle, since := idleFor(st, now)
		if idle >= p.cooldown {
			p.finish(d, st, 0, ReasonIdleToZero, "scale to zero: idle "+age(idle)+" since "+since+" >= cooldown "+secs(p.cooldown)+": 0", now)
			return
		}
		if out == 1 {
			reason = ReasonCooldown
			d.step(reason, out, "scale to zero: idle "+age(idle)+" since "+since+" < cooldown "+secs(p.cooldown)+": keep 1")
		}
	}
	p.finish(d, st, out, reason, "", now)
}

// base is the replica count the HPA bookkeeping starts from: the previous
// output while it is recent, else the observed current.
func (p *Policy) base(st *State, cur int, now time.Time) int {
	horizon := max(p.upWindow, p.downWindow, p.upPeriod, p.downPeriod)
	if !st.LastAt.IsZero() && now.Sub(st.LastAt) <= horizon {
		return st.LastDesired
	}
	return cur
}

// baseText says where a base that is not the observed current comes from,
// for the stabilisation step whose min(max(base, ...)) starts from it and
// the rate limits after it: infscale's previous output base, decided at
// baseAt, recent enough to stand for the HPA's spec.replicas (see base).
func (p *Policy) baseText(base, cur int, baseAt, now time.Time) string {
	horizon := max(p.upWindow, p.downWindow, p.upPeriod, p.downPeriod)
	return "; " + itoa(base) + " is the base: the previous output, " + age(now.Sub(baseAt)) + " ago (within " + secs(horizon) +
		", the longest window or policy period), where the HPA's bookkeeping starts (spec.replicas), not the current " + itoa(cur)
}

// step appends a pipeline stage.
func (d *Decision) step(r Reason, v int, text string) {
	if d.quiet {
		return
	}
	d.Steps = append(d.Steps, Step{Stage: d.stage, Reason: r, Value: v, Text: text})
}

// hold finishes a decision that keeps base for want of data (no data,
// partial data) within [floor, max]: a max lowered or a floor raised since
// base was decided (a reload, a restored state, a schedule window) still
// applies, as at the end of the pipeline. The decision's reason stays the
// hold's; the bound is a step of its own.
func (p *Policy) hold(d *Decision, st *State, base, cur, floor int, byWindow *compiledWindow, reason Reason, text string, now time.Time) {
	d.stage = StageMissingData
	if base != cur && !d.quiet {
		text += p.baseText(base, cur, st.LastAt, now)
	}
	d.step(reason, base, text)
	d.stage = StageLimits
	out := base
	switch {
	case out > p.Max:
		out = p.Max
		d.step(ReasonMax, out, "max "+itoa(p.Max)+": lowered to "+itoa(out))
	case out < floor && byWindow != nil:
		out = floor
		if !d.quiet { // open searches the cron's last firing: only for the text
			d.step(ReasonSchedule, out, "schedule "+byWindow.text+" ("+byWindow.open(now)+") raises min to "+itoa(floor)+": raised to "+itoa(out))
		}
	case out < floor:
		out = floor
		d.step(ReasonMin, out, "min "+itoa(floor)+": raised to "+itoa(out))
	}
	p.finish(d, st, out, reason, "", now)
}

// finish sets the outcome, records the output change as a scale event and
// remembers it.
func (p *Policy) finish(d *Decision, st *State, out int, reason Reason, text string, now time.Time) {
	if text != "" {
		d.step(reason, out, text)
	}
	if reason == 0 {
		reason = ReasonMetric
	}
	d.Desired, d.Reason = out, reason
	prev := d.Current
	if !st.LastAt.IsZero() {
		prev = st.LastDesired
	}
	p.recordEvent(st, max(prev, 0), out, now)
	st.LastDesired, st.LastAt = out, now
}
