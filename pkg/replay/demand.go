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
	id := int64(t / w.period)
	if w.ids[w.last] == id {
		return &w.slots[w.last]
	}
	s := int(id % int64(len(w.ids)))
	if w.ids[s] != id {
		w.slots[s] = counts{}
		w.ids[s] = id
	}
	w.last = s
	return &w.slots[s]
}

// counts is the demand slot of time now; without a demand window (a
// replay nobody observes) a scratch slot.
func (s *sim) counts(now float64) *counts {
	if s.demand == nil {
		return &s.noCounts
	}
	return s.demand.at(now)
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
