package recommend

import "time"

// stabilize is the HPA's stabilizeRecommendationWithBehaviors: the lowest
// recommendation within the scaleUp window and the highest within the
// scaleDown window (both including rec, windows exclusive of their start)
// bound base (the previous output, see Decide): result = min(max(base,
// upRec), downRec). rec is then
// recorded; entries older than the longer window are pruned. The text is
// built only when explain is set (a quiet decision drops it).
func (p *Policy) stabilize(st *State, rec, base int, now time.Time, explain bool) (int, string) {
	if p.NoBehavior {
		return p.stabilizeNoBehavior(st, rec, now, explain)
	}
	upCutoff, downCutoff := now.Add(-p.upWindow), now.Add(-p.downWindow)
	upRec, downRec := rec, rec
	for _, r := range st.Recommendations {
		if r.At.After(upCutoff) {
			upRec = min(upRec, r.Replicas)
		}
		if r.At.After(downCutoff) {
			downRec = max(downRec, r.Replicas)
		}
	}
	out := base
	if out < upRec {
		out = upRec
	}
	if out > downRec {
		out = downRec
	}
	st.Recommendations = pruneOld(st.Recommendations, now.Add(-max(p.upWindow, p.downWindow)), recAt, false)
	st.Recommendations = append(st.Recommendations, TimedReplicas{At: now, Replicas: rec})
	if !explain {
		return out, ""
	}
	// rec, just recorded, is on the other side of out: never the holder.
	held := ""
	switch {
	case out > rec:
		held = heldUntil(st.Recommendations, downCutoff, p.downWindow, now, out, true)
	case out < rec:
		held = heldUntil(st.Recommendations, upCutoff, p.upWindow, now, out, false)
	}
	text := "stabilisation: lowest recommendation in the scaleUp window " + secs(p.upWindow) + " = " + itoa(upRec) +
		", highest in the scaleDown window " + secs(p.downWindow) + " = " + itoa(downRec) +
		"; min(max(" + itoa(base) + ", " + itoa(upRec) + "), " + itoa(downRec) + ") = " + itoa(out) + held
	return out, text
}

// heldUntil says which recorded recommendation holds a stabilised output
// out and when it leaves its window (recorded at a, it is inside while
// a > now − window), so a reader knows how long the hold lasts and which
// setting sets it: on a scale-down (down) the last one of out or more in
// the scaleDown window, on a scale-up the last one of out or fewer in the
// scaleUp window. Only the text: the arithmetic is stabilize's.
func heldUntil(recs []TimedReplicas, cutoff time.Time, window time.Duration, now time.Time, out int, down bool) string {
	var last time.Time
	for _, r := range recs {
		if r.At.After(cutoff) && (down && r.Replicas >= out || !down && r.Replicas <= out) && r.At.After(last) {
			last = r.At
		}
	}
	if last.IsZero() {
		return ""
	}
	what, field := " or more", "scaleDown"
	if !down {
		what, field = " or fewer", "scaleUp"
	}
	return "; held: the last recommendation of " + itoa(out) + what + ", " + age(now.Sub(last)) + " ago, leaves the " +
		secs(window) + " window in " + age(last.Add(window).Sub(now)) + " (behavior." + field + ".stabilizationWindowSeconds)"
}

// recordInitial is the HPA's recordInitialRecommendation: when the
// controller first sees an HPA it records the target's replicas as a
// recommendation at now, before computing anything, so a scale-down right
// after the controller starts is held by the scaleDown window (and a
// scale-up by a scaleUp window > 0) as if current had been recommended all
// along. infscale's "first sight" is a state with no recommendation and no
// previous decision; cur is recorded when known (> 0: at zero there is no
// spec to hold, and KEDA, not the HPA, activates). It reports whether it
// recorded. A window excludes its start, so with a 0 s window the entry at
// now is outside it and changes nothing.
func recordInitial(st *State, cur int, now time.Time) bool {
	if len(st.Recommendations) > 0 || !st.LastAt.IsZero() || cur <= 0 {
		return false
	}
	st.Recommendations = append(st.Recommendations, TimedReplicas{At: now, Replicas: cur})
	return true
}

// stabilizeNoBehavior is the HPA's stabilizeRecommendation (an HPA without
// behavior): the highest recommendation within the downscale window, its
// start included, and rec itself, whatever the previous output; rec is
// then recorded, entries before the window's start pruned.
func (p *Policy) stabilizeNoBehavior(st *State, rec int, now time.Time, explain bool) (int, string) {
	cutoff := now.Add(-p.downWindow)
	out := rec
	// This window counts its start: the HPA without behavior skips only
	// recommendations before its cut-off.
	st.Recommendations = pruneOld(st.Recommendations, cutoff, recAt, true)
	for _, r := range st.Recommendations {
		out = max(out, r.Replicas)
	}
	st.Recommendations = append(st.Recommendations, TimedReplicas{At: now, Replicas: rec})
	if !explain {
		return out, ""
	}
	return out, "stabilisation (an HPA without behavior): highest recommendation in the downscale window " + secs(p.downWindow) + " and " + itoa(rec) + " = " + itoa(out)
}
