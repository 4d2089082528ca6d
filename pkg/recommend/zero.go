package recommend

import "time"

// activity reports whether the observation shows requests (running, waiting
// or held > 0) and whether that is known at all. The activity signals are
// running and waiting (with replicas) and, when the policy scales to zero
// (Min 0, where the held count is read), held: an unknown held count is
// unknown activity, never "no demand". At zero replicas only held requests
// can show activity, and only a known 0 is known idleness.
func (p *Policy) activity(obs Observation, cur int) (active, isKnown bool) {
	if orZero(obs.Held) > 0 {
		return true, true
	}
	heldKnown := p.Min > 0 || known(obs.Held)
	if cur == 0 {
		return false, heldKnown
	}
	if (known(obs.Running) && obs.Running > 0) || (known(obs.Waiting) && obs.Waiting > 0) {
		return true, true
	}
	return false, known(obs.Running) && known(obs.Waiting) && heldKnown
}

// trackIdle updates the idle bookkeeping with KEDA's semantics: idle time
// counts from the last observed activity, or from the first observation when
// there was none, so a fresh start never drops to zero at once. active is
// true for an observation with activity and, with scale to zero, for one
// whose activity is unknown: the last step to zero needs every activity
// signal known and idle for the whole cooldown.
func trackIdle(st *State, active bool, now time.Time) {
	if st.FirstSeen.IsZero() {
		st.FirstSeen = now
	}
	if active {
		st.LastActive = now
	}
}

// idleFor is how long the target has been idle at now, and since what.
func idleFor(st *State, now time.Time) (time.Duration, string) {
	if !st.LastActive.IsZero() {
		return now.Sub(st.LastActive), "the last activity or unknown reading"
	}
	return now.Sub(st.FirstSeen), "the first observation"
}

// activation is how many replicas held requests at zero ask for: at least
// 1, and ceil(held/target) for the first additive metric's target, so a
// large backlog asks for more at once.
func (p *Policy) activation(obs Observation) (int, string) {
	held := orZero(obs.Held)
	if p.demandMetric < 0 {
		return 1, "activate: held " + num(held) + " at zero replicas: 1"
	}
	t := p.Metrics[p.demandMetric].Target
	n := max(1, ceilReplicas(held/t))
	return n, "activate: held " + num(held) + " at zero replicas: max(1, ceil(" + num(held) + " / " + num(t) + ")) = " + countOnly(max(1, held/t))
}
