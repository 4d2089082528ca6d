package recommend

import (
	"math"
	"strconv"
	"time"
)

// Hold is infscale's cost-aware scale-down (not part of the HPA): a
// break-even (ski-rental) rule over the dips the target's own history
// shows. A dip runs from a recommendation below the previous output (From)
// to the first one above its floor (returned, Back = min(that, From)), or
// is recorded as not returned after DipHorizon × BreakEven. The threshold
// T* is the hold time that would have cost least over the recorded dips
// (a returned dip longer than T costs T + BreakEven, a shorter one its
// length, one that did not return T); while the open dip is younger than
// T*, the output is held at the most the dips within T* came back to, at
// most From. No history, or dips that do not come back: T* is 0, the
// HPA's behavior. docs/recommend.md ("The cost-aware hold") works it.
type Hold struct {
	// BreakEven is what a released replica that is wanted again costs, in
	// seconds of one replica (> 0); `recommended` sets it to two cold
	// starts (the replica's own, and the traffic's short of it).
	BreakEven time.Duration
}

// MaxDips is how many dips the State keeps for Hold.
const MaxDips = 64

// DipHorizon is how many BreakEvens a dip may stay open before it is
// recorded as not returned.
const DipHorizon = 10

// Dip is one recorded dip (Hold).
type Dip struct {
	// At is when it started.
	At time.Time `json:"at"`
	// Seconds is how long it lasted: until it returned, or DipHorizon ×
	// BreakEven when it did not.
	Seconds float64 `json:"seconds"`
	// Returned is whether the recommendation rose above its floor again;
	// Back is the recommendation at the return, at most the dip's From.
	Returned bool `json:"returned"`
	Back     int  `json:"back,omitempty"`
}

// OpenDip is the dip in progress (Hold).
type OpenDip struct {
	// At is when it started; From the output held then; Floor the lowest
	// recommendation since.
	At    time.Time `json:"at"`
	From  int       `json:"from"`
	Floor int       `json:"floor"`
}

// trackDip updates st's dips with this decision's recommendation rec, the
// previous output base (valid when the state has a previous decision).
func (h *Hold) trackDip(st *State, rec, base int, now time.Time) {
	if d := st.OpenDip; d != nil {
		g := now.Sub(d.At).Seconds()
		switch {
		case rec > d.Floor:
			st.addDip(Dip{At: d.At, Seconds: g, Returned: true, Back: min(rec, d.From)})
			st.OpenDip = nil
		case g > DipHorizon*h.BreakEven.Seconds():
			st.addDip(Dip{At: d.At, Seconds: g})
			st.OpenDip = nil
		default:
			d.Floor = min(d.Floor, rec)
			return
		}
	}
	if !st.LastAt.IsZero() && rec < base {
		st.OpenDip = &OpenDip{At: now, From: base, Floor: rec}
	}
}

func (st *State) addDip(d Dip) {
	if len(st.Dips) >= MaxDips {
		st.Dips = st.Dips[:copy(st.Dips, st.Dips[len(st.Dips)-MaxDips+1:])]
	}
	st.Dips = append(st.Dips, d)
}

// threshold is T* over st.Dips and its cost against releasing at once.
func (h *Hold) threshold(dips []Dip) (best, bestCost, zeroCost float64, returned int) {
	b := h.BreakEven.Seconds()
	cost := func(T float64) float64 {
		c := 0.0
		for _, d := range dips {
			switch {
			case !d.Returned:
				c += math.Min(T, d.Seconds)
			case d.Seconds <= T:
				c += d.Seconds
			default:
				c += T + b
			}
		}
		return c
	}
	zeroCost = cost(0)
	best, bestCost = 0, zeroCost
	for _, d := range dips {
		if !d.Returned {
			continue
		}
		returned++
		if c := cost(d.Seconds); c < bestCost || (c == bestCost && d.Seconds < best) {
			best, bestCost = d.Seconds, c
		}
	}
	return best, bestCost, zeroCost, returned
}

// apply tracks the dip and holds out (the stabilised output) at the open
// dip's From while the dip is younger than T*. It returns the output and
// the step's text ("" when there is no dip to explain).
func (h *Hold) apply(st *State, rec, base, out int, now time.Time, quiet bool) (int, string) {
	h.trackDip(st, rec, base, now)
	d := st.OpenDip
	if d == nil || out >= d.From {
		return out, ""
	}
	T, cT, c0, n := h.threshold(st.Dips)
	age := now.Sub(d.At).Seconds()
	// Hold no more than the dips that came back within T* came back to.
	level := 0
	for _, x := range st.Dips {
		if x.Returned && x.Seconds <= T {
			level = max(level, x.Back)
		}
	}
	level = min(level, d.From)
	held := age < T && level > out
	if quiet {
		if held {
			return level, ""
		}
		return out, ""
	}
	text := "hold: " + strconv.Itoa(len(st.Dips)) + " dips recorded (" + strconv.Itoa(n) + " returned), break-even " + secs(h.BreakEven) +
		"; threshold T* = " + num(T) + " s (cost over the history " + num(cT) + " s against " + num(c0) + " s releasing at once)" +
		"; dip from " + itoa(d.From) + " open " + num(age) + " s"
	if held {
		return level, text + " < " + num(T) + " s: hold " + itoa(level) + " (the most the dips within T* came back to, at most " + itoa(d.From) + ")"
	}
	return out, text + " >= " + num(T) + " s: release to " + itoa(out)
}

// peakBuckets is how many buckets the recent arrival-rate peak is kept in
// over the hold's memory (DipHorizon × BreakEven).
const peakBuckets = 12

// recentPeak is the highest arrival rate recorded in st.RatePeaks within
// the hold's memory before now; then it records rate at now (the highest
// per bucket of the memory / peakBuckets).
func (h *Hold) recentPeak(st *State, rate float64, now time.Time) (peak float64, ok bool) {
	span := time.Duration(DipHorizon) * h.BreakEven
	st.RatePeaks = pruneOld(st.RatePeaks, now.Add(-span), sampleAt, false)
	for _, s := range st.RatePeaks {
		if s.At.Before(now) {
			peak, ok = max(peak, s.Demand), true
		}
	}
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 {
		return peak, ok
	}
	if n := len(st.RatePeaks); n > 0 && now.Sub(st.RatePeaks[n-1].At) < span/peakBuckets {
		st.RatePeaks[n-1].Demand = max(st.RatePeaks[n-1].Demand, rate)
	} else {
		st.RatePeaks = append(st.RatePeaks, DemandSample{At: now, Demand: rate})
	}
	return peak, ok
}
