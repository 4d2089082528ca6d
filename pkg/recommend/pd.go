package recommend

import (
	"math"
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
// prefill replica's requests carry max_tokens=1, so RequestSeconds(prompt,
// 1) on c itself is its cost: c is returned unchanged. A decode replica
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
	return pairRatio(c, c.ForRole(RoleDecode), prompt, output)
}

// pairRatio is PairRatio with each role's own capacity (a pair whose
// roles run different replicas).
func pairRatio(prefill, decode *Capacity, prompt, output float64) float64 {
	if !(prompt > 0) || !(output > 0) || math.IsInf(prompt, 0) || math.IsInf(output, 0) {
		return math.NaN()
	}
	return decode.RequestSeconds(prompt, output) / prefill.RequestSeconds(prompt, 1)
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
}

// Decide is one cycle for both roles, written into dp and dd. Each role
// decides alone (Decider.Decide on its Policy and Reading); then the
// ratio bound raises, never lowers, each role to what the other role's
// demand implies:
//
//	ratio        = decode RequestSeconds(prompt, output) / prefill RequestSeconds(prompt, 1)
//	               at the decode pool's mean lengths, each on its role's
//	               Policy.Capacity (Capacity.PairRatio for one replica)
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
	l.Prefill.Decide(dp, p.Prefill, r.Prefill, now)
	l.Decode.Decide(dd, p.Decode, r.Decode, now)
	return Bound(dp, dd, &l.Prefill, &l.Decode, p, r)
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
	b.Ratio = pairRatio(p.Prefill.Capacity, p.Decode.Capacity, r.Decode.Obs.MeanPrompt, r.Decode.Obs.MeanOutput)
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
	raise := func(d *Decision, l *Decider, p *Policy, floor int) {
		if floor <= d.Desired {
			return
		}
		d.Desired = max(d.Desired, min(floor, p.Max))
		l.Desired, l.HasDesired = d.Desired, true
	}
	raise(dd, ld, p.Decode, b.DecodeFloor)
	raise(dp, lp, p.Prefill, b.PrefillFloor)
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
