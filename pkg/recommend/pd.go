package recommend

import (
	"math"
	"slices"
	"time"
)

// Role is a pool's part in a prefill/decode (P/D) disaggregated pair
// (llm-d's pod label llm-d.ai/role: prefill or decode, docs/llm-d.md).
type Role uint8

const (
	// RolePrefill runs the prompts' prefill (llm-d's sidecar sends each
	// prompt with max_tokens=1) and hands the KV to a decode replica.
	RolePrefill Role = iota + 1
	// RoleDecode receives the prompt's KV and decodes the output.
	RoleDecode
)

// String is the role's llm-d.ai/role label value: prefill or decode.
func (r Role) String() string {
	switch r {
	case RolePrefill:
		return "prefill"
	case RoleDecode:
		return "decode"
	}
	return "unknown"
}

// ForRole is c as the demand signal of a pool of one role reads it. A
// prefill replica's requests carry max_tokens=1, so
// RequestSecondsCached(prompt, 1, hit) on c itself is its cost (the
// prompt's uncached part prefilled): c is returned unchanged. A decode replica
// prefills nothing (the prompt's KV arrives over the link), so its copy
// has PrefillTokensPerSecond at the largest float64: a prompt costs KV
// room and context reads in each step, no prefill time, and
// RequestSeconds(prompt, output) = output × step / batch.
func (c *Capacity) ForRole(r Role) *Capacity {
	if r != RoleDecode {
		return c
	}
	d := *c
	d.PrefillTokensPerSecond = math.MaxFloat64
	return &d
}

// PairRatio is the decode replica time per prefill replica time that
// requests of prompt and output tokens (means) ask of a P/D pair of c's
// replica, from the same arithmetic as the demand signal:
//
//	ratio = ForRole(RoleDecode).RequestSeconds(prompt, output) / RequestSeconds(prompt, 1)
//
// (a prefill replica's request is the prompt and one token, a decode
// replica's the output at the full-batch step with KV for prompt +
// output). NaN when either length is unknown or not > 0.
func (c *Capacity) PairRatio(prompt, output float64) float64 {
	return pairRatio(c, c.ForRole(RoleDecode), prompt, output, 0)
}

// pairRatio is PairRatio with each role's own capacity (a pair whose
// roles run different replicas) and the prefill pool's prefix-cache hit
// fraction hit (Capacity.RequestSecondsCached; NaN: none).
func pairRatio(prefill, decode *Capacity, prompt, output, hit float64) float64 {
	if !(prompt > 0) || !(output > 0) || math.IsInf(prompt, 0) || math.IsInf(output, 0) {
		return math.NaN()
	}
	return decode.RequestSeconds(prompt, output) / prefill.RequestSecondsCached(prompt, 1, hit)
}

// Pair is a P/D target's policy: one Policy per role, each with the
// demand signal on its role's Capacity (Capacity.ForRole) and whatever
// guards it lists. The pair's own rule is the ratio bound (PairDecider).
type Pair struct {
	Prefill, Decode *Policy
}

// PairReading is one cycle's observation of both pools: each pool's
// replicas, queues, KV and latency as its own pods report them, and its
// arrivals (a decode pool's arrivals are the prefill pool's handoffs).
type PairReading struct {
	Prefill, Decode Reading
}

// PairBound is the ratio bound one PairDecider.Decide applied: each
// pool's floor from the other pool's projected demand (0: no floor, a
// signal unknown) and the ratio it used (NaN when unknown).
type PairBound struct {
	Ratio                     float64
	PrefillFloor, DecodeFloor int
}

// PairDecider is a P/D target's decisions over time: one Decider per role
// (the aggregated rule, unchanged, on the role's own reading) and the
// ratio bound between them. The zero PairDecider is a fresh start.
type PairDecider struct {
	Prefill, Decode Decider

	pre, dec         Policy   // each role's Policy at this cycle's target (PairPolicies)
	preMets, decMets []Metric // their metrics
}

// Decide is one cycle for both roles, written into dp and dd. Each role
// decides alone (Decider.Decide on its Policy and Reading, each role's
// demand target lowered to what its queue allows, PairPolicies); then the
// ratio bound raises, never lowers, each role to what the other role's
// demand implies:
//
//	ratio        = decode RequestSeconds(prompt, output) / prefill RequestSecondsCached(prompt, 1, hit)
//	               at the decode pool's mean lengths and the prefill pool's
//	               prefix-cache hit fraction, each on its role's
//	               Policy.Capacity (Capacity.PairRatio for one replica, no hits)
//	work_role    = the role's demand metric projected: exact replicas × target
//	               (Raw.Ratio × current, or Raw.Ratio at zero)
//	decode floor = ceil(work_prefill × ratio / decode target)
//	prefill floor= ceil(work_decode / ratio / prefill target)
//
// each within the role's Min..Max. A role whose demand metric is unknown
// gives the other no floor. The floors are the same requests seen at the
// other pool: the prefill pool's arrivals reach the decode pool one
// prefill later (or, behind a prefill queue, later still), so decode is
// sized for them before they arrive. Errors: none; a Pair without a
// demand metric on either role is two independent Deciders.
func (l *PairDecider) Decide(dp, dd *Decision, p *Pair, r PairReading, now time.Time) PairBound {
	q := l.policies(p, r)
	l.Prefill.Decide(dp, q.Prefill, r.Prefill, now)
	l.Decode.Decide(dd, q.Decode, r.Decode, now)
	return Bound(dp, dd, &l.Prefill, &l.Decode, &q, r)
}

// Bound is PairDecider.Decide's ratio bound on decisions dp and dd that
// lp and ld made this cycle (Decider.Decide) on p's policies and r's
// readings: each raised, never lowered, to the floor the other role's
// projected demand implies, the deciders' desired raised with them. For a
// caller that holds each role's Decider apart (serve).
func Bound(dp, dd *Decision, lp, ld *Decider, p *Pair, r PairReading) PairBound {
	b := PairBound{Ratio: math.NaN()}
	if p.Prefill.Capacity == nil || p.Decode.Capacity == nil {
		return b
	}
	b.Ratio = pairRatio(p.Prefill.Capacity, p.Decode.Capacity, r.Decode.Obs.MeanPrompt, r.Decode.Obs.MeanOutput, r.Prefill.Obs.PrefixHit)
	if !(b.Ratio > 0) || math.IsInf(b.Ratio, 0) {
		return b
	}
	wp, tp, okp := projectedWork(dp)
	wd, td, okd := projectedWork(dd)
	if okp {
		b.DecodeFloor = ceilReplicas(wp * b.Ratio / td)
		if !okd {
			b.DecodeFloor = 0
		}
	}
	if okd && okp {
		b.PrefillFloor = ceilReplicas(wd / b.Ratio / tp)
	}
	raise := func(d *Decision, l *Decider, p *Policy, floor int, exact float64, why func() string) {
		if floor <= d.Desired {
			return
		}
		from := d.Desired
		text := "pair: " + why() + " = " + ceilText(exact, floor)
		if floor > p.Max {
			text += ", within max " + itoa(p.Max)
		}
		// The reason and a step say what set the count (the role's own
		// steps end at from); Explain adds the same step. A floor above
		// max is bound by max (TooManyReplicas, as a metric's would be),
		// also when the role is at max already and nothing changes.
		reason := ReasonPair
		if floor > p.Max {
			reason = ReasonMax
		}
		d.Reason = reason
		d.Desired = max(d.Desired, min(floor, p.Max))
		l.Desired, l.HasDesired = d.Desired, true
		if d.Desired == from {
			text += ": keeps " + itoa(from)
		} else {
			text += ": raised from " + itoa(from) + " to " + itoa(d.Desired)
		}
		step := Step{Stage: StageLimits, Reason: reason, Value: d.Desired, Text: text}
		if !d.quiet {
			d.Steps = append(d.Steps, step)
		}
		l.last.pair = &step
		// The raised count is this cycle's recommendation, so the
		// scale-down window holds it as it holds the role's own.
		st := &l.State
		if n := len(st.Recommendations); n > 0 && st.Recommendations[n-1].Replicas < d.Desired {
			st.Recommendations = append(st.Recommendations[:n-1:n-1], TimedReplicas{At: st.Recommendations[n-1].At, Replicas: d.Desired})
		}
		if !st.LastAt.IsZero() {
			st.LastDesired = max(st.LastDesired, d.Desired)
		}
	}
	raise(dd, ld, p.Decode, b.DecodeFloor, wp*b.Ratio/td, func() string {
		return "the prefill pool's demand, " + num(wp) + " replicas busy × ratio " + num(b.Ratio) + " (a request's decode work over its prefill work) = " +
			num(wp*b.Ratio) + " decode replicas busy / target " + num(td) + " (the prefill pool's requests reach the decode pool next)"
	})
	raise(dp, lp, p.Prefill, b.PrefillFloor, wd/b.Ratio/tp, func() string {
		return "the decode pool's demand, " + num(wd) + " replicas busy / ratio " + num(b.Ratio) + " (a request's decode work over its prefill work) = " +
			num(wd/b.Ratio) + " prefill replicas busy / target " + num(tp)
	})
	return b
}

// projectedWork is a decision's demand metric as replicas busy, projected
// (exact replicas × target), with its target; ok false when there is no
// valid demand metric.
func projectedWork(d *Decision) (work, target float64, ok bool) {
	for _, r := range d.Raw {
		if r.Signal != SignalDemand || !r.Valid || math.IsNaN(r.Ratio) {
			continue
		}
		exact := r.Ratio
		if d.Current > 0 {
			exact *= float64(d.Current)
		}
		return exact * r.Target, r.Target, true
	}
	return 0, 0, false
}

// prefillQuantile is the quantile of a prefill replica's queue wait that
// PrefillTarget bounds: the p95 the latency guards read.
const prefillQuantile = 0.95

// PrefillTarget is the utilisation (0..1) at which one FIFO prefill
// replica, serving requests of service seconds on average (a prefill
// replica's RequestSeconds(prompt, 1)), keeps its queue wait within wait
// seconds at the 95th percentile. A prefill-only replica is one server
// taking the prompts in turn (its batch is the chunked prefill of the
// prompt at the head), so its wait is the M/M/1 queue's (Poisson
// arrivals, service times as variable as exponential ones):
//
//	P(W > t) = ρ · exp(−(1 − ρ) · t / S)
//
// set to 1 − 0.95 and solved for ρ (P rises with ρ from 0 at ρ = 0 to 1
// at ρ = 1, so the root is unique; bisection to 1e-12). For S = 0.05 s
// and t = 0.4 s, ρ = 0.6748. NaN when service or wait is not a finite
// number > 0.
func PrefillTarget(service, wait float64) float64 {
	if !(service > 0) || !(wait > 0) || math.IsInf(service, 0) || math.IsInf(wait, 0) {
		return math.NaN()
	}
	k := wait / service
	return solveTail(func(rho float64) float64 { return rho * math.Exp(-(1-rho)*k) })
}

// PrefillWait is the queue wait a prefill Policy allows a request of
// service seconds, from its own latency guards: the queuewait target, or
// the ttft target less the service (the prefill pool's TTFT is its queue
// and prefill), the smaller of the two; NaN without either.
func PrefillWait(p *Policy, service float64) float64 {
	w := math.NaN()
	for _, m := range p.Metrics {
		var v float64
		switch m.Signal {
		case SignalQueueWait:
			v = m.Target
		case SignalTTFT:
			v = m.Target - service
		default:
			continue
		}
		if math.IsNaN(w) || v < w {
			w = v
		}
	}
	return w
}

// DecodeTarget is the utilisation (0..1) of one decode replica's modelled
// capacity at which a request waits for a batch slot no longer than wait
// seconds at the 95th percentile. A decode replica is slots servers (its
// batch: min(max-num-seqs, KV / (prompt + output))), each sequence holding
// one for hold seconds (output × the full-batch step, the time the demand
// signal charges), so its queue is M/M/c's (Erlang C):
//
//	P(W > t) = C(c, c·ρ) · exp(−c · (1 − ρ) · t / hold)
//
// with C(c, a) the Erlang C probability of waiting at offered load a
// (from the Erlang B recursion B(k) = a·B(k−1) / (k + a·B(k−1)), C = c·B /
// (c − a·(1 − B))), set to 1 − 0.95 and solved for ρ (P rises with ρ).
// For 64 slots, hold 2.1 s and wait 0.386 s, ρ = 0.8754. NaN when an
// argument is not a finite number > 0 (slots >= 1).
func DecodeTarget(slots int, hold, wait float64) float64 {
	if slots < 1 || !(hold > 0) || !(wait > 0) || math.IsInf(hold, 0) || math.IsInf(wait, 0) {
		return math.NaN()
	}
	c := float64(slots)
	return solveTail(func(rho float64) float64 {
		return erlangC(slots, c*rho) * math.Exp(-c*(1-rho)*wait/hold)
	})
}

// erlangC is the probability that an arrival waits in an M/M/c queue of
// c servers at offered load a Erlangs (a < c; 1 at a >= c).
func erlangC(c int, a float64) float64 {
	if a >= float64(c) {
		return 1
	}
	b := 1.0
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return float64(c) * b / (float64(c) - a*(1-b))
}

// solveTail is the ρ in [0, 1] where tail(ρ), rising from 0 to 1, crosses
// 1 − prefillQuantile (bisection to 1e-12).
func solveTail(tail func(rho float64) float64) float64 {
	lo, hi := 0.0, 1.0
	for hi-lo > 1e-12 {
		mid := (lo + hi) / 2
		if tail(mid) > 1-prefillQuantile {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo
}

// PairPolicies is p as it decides on reading r: each role's demand
// metric's target lowered, never raised, to what its queue allows within
// the prefill Policy's wait (PrefillWait, S = the prefill Capacity's
// RequestSecondsCached(mean prompt, 1, the prefill pool's PrefixHit): the
// uncached part of the prompt prefilled):
//
//	prefill: PrefillTarget(S, wait), the pool's replicas each one FIFO server;
//	decode:  DecodeTarget(batch, output × full-batch step, wait) at the
//	         decode pool's mean lengths, the replica's batch slots as servers.
//
// The prefill pool's wait is the queue's part of its TTFT; the decode
// queue is given the same (the allowance covers only the transfer and the
// first step). A target stays the Policy's where that is lower (the
// replica model's error bound), or where the lengths, the Capacity or the
// prefill latency guards are unknown. The Policies are copies where
// changed (p is not modified). For serve and PairDecider alike.
func PairPolicies(p *Pair, r PairReading) Pair {
	var l PairDecider
	return l.policies(p, r)
}

// policies is PairPolicies on l's scratch Policies.
func (l *PairDecider) policies(p *Pair, r PairReading) Pair {
	q := *p
	if p.Prefill.Capacity == nil {
		return q
	}
	s := p.Prefill.Capacity.RequestSecondsCached(r.Prefill.Obs.MeanPrompt, 1, r.Prefill.Obs.PrefixHit)
	wait := PrefillWait(p.Prefill, s)
	q.Prefill = lowerDemand(p.Prefill, PrefillTarget(s, wait), &l.pre, &l.preMets)
	if c := p.Decode.Capacity; c != nil {
		pr, out := r.Decode.Obs.MeanPrompt, r.Decode.Obs.MeanOutput
		if pr > 0 && out > 0 {
			batch := slotsFor(c, pr, out)
			hold := c.RequestSeconds(pr, out) * float64(batch)
			q.Decode = lowerDemand(p.Decode, DecodeTarget(batch, hold, wait), &l.dec, &l.decMets)
		}
	}
	return q
}

// lowerDemand is p with its demand target lowered to t (p itself when t is
// unknown or not lower), built in scratch.
func lowerDemand(p *Policy, t float64, scratch *Policy, mets *[]Metric) *Policy {
	if math.IsNaN(t) || !(t >= minTarget) {
		return p
	}
	i := slices.IndexFunc(p.Metrics, func(m Metric) bool { return m.Signal == SignalDemand })
	if i < 0 || p.Metrics[i].Target <= t {
		return p
	}
	*mets = append((*mets)[:0], p.Metrics...)
	(*mets)[i].Target = t
	*scratch = *p
	scratch.Metrics = *mets
	return scratch
}

// slotsFor is the batch RequestSeconds charges requests of prompt and
// output tokens on c: min(MaxBatch, KV / (prompt + output)), at least 1.
func slotsFor(c *Capacity, prompt, output float64) int {
	return int(max(1, min(float64(c.MaxBatch), math.Floor(c.KVTokens/(prompt+output)))))
}
