package recommend

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// Hold is infscale's cost-aware scale-down (not part of the HPA): a
// break-even (ski-rental) rule per replica over the dips the target's own
// history shows. A dip starts at a recommendation below the previous
// output (From) and releases replica k of Floor+1..From (Floor its lowest
// recommendation) at the first recommendation below k; replica k is wanted
// back at the first recommendation at k or above after that (a return to
// fewer than From records the replicas it reaches and keeps the others'
// releases open), and not wanted back when the dip stays open DipHorizon ×
// BreakEven. One Dip is recorded per low and return. Replica k's
// threshold T*(k) is the hold time that would have cost least over the
// dips that released it (wanted back after g: g if held through, T +
// BreakEven if not; not wanted back: T). While a dip is open, each
// replica whose T* its release's age has not reached is kept. No
// history, or dips that do not come back: T* is 0, the HPA's behavior.
// docs/recommend.md ("The cost-aware hold") works it.
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
	// Returned is whether the recommendation reached the dip's From again
	// (the replicas Floor+1..From wanted back); Back is the highest replica
	// wanted back: From when it returned (a state written before returns
	// were read a replica at a time may hold less: the replicas above it
	// count as not wanted back).
	Returned bool `json:"returned"`
	Back     int  `json:"back,omitempty"`
	// From is the output held when it started and Floor the lowest
	// recommendation in it: the dip released the replicas Floor+1..From.
	// 0 and 0 (a state written before they were kept): every replica.
	From  int `json:"from,omitempty"`
	Floor int `json:"floor,omitempty"`
	// Missed is whether, after it returned, a latency metric read above
	// its target before the replicas asked for at the return could serve
	// (the return's watch): its release cost misses, not only replica
	// time.
	Missed bool `json:"missed,omitempty"`
}

// releases reports whether the dip released replica k (the k-th of the
// fleet), and whether k was wanted again when it returned.
func (d Dip) releases(k int) (released, back bool) {
	released = d.From == 0 && d.Floor == 0 || d.Floor < k && k <= d.From
	return released, released && d.Returned && d.Back >= k
}

// OpenDip is the dip in progress (Hold).
type OpenDip struct {
	// At is when it started; From the output held then; Floor the lowest
	// recommendation since.
	At    time.Time `json:"at"`
	From  int       `json:"from"`
	Floor int       `json:"floor"`
	// Lows are the recommendation's lows in it, oldest first: the first
	// at At, each later one below the one before, the last at Floor.
	// Replica k's release starts at the first low below k. Empty (a state
	// written before they were kept): one low, Floor at At.
	Lows []DipLow `json:"lows,omitempty"`
}

// DipLow is a low of an open dip's recommendation (OpenDip.Lows): Floor,
// first reached at At.
type DipLow struct {
	At    time.Time `json:"at"`
	Floor int       `json:"floor"`
}

// lows are d's lows (OpenDip.Lows, or Floor at At when there are none).
func (d *OpenDip) lows() []DipLow {
	if len(d.Lows) == 0 {
		return []DipLow{{At: d.At, Floor: d.Floor}}
	}
	return d.Lows
}

// since is when replica k's release in d started: the first low below k.
func (d *OpenDip) since(k int) time.Time {
	for _, l := range d.lows() {
		if l.Floor < k {
			return l.At
		}
	}
	return d.At
}

// expire adds d to st's dips as not returned, one dip per low, each
// releasing the replicas from the low before (From for the first) down to
// its own, from when it was reached to now.
func (d *OpenDip) expire(st *State, now time.Time) {
	from := d.From
	for _, l := range d.lows() {
		st.addDip(Dip{At: l.At, Seconds: now.Sub(l.At).Seconds(), From: from, Floor: l.Floor})
		from = l.Floor
	}
}

// returnTo records the replicas up to rec (at most From) of d as wanted
// back now, each part from the low that released it, and keeps d's lows
// for those above rec: a recommendation that climbs back a replica at a
// time wants each one back when it reaches it, not when it first rises.
// The caller drops d once rec reaches From.
func (d *OpenDip) returnTo(st *State, now time.Time, rec int, late bool) {
	from := d.From
	var lows []DipLow
	for _, l := range d.lows() {
		if l.Floor >= rec {
			lows = append(lows, l)
			from = l.Floor
			continue
		}
		if len(lows) == 0 || lows[len(lows)-1].Floor > rec {
			lows = append(lows, DipLow{At: l.At, Floor: rec})
		}
		top := min(from, rec)
		st.addDip(Dip{At: l.At, Seconds: now.Sub(l.At).Seconds(), From: top, Floor: l.Floor, Returned: true, Back: top, Missed: late})
		from = l.Floor
	}
	d.Lows, d.Floor, d.At = lows, rec, lows[0].At
}

// trackDip updates st's dips with this decision's recommendation rec and
// the previous output base (valid when the state has a previous
// decision); over watch after a dip's return, a latency read above its
// target (late) marks the dip Missed.
func (h *Hold) trackDip(st *State, rec, base int, now time.Time, watch time.Duration, late bool) {
	if n := len(st.Dips); n > 0 && st.Dips[n-1].Returned {
		end := st.Dips[n-1].end()
		for i := n - 1; i >= 0 && now.Sub(end) <= watch && st.Dips[i].Returned && st.Dips[i].end().Equal(end); i-- {
			st.Dips[i].Missed = st.Dips[i].Missed || late
		}
	}
	if d := st.OpenDip; d != nil {
		g := now.Sub(d.At).Seconds()
		switch {
		case rec > d.Floor:
			d.returnTo(st, now, min(rec, d.From), late)
			if rec < d.From {
				return
			}
			st.OpenDip = nil
		case g > DipHorizon*h.BreakEven.Seconds():
			d.expire(st, now)
			st.OpenDip = nil
		default:
			if rec < d.Floor {
				d.Lows = append(d.lows(), DipLow{At: now, Floor: rec})
				d.Floor = rec
			}
			return
		}
	}
	if !st.LastAt.IsZero() && rec < base {
		st.OpenDip = &OpenDip{At: now, From: base, Floor: rec}
	}
}

// end is when the dip ended.
func (d Dip) end() time.Time {
	return d.At.Add(time.Duration(d.Seconds * float64(time.Second)))
}

func (st *State) addDip(d Dip) {
	if len(st.Dips) >= MaxDips {
		st.Dips = st.Dips[:copy(st.Dips, st.Dips[len(st.Dips)-MaxDips+1:])]
	}
	st.Dips = append(st.Dips, d)
}

// threshold is T* for replica k over dips: the hold of least cost over
// the dips that released k (a dip that returned below k counts as one
// that did not return), the smallest on a tie; and that cost, the cost of
// releasing at once, and how many dips released k and how many wanted it
// again.
func (h *Hold) threshold(dips []Dip, k int) (best, bestCost, zeroCost float64, released, back int) {
	b := h.BreakEven.Seconds()
	cost := func(T float64) float64 {
		c := 0.0
		for _, d := range dips {
			switch rel, ret := d.releases(k); {
			case !rel:
			case !ret && !d.Returned:
				c += math.Min(T, d.Seconds)
			case !ret:
				c += T // the dip ended, replica k was not wanted again
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
	missed := 0.0 // the longest dip whose release of k cost misses
	for _, d := range dips {
		rel, ret := d.releases(k)
		if rel {
			released++
		}
		if !ret {
			continue
		}
		back++
		if d.Missed {
			missed = max(missed, d.Seconds)
		}
		if c := cost(d.Seconds); c < bestCost || (c == bestCost && d.Seconds < best) {
			best, bestCost = d.Seconds, c
		}
	}
	if missed > best {
		// A release the returning traffic missed on is not priced in
		// replica time: hold through any dip up to that one's length.
		best, bestCost = missed, cost(missed)
	}
	return best, bestCost, zeroCost, released, back
}

// dipsText lists, for the hold step, what each recorded dip that released
// replica k contributes to cost_k(T), so T* recomputes by hand
// (docs/recommend.md, "The cost-aware hold"): "back after g s" (g if g <=
// T, else T + B; ", missed" when its return missed the target: T* is at
// least its g), "never back in g s" (min(T, g)) or "back below k" (T). The
// newest maxListed; older ones counted.
func dipsText(dips []Dip, k int) string {
	b := make([]byte, 0, 64)
	listed, skip := 0, 0
	for _, d := range dips {
		if rel, _ := d.releases(k); rel {
			listed++
		}
	}
	skip, listed = max(0, listed-maxListed), 0
	if skip > 0 {
		b = strconv.AppendInt(b, int64(skip), 10)
		b = append(b, " older not listed, "...)
	}
	for _, d := range dips {
		rel, ret := d.releases(k)
		if !rel {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if listed > 0 {
			b = append(b, ", "...)
		}
		listed++
		switch {
		case ret:
			b = append(b, "back after "...)
			b = appendNum(b, d.Seconds)
			b = append(b, " s"...)
			if d.Missed {
				b = append(b, ", missed"...)
			}
		case !d.Returned:
			b = append(b, "never back in "...)
			b = appendNum(b, d.Seconds)
			b = append(b, " s"...)
		default:
			b = append(b, "back below "...)
			b = strconv.AppendInt(b, int64(k), 10)
		}
	}
	return string(b)
}

// apply tracks the dip and, while it is open, holds each replica k of
// the dip's out+1..From whose threshold T*(k) the age of its release
// (from the dip's first low below k) has not reached: the output is out
// plus those. It returns the output and the
// step's text ("" when there is no dip to explain).
func (h *Hold) apply(st *State, rec, base, out int, now time.Time, watch time.Duration, late, quiet bool) (int, string) {
	h.trackDip(st, rec, base, now, watch, late)
	d := st.OpenDip
	if d == nil || out >= d.From {
		return out, ""
	}
	held, top := out, 0 // top: the highest replica held
	topAge := 0.0       // the top's release's age
	var T, cT, c0 float64
	var n, nb int
	// T*(k) changes only where a dip's Floor, From or Back lies: one
	// threshold per run of replicas between those, not per replica (a
	// From of millions is a few runs).
	bps := []int{d.From, out}
	if st.Inherited > out && st.Inherited < d.From {
		bps = append(bps, st.Inherited)
	}
	for _, l := range d.Lows {
		if l.Floor > out && l.Floor < d.From {
			bps = append(bps, l.Floor)
		}
	}
	for _, x := range st.Dips {
		for _, v := range [...]int{x.From, x.Floor, x.Back} {
			if v > out && v < d.From {
				bps = append(bps, v)
			}
		}
	}
	slices.Sort(bps)
	bps = slices.Compact(bps)
	for i := len(bps) - 1; i > 0; i-- {
		hi, lo := bps[i], bps[i-1] // replicas lo+1..hi share a threshold
		t, ct, z, rel, back := h.threshold(st.Dips, hi)
		if hi <= st.Inherited && rel == 0 {
			// The fleet the state began with, before any dip released
			// it: no history prices it, so the rental's own break-even.
			t, ct, z = h.BreakEven.Seconds(), math.NaN(), math.NaN()
		}
		a := now.Sub(d.since(hi)).Seconds() // replicas lo+1..hi were released together
		if a < t {
			held += hi - lo
		}
		if top == 0 && (a < t || lo == out) {
			k := hi
			if a >= t {
				k = out + 1
			}
			top, T, cT, c0, n, nb, topAge = k, t, ct, z, rel, back, a
		}
	}
	if quiet {
		return held, ""
	}
	text := "hold: " + strconv.Itoa(len(st.Dips)) + " dips recorded, "
	if math.IsNaN(cT) { // an inherited replica
		text += "none released replica " + itoa(top) + ", one of the " + itoa(st.Inherited) +
			" the first decision found (no history prices it); break-even " + secs(h.BreakEven) + ", its threshold T* = the break-even " + num(T) + " s"
	} else {
		text += strconv.Itoa(n) + " released replica " + itoa(top) + " (" + strconv.Itoa(nb) + " wanted it again"
		if n > 0 {
			text += ": " + dipsText(st.Dips, top)
		}
		text += "), break-even " + secs(h.BreakEven) +
			"; its threshold T* = " + num(T) + " s (cost over the history " + num(cT) + " s against " + num(c0) + " s releasing at once)"
	}
	// The dip's age; the top's release's when it came at a later low.
	text += "; dip from " + itoa(d.From) + " open " + num(now.Sub(d.At).Seconds()) + " s"
	if !d.since(top).Equal(d.At) {
		text += ", replica " + itoa(top) + " released " + num(topAge) + " s ago"
	}
	if held > out {
		// Until when, as the stabilisation step says when its holder
		// leaves the window: the top replica goes once its release is T* old.
		return held, text + " < " + num(T) + " s: hold " + itoa(held-out) + " of the " + itoa(d.From-out) + " replicas it released (" + itoa(out) + " + " + itoa(held-out) + " = " + itoa(held) + "); replica " + itoa(top) + " held " +
			age(time.Duration((T-topAge)*float64(time.Second))) + " more (until its release is " + num(T) + " s old)"
	}
	return out, text + ", no replica's threshold above it: release to " + itoa(out)
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

// holdWatch is how long after a dip's return the hold watches for misses:
// until a replica asked for at the return serves, the lookahead (the cold
// start and a margin), else half the break-even (one cold start of
// recommended's two).
func (p *Policy) holdWatch() time.Duration {
	if p.Lookahead > 0 {
		return p.Lookahead
	}
	return p.Hold.BreakEven / 2
}

// late reports whether obs reads p's TTFT above its ttft metric's target
// (the SLO: requests missing it now); a policy without a ttft metric reads
// the queue time against its queuewait metric's.
func (p *Policy) late(obs Observation) bool {
	for _, sig := range []Signal{SignalTTFT, SignalQueueWait} {
		v := obs.TTFT
		if sig == SignalQueueWait {
			v = obs.QueueTime
		}
		for _, m := range p.Metrics {
			if m.Signal == sig {
				return known(v) && v > m.Target
			}
		}
	}
	return false
}
