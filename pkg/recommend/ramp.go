package recommend

import (
	"math"
	"slices"
	"strconv"
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
// the two (docs/recommend.md, "The ramp cap"). rises are the finished
// ramps' rises, sorted (for the text).
func (p *Policy) rampCap(st *State, rate float64, now time.Time, counted bool) (limit float64, rises []float64, q float64) {
	h := p.Hold
	st.Ramps = pruneOld(st.Ramps, now.Add(-time.Duration(DipHorizon)*h.BreakEven), func(r Ramp) time.Time { return r.At }, false)
	open := false
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
	return limit, rises, q
}

// rampCapText says how rampCap's limit came from the rises (sorted): the
// q-quantile is the ceil(q × n)-th smallest, q = B / (B + W).
func (p *Policy) rampCapText(limit float64, rises []float64, q float64) string {
	n := len(rises)
	i := min(max(int(math.Ceil(q*float64(n))), 1), n)
	b := make([]byte, 0, 160+8*min(n, maxListed))
	b = append(b, ", capped at a rise of "...)
	b = appendNum(b, limit)
	b = append(b, " req/s (the "...)
	b = appendNum(b, q)
	b = append(b, " quantile of the last "...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, " ramps' rises: the ceil("...)
	b = appendNum(b, q)
	b = append(b, " × "...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, ") = "...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, ordinal(i)...)
	b = append(b, " smallest of "...)
	if n > maxListed { // the list is sorted: elide the middle around the quantile
		b = append(b, "(sorted, "...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, " in all) "...)
		lo := min(max(i-1-maxListed/2, 0), n-maxListed)
		rises = rises[lo : lo+maxListed]
	}
	for j, r := range rises {
		if j > 0 {
			b = append(b, ", "...)
		}
		b = appendNum(b, r)
	}
	b = append(b, " req/s; q = B "...)
	b = appendNum(b, p.Hold.BreakEven.Seconds())
	b = append(b, " s / (B + the scale-down window "...)
	b = appendNum(b, p.downWindow.Seconds())
	b = append(b, " s))"...)
	return string(b)
}

// ordinal is the English suffix of the ordinal i: "st", "nd", "rd", "th".
func ordinal(i int) string {
	switch {
	case i%100 >= 11 && i%100 <= 13:
		return "th"
	case i%10 == 1:
		return "st"
	case i%10 == 2:
		return "nd"
	case i%10 == 3:
		return "rd"
	}
	return "th"
}
