package recommend

import "time"

// Resume prepares a restored State (decide --state, serve's state dir or
// rebuild) for decisions after a restart at now. The time the decider was
// down is unknown, so it counts as an outage holding the last output: held
// (the desired value exported before the restart) is recorded as a
// recommendation at now, and no scale-down below it happens until a full
// scaleDown window of fresh observations exists, as the HPA's
// recordInitialRecommendation gives after a controller restart. A scale-up
// is not held. The scale-to-zero idle clock starts over at now (activity
// while down is unknown). Entries dated after now are dropped first.
func Resume(st *State, held int, now time.Time) {
	dropFuture(st, now)
	st.Recommendations = append(st.Recommendations, TimedReplicas{At: now, Replicas: max(held, 0)})
	if st.LastActive.Before(now) {
		st.LastActive = now
	}
}
