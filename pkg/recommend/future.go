package recommend

import (
	"slices"
	"time"
)

// dropFuture removes what the state holds for later than now: the
// recommendations, scale events and demand samples dated after now, and it
// brings FirstSeen and LastActive after now back to now. The HPA only ever
// records at its own now, so its history never lies ahead of it; a state
// file can (nodes sharing a state volume with a clock difference, a clock
// stepped back, a hand-written file). Counted as they are, such entries sit
// "inside" every window and period until the clock catches up (a
// recommendation dated 2099 would pin the scaleDown window's highest for
// ever) and pruning, which drops from the old end, never reaches them. So
// they are ignored and dropped, in place, keeping the lists' order.
// A future LastActive (or FirstSeen) is read as activity at now: idle time
// restarts rather than counting from an unknown instant.
func dropFuture(st *State, now time.Time) {
	st.Recommendations = dropAfter(st.Recommendations, now, func(r TimedReplicas) time.Time { return r.At })
	// The scale events are in slot order (recordEvent): each is checked.
	st.ScaleUpEvents = slices.DeleteFunc(st.ScaleUpEvents, func(e ScaleEvent) bool { return e.At.After(now) })
	st.ScaleDownEvents = slices.DeleteFunc(st.ScaleDownEvents, func(e ScaleEvent) bool { return e.At.After(now) })
	st.Demand = dropAfter(st.Demand, now, func(d DemandSample) time.Time { return d.At })
	st.Work = dropAfter(st.Work, now, func(d DemandSample) time.Time { return d.At })
	st.Arrivals = dropAfter(st.Arrivals, now, func(d DemandSample) time.Time { return d.At })
	st.RatePeaks = dropAfter(st.RatePeaks, now, func(d DemandSample) time.Time { return d.At })
	st.Ramps = dropAfter(st.Ramps, now, func(r Ramp) time.Time { return r.At })
	// Dips are in the order they ended, when each was recorded: one that
	// started before now may end after it.
	st.Dips = dropAfter(st.Dips, now, Dip.end)
	if d := st.OpenDip; d != nil && d.At.After(now) {
		st.OpenDip = nil
	} else if d != nil && len(d.Lows) > 0 {
		// Lows reached after now go; the floor is the last one left.
		if d.Lows = dropAfter(d.Lows, now, func(l DipLow) time.Time { return l.At }); len(d.Lows) > 0 {
			d.Floor = d.Lows[len(d.Lows)-1].Floor
		}
	}
	if st.ReadyAt.After(now) {
		st.ReadyAt = now
	}
	if st.FirstSeen.After(now) {
		st.FirstSeen = now
	}
	if st.LastActive.After(now) {
		st.LastActive = now
	}
	if st.HeldZeroAt.After(now) {
		st.HeldZeroAt = now
	}
}

// dropAfter keeps the entries of s dated at or before now, in order,
// reusing the backing array. The lists are oldest first by at (Decide
// appends at now; State.Validate refuses other orders; dips by their end),
// so a last entry not after now means there is nothing to drop: the usual
// case costs one comparison.
func dropAfter[T any](s []T, now time.Time, at func(T) time.Time) []T {
	if len(s) == 0 || !at(s[len(s)-1]).After(now) {
		return s
	}
	k := 0
	for _, e := range s {
		if !at(e).After(now) {
			s[k] = e
			k++
		}
	}
	return s[:k]
}
