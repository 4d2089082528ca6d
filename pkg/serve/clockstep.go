package serve

import (
	"time"

	"github.com/infscale/infscale/internal/wallclock"
	"github.com/infscale/infscale/pkg/recommend"
)

// wallSkew is how far the wall clock has been stepped since the first
// cycle (its change beyond the monotonic clock's), 0 within a second. The
// loop decides on the monotonic clock (time.Now's reading), but the state
// file holds wall times: after a step back, entries recorded before it
// would be dated after later ones and after last_at, which the file's
// reader refuses (statefile), so the restart would start fresh. Called
// with cycleMu held.
func (l *Loop) wallSkew(now time.Time) time.Duration {
	if l.clockBase.IsZero() {
		l.clockBase = now
		return 0
	}
	skew := wallclock.Jump(l.clockBase, now)
	if skew > -time.Second && skew < time.Second {
		return 0
	}
	return skew
}

// rebaseWall returns a copy of st whose times are dated by now's wall
// clock: a time with a monotonic reading at now minus its monotonic age, a
// time without (restored from a file, dated by the wall clock of then)
// moved by skew. Orders and durations are those the loop decided on.
func rebaseWall(st recommend.State, now time.Time, skew time.Duration) recommend.State {
	wall := now.Round(0)
	return mapTimes(st, func(t time.Time) time.Time {
		switch {
		case t.IsZero():
			return t
		case t == t.Round(0): // no monotonic reading
			return t.Add(skew)
		}
		return wall.Add(-now.Sub(t))
	})
}

// onMonotonic returns a copy of st, restored at now from a file or a
// rebuild (wall times), whose times carry now's monotonic reading, each
// as old as its wall time says: the loop then ages them on the monotonic
// clock as it does its own. Left as wall times, a clock stepped after the
// restart aged them by the step: an hour forward and the scale events
// restored (a rate-limit period's) had all left their periods, an hour's
// step back and they lay ahead of now until the clock caught up.
func onMonotonic(st recommend.State, now time.Time) recommend.State {
	wall := now.Round(0)
	return mapTimes(st, func(t time.Time) time.Time {
		if t.IsZero() || t != t.Round(0) {
			return t
		}
		return now.Add(t.Sub(wall))
	})
}

// mapTimes returns a copy of st with every time passed through at (the
// lists copied, st's left as they were).
func mapTimes(st recommend.State, at func(time.Time) time.Time) recommend.State {
	each := func(n int, f func(int)) {
		for i := range n {
			f(i)
		}
	}
	st.Recommendations = append([]recommend.TimedReplicas(nil), st.Recommendations...)
	each(len(st.Recommendations), func(i int) { st.Recommendations[i].At = at(st.Recommendations[i].At) })
	st.ScaleUpEvents = append([]recommend.ScaleEvent(nil), st.ScaleUpEvents...)
	each(len(st.ScaleUpEvents), func(i int) { st.ScaleUpEvents[i].At = at(st.ScaleUpEvents[i].At) })
	st.ScaleDownEvents = append([]recommend.ScaleEvent(nil), st.ScaleDownEvents...)
	each(len(st.ScaleDownEvents), func(i int) { st.ScaleDownEvents[i].At = at(st.ScaleDownEvents[i].At) })
	for _, l := range []*[]recommend.DemandSample{&st.Demand, &st.Work, &st.Arrivals, &st.RatePeaks} {
		*l = append([]recommend.DemandSample(nil), *l...)
		each(len(*l), func(i int) { (*l)[i].At = at((*l)[i].At) })
	}
	st.Ramps = append([]recommend.Ramp(nil), st.Ramps...)
	each(len(st.Ramps), func(i int) { st.Ramps[i].At = at(st.Ramps[i].At) })
	st.Dips = append([]recommend.Dip(nil), st.Dips...)
	each(len(st.Dips), func(i int) { st.Dips[i].At = at(st.Dips[i].At) })
	if d := st.OpenDip; d != nil {
		c := *d
		c.At = at(c.At)
		c.Lows = append([]recommend.DipLow(nil), c.Lows...)
		each(len(c.Lows), func(i int) { c.Lows[i].At = at(c.Lows[i].At) })
		st.OpenDip = &c
	}
	st.FirstSeen, st.LastActive, st.LastAt, st.ReadyAt, st.HeldZeroAt = at(st.FirstSeen), at(st.LastActive), at(st.LastAt), at(st.ReadyAt), at(st.HeldZeroAt)
	return st
}
