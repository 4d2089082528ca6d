package scrape

import (
	"fmt"
	"math"
	"time"

	"github.com/infscale/infscale/internal/wallclock"
	hist "github.com/infscale/infscale/pkg/histogram"
)

// Rates are per-second rates of a replica's counters between two scrapes of
// the same source. Every rate is NaN when there is no baseline (no previous
// scrape, another source, no time elapsed, another process behind the same
// source (OtherProcess), the counter absent on either page or read from
// differently named families).
type Rates struct {
	// Interval is cur.Time - prev.Time; 0 without a baseline.
	Interval time.Duration
	// PromptTokens and GenerationTokens are tokens per second.
	PromptTokens, GenerationTokens float64
	// Requests is successful requests per second.
	Requests float64
	// PrefixHits and PrefixQueries are prompt tokens per second found in,
	// and looked up in, the prefix cache; NaN unless both counters have a
	// baseline (a hit rate without its queries pairs with nothing).
	PrefixHits, PrefixQueries float64
	// CPUCores is CPU seconds per second (cores busy) from
	// process_cpu_seconds_total.
	CPUCores float64
	// Reset is true when a counter reset was seen (a decrease, or a changed
	// process_start_time_seconds).
	Reset bool
	// OtherProcess is true when cur is another process's page than prev's
	// (OtherProcess: several pods behind one URL), not a restart: no
	// baseline, every rate NaN.
	OtherProcess bool
	// Suspect is non-empty when requests wait but no token was processed in
	// the interval (flat counters mark a stuck engine: the rule of
	// StuckTracker, stuck.go).
	Suspect string
}

// CPUPercent is CPUCores as a percentage of the pod's CPU request in cores
// (the HPA's cpu utilisation); NaN when either is unknown or requested <= 0.
func (r Rates) CPUPercent(requestedCores float64) float64 {
	if !(requestedCores > 0) || !finite(r.CPUCores) {
		return math.NaN()
	}
	return 100 * r.CPUCores / requestedCores
}

// clockSlack is how much further than the monotonic clock the wall clock
// may move between two scrapes before Rate gives no rate (NTP slews both
// alike; a step or a suspend moves the wall clock alone).
const clockSlack = time.Second

// Rate computes counter rates between prev and cur, two scrapes of one
// source (prev may be nil: no baseline, all NaN).
//
// Resets are handled the Prometheus way, per series: a value lower than
// before means the counter restarted from 0, so the increase is the new
// value (never negative); in addition a changed process_start_time_seconds
// marks every counter as restarted even if it already climbed past its old
// value. A series that appears only in cur started at 0 within the interval
// (or with the restarted process) and its whole value is the increase.
// docs/design.md cases C04 (reset: 200, 53.3, 200 tokens/s) and C05 (flat counter:
// 0/s, and UNKNOWN before a baseline).
func Rate(prev, cur *Page) Rates {
	nan := math.NaN()
	r := Rates{PromptTokens: nan, GenerationTokens: nan, Requests: nan, PrefixHits: nan, PrefixQueries: nan, CPUCores: nan}
	if prev == nil || cur == nil || prev.Source != cur.Source || prev.Time.IsZero() || cur.Time.IsZero() {
		return r
	}
	dt := cur.Time.Sub(prev.Time) // monotonic when both have a reading
	if dt <= 0 || wallclock.Jump(prev.Time, cur.Time) > clockSlack {
		// The wall clock moved further than the monotonic one: serve's
		// machine was suspended (CLOCK_MONOTONIC stops, the wall clock
		// is set on resume) or the clock stepped forward. Over which
		// span the counters grew is unknown: no rate (dividing by the
		// monotonic span read a 10 min suspend as a 41x surge).
		return r
	}
	if OtherProcess(prev.Time, prev.ProcessStart, cur.ProcessStart) {
		r.OtherProcess = true
		return r
	}
	r.Interval = dt
	restarted := Restarted(prev.ProcessStart, cur.ProcessStart)
	secs := dt.Seconds()
	rate := func(prevName, curName string) float64 {
		inc, reset := increase(prev, cur, prevName, curName, restarted)
		r.Reset = r.Reset || reset
		return inc / secs
	}
	r.PromptTokens = rate(prev.Chosen.PromptTokens, cur.Chosen.PromptTokens)
	r.GenerationTokens = rate(prev.Chosen.GenerationTokens, cur.Chosen.GenerationTokens)
	r.Requests = rate(prev.Chosen.Requests, cur.Chosen.Requests)
	r.CPUCores = rate(prev.Chosen.CPUSeconds, cur.Chosen.CPUSeconds)
	if h, q := rate(prev.Chosen.PrefixHits, cur.Chosen.PrefixHits), rate(prev.Chosen.PrefixQueries, cur.Chosen.PrefixQueries); !math.IsNaN(h) && !math.IsNaN(q) {
		r.PrefixHits, r.PrefixQueries = h, q
	}
	if flat(markOf(prev), markOf(cur), cur.Waiting) { // the stuck-engine rule's counter test (stuck.go)
		r.Suspect = fmt.Sprintf("stuck engine? waiting %g but no prompt or generation token processed in %s", cur.Waiting, dt)
	}
	return r
}

// increase is the summed per-series increase of counter name between the
// pages, NaN when the family is absent on either page or named differently.
func increase(prev, cur *Page, prevName, curName string, restarted bool) (inc float64, reset bool) {
	if prevName == "" || curName == "" || prevName != curName {
		return math.NaN(), false
	}
	before := map[string]float64{}
	for _, j := range prev.byName[prevName] {
		if s := prev.samples[j]; finite(s.Value) {
			before[s.Labels.String()] = s.Value
		}
	}
	n := 0
	for _, j := range cur.byName[curName] {
		s := cur.samples[j]
		if !finite(s.Value) {
			continue
		}
		n++
		old, seen := before[s.Labels.String()]
		if !seen {
			inc += s.Value
			continue
		}
		d, r := hist.CounterIncrease(old, s.Value, restarted)
		inc += d
		reset = reset || r
	}
	if n == 0 {
		return math.NaN(), false
	}
	return inc, reset || restarted
}
