package recommend

import (
	"math"
	"strconv"
	"time"
)

// Hold is infscale's cost-aware scale-down (not part of the HPA): a
// break-even (ski-rental) rule over the dips the target's own history
// shows.
//
// A dip starts at a decision whose recommendation (after the lookahead,
// before stabilisation) is below the previous output, the replicas held
// (From); its floor is the lowest recommendation since. It returns at the
// first decision whose recommendation is above the floor: the replicas a
// release would have given back are wanted again, after g seconds, up to
// the recommendation then but at most From (more is new demand, such as a
// ramp's projection, not replicas the dip gave back). A dip
// that has not returned after DipHorizon × BreakEven is recorded as not
// returned. The last MaxDips dips are kept in the State.
//
// Releasing a replica at the dip's start and adding it back when the dip
// returns costs BreakEven (the new replica's cold start, paid while it
// starts, and the time the returning traffic runs short of it); keeping it
// costs the dip's length. Holding for T seconds, then releasing, costs on
// a dip of length g
//
//	g            if it returned and g <= T   (held throughout)
//	T + B        if it returned and g > T    (held T, released, added back)
//	T            if it did not return        (held T, released for good)
//
// The threshold T* is the T in {0} ∪ {the returned dips' lengths} with the
// least total cost over the history (the smallest on a tie): 0, the HPA's
// behavior, until the history shows dips that come back sooner than a
// release pays for. While a dip is open for less than T*, the output is
// held at its From, or at the most the dips that returned within T* came
// back to (Back) when that is less. With no history T* is 0.
type Hold struct {
	// BreakEven is B above: what a released replica that is wanted again
	// costs, in seconds of one replica (> 0). `recommended` sets it to twice
	// the replica's cold start.
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
