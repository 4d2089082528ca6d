package recommend

import "time"

// OutsideBounds is the HPA controller's first check (reconcileAutoscaler):
// a target whose current replicas are above maxReplicas is set to
// maxReplicas, and one below minReplicas (but not at 0, where the HPA does
// not scale) to minReplicas, at once, without reading a metric: no
// recommendation is recorded and no window or rate limit applies. As the
// controller does, current is recorded as the initial recommendation when
// st is fresh (recordInitial), and the change as a scale event. ok is
// false, and st unchanged, when current is within [Min, Max] or 0. It is
// for a loop that models the HPA itself (the replay's hpa(...)); Decide
// instead decides from the metrics and clamps the result.
func (p *Policy) OutsideBounds(st *State, cur int, now time.Time) (n int, ok bool) {
	p.prepare()
	switch {
	case cur > p.Max:
		n = p.Max
	case cur > 0 && cur < p.Min:
		n = p.Min
	default:
		return cur, false
	}
	dropFuture(st, now)
	recordInitial(st, cur, now)
	p.recordEvent(st, cur, n, now)
	st.LastDesired, st.LastAt = n, now
	return n, true
}
