package recommend

import (
	"errors"
	"math"
	"strconv"
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
	// StepComputeSeconds is the full batch's step when compute-bound, in
	// seconds (>= 0; 0: none): the step is the larger of it and the line
	// above, as the replica model's max(memory, compute) is. A large batch
	// of short contexts is compute-bound (vLLM's --max-num-seqs 256 on an
	// H100 with 8B: 13.8 ms where the memory line gives 16.3).
	StepComputeSeconds float64
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
// 2^20-token prompt, the full-batch decode step as the line through two
// large contexts (the memory-bound regime, where each context token costs
// the same) and, as its floor, the step with no context StepTime(MaxBatch,
// 0) (compute-bound or the weights' read alone).
func CapacityFrom(m ReplicaModel) *Capacity {
	const probe = 1 << 20
	b := m.MaxBatch()
	s1, s2 := m.StepTime(b, probe), m.StepTime(b, 2*probe)
	perToken := (s2 - s1) / probe
	floor := m.StepTime(b, 0)
	return &Capacity{
		PrefillTokensPerSecond: probe / m.PrefillTime(probe),
		MaxBatch:               b,
		KVTokens:               float64(m.KVCapacityTokens()),
		StepSeconds:            min(max(s1-perToken*probe, 0), floor),
		StepSecondsPerToken:    perToken,
		StepComputeSeconds:     floor,
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
	case !(c.StepComputeSeconds >= 0) || math.IsInf(c.StepComputeSeconds, 0):
		return errors.New("compute-bound step seconds must be finite and >= 0")
	}
	return nil
}

// RequestSeconds is the replica time one request of prompt and output
// tokens costs at sustained load, in seconds, every prompt token
// prefilled: RequestSecondsCached(prompt, output, 0).
func (c *Capacity) RequestSeconds(prompt, output float64) float64 {
	return c.RequestSecondsCached(prompt, output, 0)
}

// RequestSecondsCached is the replica time one request of prompt and
// output tokens costs at sustained load, in seconds, when the fraction hit
// of its prompt tokens is found in the prefix cache (Observation.PrefixHit;
// NaN or outside [0, 1] counts as 0: every token prefilled): the uncached
// prompt × (1 − hit) at the prefill rate plus output × the full-batch
// decode step / batch, the batch min(MaxBatch, KVTokens / (prompt +
// output)), the step the larger of StepComputeSeconds and the line at the
// batch's context batch × (prompt + output/2). A cached token is not
// prefilled but its KV is held and read like any other, so only the
// prefill term sees hit (docs/recommend.md, "Demand").
func (c *Capacity) RequestSecondsCached(prompt, output, hit float64) float64 {
	batch := float64(c.MaxBatch)
	if n := prompt + output; n > 0 {
		batch = max(1, min(batch, math.Floor(c.KVTokens/n)))
	}
	step := max(c.StepSeconds+c.StepSecondsPerToken*batch*(prompt+output/2), c.StepComputeSeconds)
	return prompt*(1-hitOrZero(hit))/c.PrefillTokensPerSecond + output*step/batch
}

// requestText is RequestSecondsCached's arithmetic in words, for the Steps,
// so the cost per request recomputes by hand from the capacity's figures:
// "1000 / 24750 prefill tokens/s + 200 × step 0.00843 s / batch 64; step
// 0.00682 + 5.59e-08 s × 64 × 1100 context tokens" (the step: the line at
// the batch's context, or the compute floor when above it; the batch: the
// KV cache's when it holds fewer than MaxBatch requests).
func (c *Capacity) requestText(prompt, output, hit float64) string {
	batch := float64(c.MaxBatch)
	batchText := "batch " + itoa(c.MaxBatch)
	if n := prompt + output; n > 0 {
		batch = max(1, min(batch, math.Floor(c.KVTokens/n)))
		if batch < float64(c.MaxBatch) {
			batchText = "batch " + num(batch) + " (KV " + num(c.KVTokens) + " tokens / " + num(n) + ", rounded down, at least 1; max " + itoa(c.MaxBatch) + ")"
		}
	}
	context := batch * (prompt + output/2)
	line := c.StepSeconds + c.StepSecondsPerToken*context
	stepText := num(c.StepSeconds) + " + " + num(c.StepSecondsPerToken) + " s × " + num(batch) + " × " + num(prompt+output/2) + " context tokens"
	if c.StepComputeSeconds > line {
		stepText = "the compute floor " + num(c.StepComputeSeconds) + " s (above " + stepText + " = " + num(line) + ")"
	}
	step := max(line, c.StepComputeSeconds)
	text := num(output) + " × step " + num(step) + " s / " + batchText + "; step " + stepText
	if c.PrefillTokensPerSecond == math.MaxFloat64 { // a P/D decode pool prefills nothing
		return text
	}
	prefill := num(prompt)
	if h := hitOrZero(hit); h > 0 {
		prefill += " × (1 − " + num(h) + ")"
	}
	return prefill + " / " + num(c.PrefillTokensPerSecond) + " prefill tokens/s + " + text
}

// hitOrZero is a prefix-cache hit fraction as the demand arithmetic uses
// it: h within [0, 1], else 0 (unknown: every prompt token prefilled).
func hitOrZero(h float64) float64 {
	if h >= 0 && h <= 1 {
		return h
	}
	return 0
}

// hitText is the Steps' note of a prefix-cache hit fraction that lowers
// the prefill of a prompt of pr tokens ("" when it does not: unknown or 0,
// or a capacity that prefills nothing, a P/D pair's decode pool).
func (c *Capacity) hitText(pr, hit float64) string {
	h := hitOrZero(hit)
	if h == 0 || c.PrefillTokensPerSecond == math.MaxFloat64 {
		return ""
	}
	return ", prefix cache hit " + num(h) + ": " + num(pr*(1-h)) + " prefilled"
}

// demandTrendSpan is the span the demand signal's trend is fitted over:
// three 15 s decisions, short so that a ramp shows early (the arrival rate
// turns before the queue does).
const demandTrendSpan = 45 * time.Second

// demandBaseline is how far back the arrival samples must reach before a
// trend counts (a first ramp may be the start itself); they are kept for
// demandHistory.
const (
	demandBaseline = 2 * demandTrendSpan
	demandHistory  = 3 * demandTrendSpan
)

// trendSignificance is how many Poisson standard errors a slope must pass
// to count (one-sided, ~3e-5): a rate read over a window W at λ req/s has
// a standard deviation of sqrt(λ/W), the slope's is that over
// sqrt(Σ (t − mean t)²). W is the observation's ArrivalWindow.
const trendSignificance = 4

// DefaultArrivalWindow is the ArrivalWindow of an observation that does
// not say (0): 30 s, the replay's rate window.
const DefaultArrivalWindow = 30 * time.Second

// arrivalTrend records rate at now in st.Arrivals (kept for
// demandHistory or keep, the longer: the latency guards read the highest
// rate of the lookahead) and returns the trend the projection uses: the
// least-squares slope over the samples of the last demandTrendSpan, its
// Poisson standard error, the samples fitted, and whether it counts (a
// baseline of demandBaseline and a slope above trendSignificance standard
// errors).
func arrivalTrend(st *State, rate float64, window time.Duration, now time.Time, keep time.Duration, ex bool) (slope, se float64, n int, counts bool, why string) {
	if window <= 0 {
		window = DefaultArrivalWindow
	}
	s := recordSample(&st.Arrivals, rate, now, max(demandHistory, keep))
	f := arrivalFit(s, window, now)
	slope, se, n = f.slope, f.se, f.n
	if !f.ok {
		return 0, math.NaN(), n, false, "fewer than 2 samples"
	}
	fit, seText := "", "the Poisson standard error "+num(se)
	if ex {
		fit = fitText(f.fitted, now, true)[2:] + "; "
		seText = "the Poisson standard error sqrt(mean " + num(f.mean) + " req/s / rate window " + secs(window) + ") / sqrt(Σ(t − mean t)² " + num(f.sxx) + " s²) = " + num(se)
	}
	switch {
	case now.Sub(s[0].At) < demandBaseline:
		return slope, se, n, false, fit + "samples reach back " + age(now.Sub(s[0].At)) + " < " + secs(demandBaseline) + ": no baseline yet, not counted"
	case !(slope > trendSignificance*se):
		return slope, se, n, false, fit + "within " + itoa(trendSignificance) + " × " + seText + ": noise, not counted"
	}
	return slope, se, n, true, fit + "above " + itoa(trendSignificance) + " × " + seText + ": counted"
}

// trendFit is arrivalFit's result: the least-squares slope in requests/s
// per s, its Poisson standard error, the samples fitted (n of them), their
// mean rate in requests/s and Σ (t − mean t)² in s² (the standard error's
// inputs, for the text); ok is false with fewer than 2.
type trendFit struct {
	slope, se, mean, sxx float64
	n                    int
	fitted               []DemandSample
	ok                   bool
}

// arrivalFit is the arrival trend over the samples s of the last
// demandTrendSpan: the least-squares slope in requests/s per s and its
// Poisson standard error (a rate read over window at λ req/s has a standard
// deviation of sqrt(λ / window)).
func arrivalFit(s []DemandSample, window time.Duration, now time.Time) trendFit {
	if window <= 0 {
		window = DefaultArrivalWindow
	}
	for len(s) > 0 && !s[0].At.After(now.Add(-demandTrendSpan)) {
		s = s[1:]
	}
	slope, mean, sxx, ok := leastSquares(s, now)
	if !ok {
		return trendFit{se: math.NaN(), n: len(s), fitted: s}
	}
	se := math.Sqrt(math.Max(0, mean)/window.Seconds()) / math.Sqrt(sxx)
	return trendFit{slope: slope, se: se, mean: mean, sxx: sxx, n: len(s), fitted: s, ok: true}
}

// maxListed is how many samples a step's text lists: the newest ones (a
// lookahead of 136 s fits 18 samples at 15 s).
const maxListed = 24

// fitText lists the samples a least-squares fit read after ": ", each as
// its value at its time in seconds relative to now, the t the fit uses
// (": 4 at -30s, 4 at -15s, 8 at 0s"), so the slope recomputes by hand;
// beyond maxListed the oldest are counted, not listed. "" unless ex
// (explain) is set. One buffer: a lookahead of 136 s lists 18 samples at
// every explained decision.
func fitText(s []DemandSample, now time.Time, ex bool) string {
	if !ex || len(s) == 0 {
		return ""
	}
	b := make([]byte, 0, 2+16*min(len(s), maxListed)+24)
	b = append(b, ": "...)
	if extra := len(s) - maxListed; extra > 0 {
		b = strconv.AppendInt(b, int64(extra), 10)
		b = append(b, " older not listed, "...)
		s = s[extra:]
	}
	for i, x := range s {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendNum(b, x.Demand)
		b = append(b, " at "...)
		b = appendNum(b, x.At.Sub(now).Seconds())
		b = append(b, 's')
	}
	return string(b)
}

// RampBoundFor is Policy.RampBound for a replica whose cold start is
// coldStart under a scale-down window of downWindow: the standard normal
// quantile of coldStart / (coldStart + downWindow), 0 when that is <= 0.5
// or either is not positive. A replica projected short costs its cold
// start of short traffic, one projected long at most the window's idle
// time, so the cheapest projection of an uncertain slope is that quantile
// (the newsvendor's critical ratio; docs/recommend.md, "The ramp bound").
func RampBoundFor(coldStart, downWindow time.Duration) float64 {
	if coldStart <= 0 || downWindow <= 0 {
		return 0
	}
	q := coldStart.Seconds() / (coldStart.Seconds() + downWindow.Seconds())
	return max(0, math.Sqrt2*math.Erfinv(2*q-1))
}

// demandRaw is the demand signal's recommendation: ceil((rate + trend ×
// lookahead) × RequestSecondsCached(mean prompt, mean output, the
// observation's PrefixHit) / target), the trend the arrival rate's
// least-squares slope over demandTrendSpan when it counts (arrivalTrend),
// plus RampBound standard errors, and capped at a rise back to a recent
// peak (Hold). The trend is the rate's, not the work's: the mean lengths
// swing between decisions and a swing read as a ramp. Unknown without a
// Capacity, an arrival rate, or the mean lengths while requests arrive.
// Tolerance as an AverageValue metric. docs/recommend.md ("Demand") works
// it.
func (p *Policy) demandRaw(m Metric, obs Observation, cur int, st *State, now time.Time, ex bool) (Raw, Reason, string) {
	r := Raw{Signal: m.Signal, Target: m.Target, Value: math.NaN(), Ratio: math.NaN(), Replicas: cur, Desired: cur}
	rate, pr, out := obs.ArrivalRate, obs.MeanPrompt, obs.MeanOutput
	if !known(rate) || (rate > 0 && (!known(pr) || !known(out))) || p.Capacity == nil {
		return r, ReasonNoData, "demand unknown (arrival rate " + num(rate) + "/s, mean prompt " + num(pr) + ", mean output " + num(out) + "): no recommendation from it"
	}
	var per float64
	if rate > 0 {
		per = p.Capacity.RequestSecondsCached(pr, out, obs.PrefixHit)
	}
	work := rate * per
	r.Value, r.Valid = work, true
	perText := ""
	if rate > 0 {
		perText = ": " + p.Capacity.requestText(pr, out, obs.PrefixHit)
	}
	text := "demand " + num(rate) + " req/s × " + num(per) + " replica-s per request (prompt " + num(pr) + ", output " + num(out) + " tokens" + p.Capacity.hitText(pr, obs.PrefixHit) + perText + ") = " + num(work) + " replicas busy"
	projected := work
	if p.Lookahead > 0 {
		st.Work = nil // samples of the work (an older state file): not a rate
		slope, se, n, counts, why := arrivalTrend(st, rate, obs.ArrivalWindow, now, p.Lookahead, ex)
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
			// Past ramps' rises bound this one's (rampCap).
			if limit, rises, q := p.rampCap(st, rate, now, counts && trend > 0); counts && trend*p.Lookahead.Seconds() > limit {
				trend = limit / p.Lookahead.Seconds()
				if ex {
					why += p.rampCapText(limit, rises, q) + ": trend " + num(limit) + " / " + num(p.Lookahead.Seconds()) + " = " + num(trend)
				} else {
					why += ", capped"
				}
			}
		}
		if p.Hold != nil {
			// A rise back to a recent peak is traffic returning, not a new
			// ramp: projected no further than the peak until the rate passes
			// it by more than its own noise at the ramp bound's quantile.
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
	return applyTolerance(r, cur, p.tol, text+"; ratio "+num(exact)+" / "+itoa(cur)+" = "+p.tol.ratioText(r.Ratio), true)
}
