package load

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/infscale/infscale/internal/jsonfloat"
)

// Summary is one load point's results (JSON as `infscale load --output
// json` prints it). Times are seconds; quantiles are numpy's linear
// percentiles over successful requests (ITL over all their inter-token
// intervals pooled, as vllm bench serve computes them). NaN quantiles (no
// data) are written as null.
type Summary struct {
	// Concurrency or Rate is the load offered (one of them is set; both 0
	// for a trace).
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	// Requests is the count of successful requests; Errors the failed.
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// DurationS is the run's duration: the first request's send to the
	// last successful request's last chunk (genai-perf's benchmark
	// duration; vllm bench serve's also counts the wait for its first
	// arrival and its failures' time).
	DurationS float64 `json:"duration_s"`

	TTFTP50  Float `json:"ttft_p50_s"`
	TTFTP90  Float `json:"ttft_p90_s"`
	TTFTP95  Float `json:"ttft_p95_s"`
	TTFTP99  Float `json:"ttft_p99_s"`
	TTFTMean Float `json:"ttft_mean_s"`
	ITLP50   Float `json:"itl_p50_s"`
	ITLP95   Float `json:"itl_p95_s"`
	ITLP99   Float `json:"itl_p99_s"`
	ITLMean  Float `json:"itl_mean_s"`
	TPOTP50  Float `json:"tpot_p50_s"`
	TPOTP95  Float `json:"tpot_p95_s"`
	E2EP50   Float `json:"e2e_p50_s"`
	E2EP90   Float `json:"e2e_p90_s"`
	E2EP95   Float `json:"e2e_p95_s"`
	E2EMean  Float `json:"e2e_mean_s"`

	// PromptTokens and OutputTokens are the totals over successful
	// requests (the server's usage).
	PromptTokens int `json:"prompt_tokens"`
	OutputTokens int `json:"output_tokens"`
	// OutputTokensPerS is OutputTokens / DurationS; RequestsPerS likewise;
	// TotalTokensPerS (PromptTokens + OutputTokens) / DurationS (vllm
	// bench serve's total token throughput).
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	RequestsPerS     float64 `json:"requests_per_s"`
	TotalTokensPerS  float64 `json:"total_tokens_per_s"`
	// FirstError is one error text, when there were errors.
	FirstError string `json:"first_error,omitempty"`
	// SentLate counts the requests (successful or not) the open loop sent
	// after their arrival time for want of a slot of its max concurrency
	// (Record.Late > 0: held themselves, or due while an earlier arrival
	// was): the point did not offer its rate, and is not within an SLO
	// (SLO.Meets).
	SentLate int `json:"sent_late,omitempty"`
	// UnsentFromS is Point.UnsentFrom: the arrival time (seconds since the
	// start) from which the open loop's arrivals due within the duration
	// were not sent; absent when all were. Such a point did not offer its
	// load and is not within an SLO (SLO.Meets).
	UnsentFromS *float64 `json:"unsent_from_s,omitempty"`
	// MaxConcurrency is the open loop's bound on requests in flight
	// (Config.MaxConcurrency; 0 for a closed loop).
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Burstiness is the open loop's gamma shape (Config.Burstiness; 0 for
	// a closed loop or a trace; null: +Inf, constant gaps).
	Burstiness Float `json:"burstiness,omitempty"`
	// Goodput is what met Config.Goodput's SLOs (absent without them).
	Goodput *GoodputResult `json:"goodput,omitempty"`
}

// Goodput are the SLOs a request must meet to count towards goodput, each
// in seconds, 0 not checked (vllm bench serve's --goodput ttft, tpot and
// e2el, given there in milliseconds).
type Goodput struct {
	TTFT float64 `json:"ttft_s,omitempty"`
	TPOT float64 `json:"tpot_s,omitempty"`
	E2E  float64 `json:"e2el_s,omitempty"`
}

// GoodputResult is a point's goodput: the successful requests that met
// every SLO of SLO (a request with one output token has TPOT 0, as vllm
// bench serve counts it), and those per second of the point's duration
// (vllm bench serve's request goodput).
type GoodputResult struct {
	SLO          Goodput `json:"slo"`
	Requests     int     `json:"requests"`
	RequestsPerS float64 `json:"requests_per_s"`
}

// Count returns g's result over recs, a run of dur.
func (g Goodput) Count(recs []Record, dur time.Duration) GoodputResult {
	res := GoodputResult{SLO: g}
	within := func(v, limit float64) bool { return limit <= 0 || v <= limit }
	for _, r := range recs {
		if r.Err != nil {
			continue
		}
		tpot, _ := r.tpot() // 0 for one output token, as vllm bench serve counts it
		if within(r.TTFT, g.TTFT) && within(tpot, g.TPOT) && within(r.E2E, g.E2E) {
			res.Requests++
		}
	}
	if d := dur.Seconds(); d > 0 {
		res.RequestsPerS = float64(res.Requests) / d
	}
	return res
}

// SummarizeRun is Summarize of p's records and duration with what cfg and
// p add to a point: its load, its burstiness, its bound on requests in
// flight, its goodput and what it left unsent.
func SummarizeRun(cfg Config, p Point) Summary {
	recs, dur := p.Records, p.Duration
	s := Summarize(recs, dur)
	s.UnsentFromS = p.UnsentFrom
	s.Concurrency, s.Rate = cfg.Concurrency, cfg.Rate
	if cfg.Concurrency == 0 {
		s.MaxConcurrency = cmp.Or(cfg.MaxConcurrency, DefaultMaxConcurrency)
	}
	if cfg.Rate > 0 {
		s.Burstiness = Float(cmp.Or(cfg.Burstiness, 1))
	}
	if cfg.Goodput != nil {
		g := cfg.Goodput.Count(recs, dur)
		s.Goodput = &g
	}
	return s
}

// Float is a float64 that marshals NaN and infinities as null and reads
// null back as NaN (jsonfloat.Float).
type Float = jsonfloat.Float

// Summarize computes a point's summary from its records.
func Summarize(recs []Record, dur time.Duration) Summary {
	var s Summary
	var ttft, itl, tpot, e2e []float64
	for _, r := range recs {
		if r.Late > 0 {
			s.SentLate++
		}
		if r.Err != nil {
			s.Errors++
			if s.FirstError == "" {
				s.FirstError = r.Err.Error()
			}
			continue
		}
		s.Requests++
		s.PromptTokens += r.PromptTokens
		s.OutputTokens += r.OutputTokens
		ttft = append(ttft, r.TTFT)
		e2e = append(e2e, r.E2E)
		itl = append(itl, r.ITL...)
		if v, ok := r.tpot(); ok {
			tpot = append(tpot, v)
		}
	}
	for _, l := range [][]float64{ttft, itl, tpot, e2e} {
		slices.Sort(l)
	}
	p := func(l []float64, q float64) Float { return Float(percentile(l, q)) }
	s.TTFTP50, s.TTFTP90, s.TTFTP95, s.TTFTP99, s.TTFTMean = p(ttft, 50), p(ttft, 90), p(ttft, 95), p(ttft, 99), Float(mean(ttft))
	s.ITLP50, s.ITLP95, s.ITLP99, s.ITLMean = p(itl, 50), p(itl, 95), p(itl, 99), Float(mean(itl))
	s.TPOTP50, s.TPOTP95 = p(tpot, 50), p(tpot, 95)
	s.E2EP50, s.E2EP90, s.E2EP95, s.E2EMean = p(e2e, 50), p(e2e, 90), p(e2e, 95), Float(mean(e2e))
	s.DurationS = dur.Seconds()
	if s.DurationS > 0 {
		s.OutputTokensPerS = float64(s.OutputTokens) / s.DurationS
		s.RequestsPerS = float64(s.Requests) / s.DurationS
		s.TotalTokensPerS = float64(s.PromptTokens+s.OutputTokens) / s.DurationS
	}
	return s
}

func mean(l []float64) float64 {
	if len(l) == 0 {
		return math.NaN()
	}
	t := 0.0
	for _, v := range l {
		t += v
	}
	return t / float64(len(l))
}

// SLO is what a point must meet to count as within the knee: TTFT p95 and
// ITL p95 at most these (seconds; 0: not checked).
type SLO struct {
	TTFTP95 float64 `json:"ttft_p95_s"`
	ITLP95  float64 `json:"itl_p95_s"`
}

// Meets reports whether s is within the SLO (a point with errors, without
// data, or that did not offer its load, SentLate or UnsentFromS, is not).
func (slo SLO) Meets(s Summary) bool {
	if s.Errors > 0 || s.Requests == 0 || s.SentLate > 0 || s.UnsentFromS != nil {
		return false
	}
	ok := func(v Float, limit float64) bool { return limit <= 0 || float64(v) <= limit }
	return ok(s.TTFTP95, slo.TTFTP95) && ok(s.ITLP95, slo.ITLP95)
}

// Knee is a sweep's highest load within the SLO, turned into a target.
type Knee struct {
	// Found is false when even the lowest load missed the SLO.
	Found bool `json:"found"`
	// Concurrency or Rate is the knee's load.
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	// Metric and Target are the suggested per-replica target of infscale's
	// config (metrics: [{type: Metric, target: Target}]): for a
	// concurrency sweep, queue (running + waiting per replica) at the
	// knee's concurrency; for a rate sweep, queue at the knee rate × its
	// mean e2e latency (Little's law: the requests in the system).
	Metric string  `json:"metric,omitempty"`
	Target float64 `json:"target,omitempty"`
	// LowerBound is true when the knee is the sweep's last point: every
	// point met the SLO, so the true knee is at this load or above it (the
	// sweep ended before the SLO was missed) and Target is a lower bound.
	LowerBound bool `json:"lower_bound"`
	// TTFTP95 and ITLP95 are the knee point's values.
	TTFTP95 Float `json:"ttft_p95_s"`
	ITLP95  Float `json:"itl_p95_s"`
	// SLO is what the points were held to.
	SLO SLO `json:"slo"`
}

// FindKnee returns the highest load of points (in increasing load) such
// that it and every lower load meet slo.
// LowerBound is set when that is the last point.
func FindKnee(points []Summary, slo SLO) Knee {
	k := Knee{SLO: slo, TTFTP95: Float(math.NaN()), ITLP95: Float(math.NaN())}
	for i, p := range points {
		if !slo.Meets(p) {
			break
		}
		k.Found, k.LowerBound = true, i == len(points)-1
		k.Concurrency, k.Rate = p.Concurrency, p.Rate
		k.TTFTP95, k.ITLP95 = p.TTFTP95, p.ITLP95
		k.Metric = "queue"
		if p.Concurrency > 0 {
			k.Target = float64(p.Concurrency)
		} else {
			k.Target = math.Round(p.Rate*float64(p.E2EMean)*10) / 10
		}
	}
	return k
}

// tpot is r's time per output token after the first, (e2e - TTFT) /
// (output tokens - 1), in seconds; 0 and false for one output token or
// none (no interval).
func (r Record) tpot() (float64, bool) {
	if r.OutputTokens > 1 {
		return (r.E2E - r.TTFT) / float64(r.OutputTokens-1), true
	}
	return 0, false
}
