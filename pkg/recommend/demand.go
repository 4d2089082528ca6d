package recommend

import (
	"errors"
	"math"
	"time"
)

// Capacity is one replica's sustainable throughput, from the replica model
// (pkg/replica: GPU, model, tensor parallelism, or a calibration), for the
// demand signal.
type Capacity struct {
	// PrefillTokensPerSecond is the replica's prefill rate, tokens/s (> 0).
	PrefillTokensPerSecond float64
	// MaxBatch is the most sequences decoded at once (>= 1).
	MaxBatch int
	// KVTokens is the KV cache size in tokens (> 0).
	KVTokens float64
	// StepSeconds and StepSecondsPerToken are one decode step at full
	// batch: StepSeconds + StepSecondsPerToken × the context tokens the
	// batch holds, in seconds (> 0 and >= 0).
	StepSeconds, StepSecondsPerToken float64
}

// ReplicaModel is what CapacityFrom reads of a replica model
// (*replica.Replica implements it): seconds of one decode step of batch
// sequences holding contextTokens of KV, seconds to prefill tokens, the
// KV cache in tokens and the batch limit.
type ReplicaModel interface {
	StepTime(batch int, contextTokens int64) float64
	PrefillTime(tokens int) float64
	KVCapacityTokens() int64
	MaxBatch() int
}

// CapacityFrom is a replica model's Capacity: the prefill rate over a
// 2^20-token prompt, and the full-batch decode step as the line through
// two large contexts (the memory-bound regime, where each context token
// costs the same), its intercept at least the compute floor
// StepTime(MaxBatch, 0).
func CapacityFrom(m ReplicaModel) *Capacity {
	const probe = 1 << 20
	b := m.MaxBatch()
	s1, s2 := m.StepTime(b, probe), m.StepTime(b, 2*probe)
	perToken := (s2 - s1) / probe
	return &Capacity{
		PrefillTokensPerSecond: probe / m.PrefillTime(probe),
		MaxBatch:               b,
		KVTokens:               float64(m.KVCapacityTokens()),
		StepSeconds:            max(s1-perToken*probe, m.StepTime(b, 0)),
		StepSecondsPerToken:    perToken,
	}
}

func (c *Capacity) check() error {
	switch {
	case !(c.PrefillTokensPerSecond > 0) || math.IsInf(c.PrefillTokensPerSecond, 0):
		return errors.New("prefill tokens per second must be finite and > 0")
	case c.MaxBatch < 1:
		return errors.New("max batch must be >= 1")
	case !(c.KVTokens > 0) || math.IsInf(c.KVTokens, 0):
		return errors.New("KV tokens must be finite and > 0")
	case !(c.StepSeconds > 0) || math.IsInf(c.StepSeconds, 0) || !(c.StepSecondsPerToken >= 0) || math.IsInf(c.StepSecondsPerToken, 0):
		return errors.New("step seconds must be finite and > 0, per token >= 0")
	}
	return nil
}

// RequestSeconds is the replica time one request of prompt and output
// tokens costs at sustained load, in seconds:
//
//	batch   = min(MaxBatch, KVTokens / (prompt + output)), at least 1
//	context = batch × (prompt + output/2)        tokens the batch holds
//	step    = StepSeconds + StepSecondsPerToken × context
//	seconds = prompt / PrefillTokensPerSecond + output × step / batch
//
// (prefill is compute-bound; a decode step gives every sequence of the
// batch one token).
func (c *Capacity) RequestSeconds(prompt, output float64) float64 {
	batch := float64(c.MaxBatch)
	if n := prompt + output; n > 0 {
		batch = max(1, min(batch, math.Floor(c.KVTokens/n)))
	}
	step := c.StepSeconds + c.StepSecondsPerToken*batch*(prompt+output/2)
	return prompt/c.PrefillTokensPerSecond + output*step/batch
}

// demandTrendSpan is the span the demand signal's trend is fitted over:
// three 15 s decisions. The arrival rate turns before the queue does, so a
// short span sees a ramp early; over the queue lookahead's 2 × 90 s the
// reference ramp's slope reads half and the second replica comes late
// (measured: docs/evaluation/recommended.md).
const demandTrendSpan = 45 * time.Second

// demandBaseline is how far back the arrival samples must reach before the
// trend counts: two trend spans, so that the fit's span has a span of
// known rate before it. A fresh start reads a first ramp that may be the
// start itself (the first windows of a replay, a new target's first
// minute); the samples are kept for one span more (demandHistory).
const (
	demandBaseline = 2 * demandTrendSpan
	demandHistory  = 3 * demandTrendSpan
)

// Arrival-rate noise: an arrival rate read over a window W of Poisson
// arrivals at λ requests/s has a standard deviation of sqrt(λ/W), so the
// least-squares slope over samples at times t has a standard error of
// sqrt(λ/W) / sqrt(Σ (t − mean t)²). A slope counts only when it is more
// than trendSignificance standard errors (one-sided, ~3e-5 for Poisson
// noise); a smaller one is noise and the trend is 0. W is the
// observation's ArrivalWindow: the replay's 30 s, serve's rate() over 1 m,
// embedded serve's time between two scrapes.
const trendSignificance = 4

// DefaultArrivalWindow is the ArrivalWindow of an observation that does
// not say (0): 30 s, the replay's rate window.
const DefaultArrivalWindow = 30 * time.Second

// arrivalTrend records rate at now in st.Arrivals (kept for
// demandHistory) and returns the trend the projection uses: the
// least-squares slope over the samples of the last demandTrendSpan, its
// Poisson standard error, the samples fitted, and whether it counts (a
// baseline of demandBaseline and a slope above trendSignificance standard
// errors).
func arrivalTrend(st *State, rate float64, window time.Duration, now time.Time) (slope, se float64, n int, counts bool, why string) {
	if window <= 0 {
		window = DefaultArrivalWindow
	}
	s := recordSample(&st.Arrivals, rate, now, demandHistory)
	fit := s
	for len(fit) > 0 && !fit[0].At.After(now.Add(-demandTrendSpan)) {
		fit = fit[1:]
	}
	n = len(fit)
	slope, mean, sxx, ok := leastSquares(fit, now)
	if !ok {
		return 0, math.NaN(), n, false, "fewer than 2 samples"
	}
	se = math.Sqrt(math.Max(0, mean)/window.Seconds()) / math.Sqrt(sxx)
	switch {
	case now.Sub(s[0].At) < demandBaseline:
		return slope, se, n, false, "samples reach back " + secs(now.Sub(s[0].At)) + " < " + secs(demandBaseline) + ": no baseline yet, not counted"
	case !(slope > trendSignificance*se):
		return slope, se, n, false, "within " + itoa(trendSignificance) + " × the Poisson standard error " + num(se) + ": noise, not counted"
	}
	return slope, se, n, true, "above " + itoa(trendSignificance) + " × the Poisson standard error " + num(se) + ": counted"
}

// RampBoundFor is Policy.RampBound for a replica whose cold start is
// coldStart under a scale-down window of downWindow: the standard normal
// quantile z of q = coldStart / (coldStart + downWindow), or 0 when q <=
// 0.5 or either is not positive. A counted trend is a ramp (4 standard
// errors); its slope is what is uncertain. Projected short by a replica,
// the replica comes a decision later and the traffic runs short of it for
// its cold start (coldStart replica-seconds); projected long, the replica
// idles until the traffic reaches it or, if the ramp stops, until the
// scale-down window releases it (at most downWindow; its cold start is
// paid in both cases once the ramp reaches it). Each second valued as one
// replica's (as Hold does), the projection that minimises the expected
// cost is the slope's q quantile (the newsvendor's critical ratio):
// slope + z × its standard error. The reference replica's 91 s cold
// start and a 60 s window give q = 0.6026, z = 0.2602; 215 s gives
// 0.7818, 0.7783.
func RampBoundFor(coldStart, downWindow time.Duration) float64 {
	if coldStart <= 0 || downWindow <= 0 {
		return 0
	}
	q := coldStart.Seconds() / (coldStart.Seconds() + downWindow.Seconds())
	return max(0, math.Sqrt2*math.Erfinv(2*q-1))
}

// demandRaw is the demand signal's recommendation:
//
//	per       = RequestSeconds(mean prompt, mean output)   replica-seconds
//	work      = arrival rate × per                          replicas busy, now
//	projected = (arrival rate + trend × lookahead) × per
//	            trend: least squares of the arrival rate over the samples
//	            of the last 45 s (demandTrendSpan), requests/s per second,
//	            counted when positive, above 4 Poisson standard errors
//	            (trendSignificance) and with samples reaching back 90 s
//	            (demandBaseline); else 0; a counted trend plus
//	            Policy.RampBound of its standard errors
//	replicas  = ceil(projected / target)   target: the utilisation one
//	            replica should run at
//
// The trend is the arrival rate's, not the work's: the mean lengths come
// from the few requests that finished in the window and swing from one
// decision to the next (on azure-llm-2023-conv at about 5 req/s the cost
// per request went from 0.080 to 0.112 replica-s within 3 minutes, up to
// 12% between decisions), and such a swing multiplied by the lookahead
// read as a ramp and bought replicas
// that were cancelled before they served (docs/evaluation/recommended.md). The
// arrival rate's own Poisson noise did the same: at 5 req/s over 30 s its
// slope over three samples has a standard error of 0.02 req/s per s, 2.8
// req/s over a 136 s lookahead, and a slope of two standard errors bought
// a replica every few minutes there.
// Without Policy.Capacity it is unknown (the front end supplies it: the
// replay from its replica, serve from the target's gpu and model).
// It reads the arrivals, not the replicas' batches, so it does not read low
// when many replicas serve small batches. Tolerance as an AverageValue
// metric: ratio = projected / (target × current). Unknown when the arrival
// rate or the mean lengths are; with no arrivals the work is 0 whatever
// the lengths.
func (p *Policy) demandRaw(m Metric, obs Observation, cur int, st *State, now time.Time) (Raw, Reason, string) {
	r := Raw{Signal: m.Signal, Target: m.Target, Value: math.NaN(), Ratio: math.NaN(), Replicas: cur, Desired: cur}
	rate, pr, out := obs.ArrivalRate, obs.MeanPrompt, obs.MeanOutput
	if !known(rate) || (rate > 0 && (!known(pr) || !known(out))) || p.Capacity == nil {
		return r, ReasonNoData, "demand unknown (arrival rate " + num(rate) + "/s, mean prompt " + num(pr) + ", mean output " + num(out) + "): no recommendation from it"
	}
	var per float64
	if rate > 0 {
		per = p.Capacity.RequestSeconds(pr, out)
	}
	work := rate * per
	r.Value, r.Valid = work, true
	text := "demand " + num(rate) + " req/s × " + num(per) + " replica-s per request (prompt " + num(pr) + ", output " + num(out) + " tokens) = " + num(work) + " replicas busy"
	projected := work
	if p.Lookahead > 0 {
		st.Work = nil // samples of the work (an older state file): not a rate
		slope, se, n, counts, why := arrivalTrend(st, rate, obs.ArrivalWindow, now)
		trend := 0.0
		if counts {
			trend = slope
			if p.RampBound > 0 {
				trend = slope + p.RampBound*se
				why += ", bounded at " + num(slope) + " + " + num(p.RampBound) + " × " + num(se) + " = " + num(trend)
			}
		}
		capText := ""
		if p.Hold != nil {
			// A rise back to a rate seen within the hold's memory is traffic
			// returning, not a new ramp: it projects no further than that
			// peak. A rate above the peak by less than the ramp bound's z
			// standard deviations of its own Poisson noise (sqrt(rate / W))
			// has not passed it yet.
			w := obs.ArrivalWindow
			if w <= 0 {
				w = DefaultArrivalWindow
			}
			noise := p.RampBound * math.Sqrt(math.Max(0, rate)/w.Seconds())
			if peak, ok := p.Hold.recentPeak(st, rate, now); ok && trend > 0 && rate < peak+noise && rate+trend*p.Lookahead.Seconds() > peak {
				trend = max(0, peak-rate) / p.Lookahead.Seconds()
				capText = ", capped at the recent peak " + num(peak) + " req/s (a return to it, not a new ramp)"
			}
		}
		projected = (rate + trend*p.Lookahead.Seconds()) * per
		text += "; arrival trend " + num(slope) + " req/s per s over " + itoa(n) + " samples (" + why + capText + "), projected (" + num(rate) + " + " +
			num(trend) + " × " + num(p.Lookahead.Seconds()) + ") × " + num(per) + " = " + num(projected)
	} else if p.Hold != nil {
		p.Hold.recentPeak(st, rate, now)
	}
	exact := projected / m.Target
	r.Replicas = ceilReplicas(exact)
	text += " / utilisation " + num(m.Target) + " = " + countText(exact)
	if cur == 0 {
		r.Ratio, r.Desired = exact, r.Replicas
		return r, ReasonMetric, text + "; from zero replicas there is no tolerance"
	}
	r.Ratio = exact / float64(cur)
	return applyTolerance(r, cur, p.tol, text+"; ratio "+num(exact)+" / "+itoa(cur)+" = "+ratio(r.Ratio), true)
}
