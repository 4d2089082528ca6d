package recommend

import (
	"math"
	"slices"
	"time"
)

// Ramp is one arrival trend the demand signal counted under Hold: the rate
// when it was first counted and the highest rate read within the
// lookahead after. The rises past ramps reached bound the next
// projection (rampCap).
type Ramp struct {
	At time.Time `json:"at"`
	// Rate is the arrival rate when the trend was counted and Seen the
	// highest read until At + the lookahead, both in requests/s.
	Rate float64 `json:"rate"`
	Seen float64 `json:"seen"`
	// Done is whether the lookahead has passed: Seen is final.
	Done bool `json:"done,omitempty"`
}

// MaxRamps is how many ramps the State keeps for Hold.
const MaxRamps = 32

// minRamps is how many finished ramps rampCap needs before it bounds a
// projection: fewer say too little of the traffic (a first ramp is
// projected in full).
const minRamps = 3

// rampCap updates st.Ramps with rate at now (a trend counted now, with no
// ramp open, opens one) and returns the most a counted trend may add to
// the rate over the lookahead, in requests/s: the q-quantile of the rises
// (Seen − Rate) of the finished ramps within the hold's memory, q =
// BreakEven / (BreakEven + the scale-down window). +Inf (no bound) with
// fewer than minRamps of them. A replica bought for a rise that does not
// come idles for the window; one not bought for a rise that comes costs a
// release wanted back, the break-even: the newsvendor's critical ratio of
// the two (docs/recommend.md, "The ramp cap").
func (p *Policy) rampCap(st *State, rate float64, now time.Time, counted bool) (limit float64, n int, q float64) {
	h := p.Hold
	st.Ramps = pruneOld(st.Ramps, now.Add(-time.Duration(DipHorizon)*h.BreakEven), func(r Ramp) time.Time { return r.At }, false)
	open := false
	var rises []float64
	for i := range st.Ramps {
		r := &st.Ramps[i]
		if !r.Done && now.Sub(r.At) > p.Lookahead {
			r.Done = true
		}
		if r.Done {
			rises = append(rises, max(0, r.Seen-r.Rate))
			continue
		}
		if known(rate) {
			r.Seen = max(r.Seen, rate)
		}
		open = true
	}
	b, w := h.BreakEven.Seconds(), p.downWindow.Seconds()
	q = b / (b + max(0, w))
	limit = math.Inf(1)
	if len(rises) >= minRamps {
		slices.Sort(rises)
		limit = rises[min(max(int(math.Ceil(q*float64(len(rises))))-1, 0), len(rises)-1)]
	}
	if counted && !open && known(rate) {
		if len(st.Ramps) >= MaxRamps {
			st.Ramps = st.Ramps[:copy(st.Ramps, st.Ramps[len(st.Ramps)-MaxRamps+1:])]
		}
		st.Ramps = append(st.Ramps, Ramp{At: now, Rate: rate, Seen: rate})
	}
	return limit, len(rises), q
}
