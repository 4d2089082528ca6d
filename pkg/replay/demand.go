package replay

import "math"

// counts are the demand counters of one period slot, as vLLM's counters
// and histograms would accumulate them.
type counts struct {
	arrivals    float64 // requests arriving (at the servers or the activator)
	prefilled   float64 // prompt tokens prefilled (vllm:prompt_tokens_total)
	generated   float64 // tokens generated (vllm:generation_tokens_total), counted at completion
	finished    float64 // requests finished (vllm:request_success_total)
	finishedIn  float64 // their prompt tokens (vllm:request_prompt_tokens_sum)
	finishedOut float64 // their output tokens (vllm:request_generation_tokens_sum)
}

// demandWindow keeps counts per Config.Period over a trailing span: what
// rate() and a histogram's sum/count over the span read.
type demandWindow struct {
	slots  []counts
	ids    []int64
	period float64
	last   int // the slot at() returned last: most calls fall in its period
	// lo, hi bound exactly the times whose period is ids[last] (none until
	// the first call), cur is &slots[last]: the hot path compares instead
	// of dividing.
	lo, hi float64
	cur    *counts
}

func newDemandWindow(span, period float64) *demandWindow {
	n := max(1, int(math.Ceil(span/period))) + 1
	w := &demandWindow{slots: make([]counts, n), ids: make([]int64, n), period: period}
	for i := range w.ids {
		w.ids[i] = -1
	}
	return w
}

// at is the slot of time t, cleared when it held an older period.
func (w *demandWindow) at(t float64) *counts {
	if t >= w.lo && t < w.hi {
		return w.cur
	}
	return w.slot(t)
}

// slot is at's slow path: the division, at most once per period.
func (w *demandWindow) slot(t float64) *counts {
	id := int64(t / w.period)
	if w.ids[w.last] != id {
		s := int(id % int64(len(w.ids)))
		if w.ids[s] != id {
			w.slots[s] = counts{}
			w.ids[s] = id
		}
		w.last = s
	}
	w.lo, w.hi = spanOf(id, w.period)
	w.cur = &w.slots[w.last]
	return w.cur
}

// spanOf is [lo, hi): the times t >= 0 whose period index int64(t/period)
// is id, found exactly: the index grows with t, so each edge is the first
// float whose index reaches it, a few math.Nextafter steps from id·period.
// An id that is negative or beyond 2^52 (where the conversion stops being
// monotonic) gets the empty span: those times take the division.
func spanOf(id int64, period float64) (lo, hi float64) {
	if id < 0 || id >= 1<<52 || !(period > 0) {
		return 0, 0
	}
	return periodEdge(id, period), periodEdge(id+1, period)
}

// periodEdge is the least t >= 0 with int64(t/period) >= id, for
// 0 <= id <= 2^52 and period > 0 (+Inf when no finite t reaches id).
func periodEdge(id int64, period float64) float64 {
	if id == 0 {
		return 0
	}
	t := float64(id) * period
	if math.IsInf(t, 1) {
		t = math.MaxFloat64
	}
	for t > 0 {
		prev := math.Nextafter(t, 0)
		if int64(prev/period) < id {
			break
		}
		t = prev
	}
	for int64(t/period) < id {
		if t == math.MaxFloat64 {
			return math.Inf(1)
		}
		t = math.Nextafter(t, math.Inf(1))
	}
	return t
}

// counts is the demand slot of time now; without a demand window (a
// replay nobody observes) a scratch slot. The slot of the current period
// and its exact time span are kept in the sim (countsLo, countsHi,
// countsCur), so that the three calls per request compare inline.
func (s *sim) counts(now float64) *counts {
	if now >= s.countsLo && now < s.countsHi {
		return s.countsCur
	}
	return s.countsAt(now)
}

//go:noinline
func (s *sim) countsAt(now float64) *counts {
	if s.demand == nil {
		s.countsLo, s.countsHi, s.countsCur = math.Inf(-1), math.Inf(1), &s.noCounts
		return s.countsCur
	}
	s.countsCur = s.demand.at(now)
	s.countsLo, s.countsHi = s.demand.lo, s.demand.hi
	return s.countsCur
}

// sum adds the slots of the periods ending at t within the window and
// returns them with the span they cover in seconds (from the oldest slot
// counted, or the trace start, to t).
func (w *demandWindow) sum(t float64) (c counts, span float64) {
	now := int64(t / w.period)
	for s, id := range w.ids {
		if id >= 0 && id > now-int64(len(w.ids)) && id <= now {
			x := w.slots[s]
			c.arrivals += x.arrivals
			c.prefilled += x.prefilled
			c.generated += x.generated
			c.finished += x.finished
			c.finishedIn += x.finishedIn
			c.finishedOut += x.finishedOut
		}
	}
	// The slots are the current period and the len-1 before it.
	start := max(0, float64(now-int64(len(w.ids))+1)*w.period)
	return c, t - start
}

// demandSignals fills the demand part of an observation at now: rates
// over the window, means over the requests finished in it (NaN before
// the first finished request, as a fresh vLLM exports no histogram sample),
// the queue-time quantile from the queue-time window.
func (s *sim) demandSignals(now float64) (arrival, prompt, gen, meanIn, meanOut, queue float64) {
	meanIn, meanOut = math.NaN(), math.NaN()
	if s.demand == nil || s.queueWin == nil { // a replay built without them (the optimal planner's)
		return math.NaN(), math.NaN(), math.NaN(), meanIn, meanOut, math.NaN()
	}
	c, span := s.demand.sum(now)
	if span <= 0 {
		return math.NaN(), math.NaN(), math.NaN(), meanIn, meanOut, math.NaN()
	}
	if c.finished > 0 {
		meanIn, meanOut = c.finishedIn/c.finished, c.finishedOut/c.finished
	} else if s.finishedEver > 0 {
		meanIn, meanOut = s.lastMeanIn, s.lastMeanOut // no request finished in the window: the last known means
	}
	if c.finished > 0 {
		s.lastMeanIn, s.lastMeanOut = meanIn, meanOut
	}
	return c.arrivals / span, c.prefilled / span, c.generated / span, meanIn, meanOut, s.queueWin.quantile(now, s.cfg.TTFTQuantile)
}
