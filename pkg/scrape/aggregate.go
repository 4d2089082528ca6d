package scrape

import "math"

// Totals are the load signals of several replicas (one Page each), with HPA
// missing-data semantics: a page without a signal does not vote for it.
// Every float64 is NaN when no page reports the signal.
type Totals struct {
	// Pages is the number of pages given (nil pages count: a failed scrape).
	Pages int
	// Reporting is the pages that carry running or waiting
	// (Page.ReportsLoad): a page with KV alone is a missing replica for
	// the HPA's rule, its requests unknown, not 0.
	Reporting int
	// Running and Waiting are sums over the pages that report them, with
	// how many pages reported each; a sum that overflows float64 is
	// math.MaxFloat64 (a huge load, not an unknown one).
	Running, Waiting                   float64
	RunningReporting, WaitingReporting int
	// Queued is the pages whose own waiting is above 0: the replicas
	// holding the queue (recommend.Observation.Queued).
	Queued int
	// KV is the mean over reporting pages of each page's KV (the max over its
	// engines), a fraction 0..1, and how many pages reported it.
	KV          float64
	KVReporting int
	// Suspect lists the sources of pages flagged as stuck engines (their
	// values are included above; the caller decides what to do).
	Suspect []string
	// Unknown lists "SOURCE: SIGNAL" for each page whose running, waiting
	// or kv is unknown (Page.Unknown): that signal's total is NaN, as a
	// PromQL sum over a NaN sample is (the HPA's partial-data rule then
	// applies), not the sum over the other pages.
	Unknown []string
}

// Aggregate sums running and waiting over pages and averages KV over the
// pages that report it (docs/design.md "Signals and their semantics": sum, sum, mean of per-replica
// max). A nil page is a replica whose scrape failed: it reports nothing.
func Aggregate(pages []*Page) Totals {
	t := Totals{Pages: len(pages), Running: math.NaN(), Waiting: math.NaN(), KV: math.NaN()}
	kvSum := 0.0
	for _, p := range pages {
		if p == nil {
			continue
		}
		if p.ReportsLoad() {
			t.Reporting++
		}
		if finite(p.Running) {
			t.Running = addNaN(t.Running, p.Running)
			t.RunningReporting++
		}
		if finite(p.Waiting) {
			t.Waiting = addNaN(t.Waiting, p.Waiting)
			t.WaitingReporting++
			if p.Waiting > 0 {
				t.Queued++
			}
		}
		if finite(p.KV) {
			kvSum += p.KV
			t.KVReporting++
		}
		if p.Suspect != "" {
			t.Suspect = append(t.Suspect, p.Source)
		}
		for _, s := range p.Unknown {
			t.Unknown = append(t.Unknown, p.Source+": "+s)
		}
	}
	if t.KVReporting > 0 {
		t.KV = kvSum / float64(t.KVReporting)
	}
	for _, p := range pages {
		if p == nil {
			continue
		}
		for _, s := range p.Unknown {
			switch s {
			case "running":
				t.Running = math.NaN()
			case "waiting":
				t.Waiting = math.NaN()
			case "kv":
				t.KV = math.NaN()
			}
		}
	}
	return t
}

// addNaN adds v to acc, treating a NaN acc as "nothing yet". Both are
// finite; a sum that overflows float64 saturates at math.MaxFloat64: finite
// pages whose total is too large for a float64 are a huge load (capped
// downstream), never the +Inf a garbage page would send, which is unknown.
func addNaN(acc, v float64) float64 {
	if math.IsNaN(acc) {
		return v
	}
	if t := acc + v; !math.IsInf(t, 1) {
		return t
	}
	return math.MaxFloat64
}
