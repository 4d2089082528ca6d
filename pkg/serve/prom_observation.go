package serve

import (
	"math"
	"time"

	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
)

// promObservation is what one target's promql values mean as an
// Observation: the load signals as read, the mean lengths from the demand
// rates, the prefix-cache hit fraction (unknown outside 0..1), the counts rounded (0 when unknown), and the
// stuck pods left out (excludeStuck).
// window is the rate() window of the demand signals (for the demand trend's
// noise gate).
func promObservation(v promql.Values, window time.Duration) recommend.Observation {
	o := recommend.Unknown()
	o.Running, o.Waiting, o.KV, o.CPU, o.TTFT, o.Held = v[promql.Running], v[promql.Waiting], v[promql.KV], v[promql.CPU], v[promql.TTFT], v[promql.Held]
	o.QueueTime, o.ITL = v[promql.QueueTime], v[promql.ITL]
	o.ArrivalRate, o.PromptTokensRate, o.GenerationTokensRate = v[promql.Arrivals], v[promql.PromptTokens], v[promql.GenerationTokens]
	o.MeanPrompt, o.MeanOutput = recommend.MeanLengths(o.ArrivalRate, o.PromptTokensRate, o.GenerationTokensRate)
	o.PrefixHit = recommend.HitFraction(v[promql.PrefixHit], 1) // a fraction: NaN outside 0..1
	o.ArrivalWindow = window
	if r := v[promql.Reporting]; !math.IsNaN(r) && r >= 0 {
		o.Reporting = int(math.Round(r))
	}
	if u := v[promql.Unready]; !math.IsNaN(u) && u >= 0 {
		o.Unready = int(math.Round(u))
	}
	if c := v[promql.Current]; !math.IsNaN(c) { // promql refused negatives and huge values
		o.Current = int(math.Round(c))
	}
	if q := v[promql.Queued]; !math.IsNaN(q) && q >= 0 {
		o.Queued = int(math.Round(q))
		if o.Reporting > 0 {
			o.Queued = min(o.Queued, o.Reporting) // an EPP counts stale endpoints' queues too
		}
	}
	excludeStuck(&o, v[promql.Stuck], v[promql.StuckWaiting])
	return o
}

// excludeStuck leaves the stuck pods (stuck of them, whose waiting is
// wait) out of o: their waiting is subtracted and Reporting drops by their
// number, while Current keeps them, so they are the HPA's missing pods (0 on
// a scale-up, at target on a scale-down). Their running stays (a stuck
// engine runs 0 or 1 request). When every reporting pod is stuck, no pod
// votes: Running, Waiting and KV become unknown (not 0, which would scale
// down). A stuck pod waits by definition: Queued drops by their number. When either count is unknown (NaN: not asked for, or an override
// owns the waiting or reporting shape, or the read failed) o is left as it
// is: the pods are flagged, not excluded.
func excludeStuck(o *recommend.Observation, stuck, wait float64) {
	if math.IsNaN(stuck) || stuck == 0 || math.IsNaN(wait) {
		return // nothing stuck, or flagged only
	}
	n := int(math.Round(stuck))
	if o.Reporting > 0 && o.Reporting <= n {
		o.Running, o.Waiting, o.KV = math.NaN(), math.NaN(), math.NaN()
		o.Reporting = 0
		return
	}
	if !math.IsNaN(o.Waiting) {
		o.Waiting = math.Max(0, o.Waiting-wait)
	}
	if o.Reporting > 0 {
		o.Reporting -= n
	}
	o.Queued = max(0, o.Queued-n) // a stuck pod has requests waiting
}
