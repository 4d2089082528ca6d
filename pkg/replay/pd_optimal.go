package replay

import (
	"context"
	"io"
	"math"

	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/trace"
)

// The hindsight optimum of a P/D pair (`optimal` under --pd): two coupled
// searches, each with the pair's replay as the evaluator.
//
//  1. Prefill alone. The prefill pool does not depend on the decode pool
//     (the KV leaves it at the first token), so its schedule is the
//     single-pool `optimal` (optimal.go) of the requests with one output
//     token, against the SLO less the decode side's allowance
//     (pdAllowance: the transfer of a MaxBatchedTokens prompt and the
//     slowest first decode step).
//  2. Decode, the prefill schedule fixed. Seeds: the pair rule's decode
//     asks (`recommended`, recorded) and fixed:1 up to one above its peak;
//     the best on the pair's replay (fewest misses, then least replica
//     time of both pools) is descended (its plateaus lowered one replica
//     at a time while the misses do not grow) and capped (the lowest
//     ceiling that misses no more), as optimal.go does for one pool.
//  3. Prefill again, the decode schedule fixed: descended and capped on
//     the pair's replay. The whole `recommended` pair (both pools'
//     asks) is a candidate too, so it never beats `optimal`.
//
// What it certifies (PDBound): the prefill pool's bound (optimal_bound.go)
// on the one-token requests at the full SLO (a met request's prefill ends
// within it), plus the decode pool's busy time: each met request's output
// tokens cost at least StepTime(MaxBatch, 0) / MaxBatch replica-seconds
// (a step is no shorter than with no context, and a step's cost per
// sequence falls with the batch), counted for the requests whose decode
// must end by the trace's end (arrival + SLO + output × the slowest step
// <= end). The bound is loose where queueing and KV bind.

// PDBound is the certified lower bound beside a pair's `optimal`.
type PDBound struct {
	// Prefill is the prefill pool's bound (Bound: replica time and the
	// requests no schedule meets).
	Prefill Bound
	// DecodeSeconds is the decode pool's least replica time.
	DecodeSeconds float64
}

// ReplicaSeconds is the bound on both pools' replica time.
func (b PDBound) ReplicaSeconds() float64 { return b.Prefill.ReplicaSeconds + b.DecodeSeconds }

// pdSchedule is both pools' asks.
type pdSchedule struct {
	pre, dec *optimalCtl
	bound    *PDBound
}

func (c *pdSchedule) decide(now float64, _, _ recommend.Observation) (int, int) {
	return c.pre.Decide(now, recommend.Observation{}), c.dec.Decide(now, recommend.Observation{})
}

func (c *pdSchedule) pdBound() *PDBound { return c.bound }

// prefillOnly is src with every output set to one token: the prefill
// pool's requests (max_tokens=1).
func prefillOnly(src trace.Source) trace.Source {
	return trace.NewSource(src.Name, src.Duration, func() (trace.Reader, error) {
		rd, err := src.Open()
		if err != nil {
			return nil, err
		}
		return oneToken{rd}, nil
	})
}

type oneToken struct{ trace.Reader }

func (o oneToken) Next() (trace.Request, error) {
	q, err := o.Reader.Next()
	q.Output = min(q.Output, 1)
	return q, err
}

// pdRecorder records both pools' asks at each tick.
type pdRecorder struct {
	pdController
	period   float64
	pre, dec []int
}

func (r *pdRecorder) decide(now float64, op, od recommend.Observation) (int, int) {
	a, b := r.pdController.decide(now, op, od)
	k := int(math.Round(now / r.period))
	for len(r.pre) <= k {
		r.pre, r.dec = append(r.pre, 0), append(r.dec, 0)
	}
	r.pre[k], r.dec[k] = min(max(a, 0), MaxReplicas), min(max(b, 0), MaxReplicas)
	return a, b
}

// pdEval replays the pair under a schedule: misses and both pools'
// replica time.
func pdEval(ctx context.Context, e pdEnv, c *pdSchedule) (scheduleResult, error) {
	ps, err := newPDSim(quietPD(e), c, "optimal", c.pre.init, c.dec.init)
	if err != nil {
		return scheduleResult{}, err
	}
	defer ps.rd.Close()
	if err := ps.run(ctx); err != nil {
		return scheduleResult{}, err
	}
	r := ps.result("", "")
	return scheduleResult{misses: r.Misses(), seconds: r.ReplicaSeconds()}, nil
}

func quietPD(e pdEnv) pdEnv {
	e.pre.cfg.Timeline, e.pre.cfg.Progress = false, nil
	e.dec.cfg.Timeline, e.dec.cfg.Progress = false, nil
	return e
}

func constSchedule(period float64, n, periods int) *optimalCtl {
	c := &optimalCtl{period: period, init: n, d: make([]int, periods)}
	for i := range c.d {
		c.d[i] = n
	}
	return c
}

func buildPDOptimal(e pdEnv) (pdController, int, int, error) {
	ctx := e.pre.cfg.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	prog := progressPhases(e.pre.cfg.Progress)
	q := quietPD(e)
	// 1. Prefill alone.
	srcP := prefillOnly(e.src)
	pe := env{cfg: q.pre.cfg, sp: e.pre.sp, src: srcP}
	pe.cfg.SLOTTFT -= e.allowance
	pe.cfg.ctx = ctx
	pc, err := newOptimal(pe)
	if err != nil {
		return nil, 0, 0, err
	}
	preCtl := pc.(*optimalCtl)
	prog(0, 0.4)(1)
	pb, err := lowerBound(ctx, env{cfg: q.pre.cfg, sp: e.pre.sp, src: srcP})
	if err != nil {
		return nil, 0, 0, err
	}
	bound := &PDBound{Prefill: pb}
	if bound.DecodeSeconds, err = decodeBound(e); err != nil {
		return nil, 0, 0, err
	}
	// 2. Decode seeds: the pair rule's asks, recorded, and fixed counts.
	rc, ip, id, err := buildPDRecommended(q)
	if err != nil {
		return nil, 0, 0, err
	}
	rec := &pdRecorder{pdController: rc, period: e.pre.cfg.Period}
	rc.(*pdRecommended).warm(ip, id, e.pre.cfg.Epoch)
	ps, err := newPDSim(q, rec, "recommended", ip, id)
	if err != nil {
		return nil, 0, 0, err
	}
	err = ps.run(ctx)
	ps.rd.Close()
	if err != nil {
		return nil, 0, 0, err
	}
	recRes := ps.result("", "")
	recPair := &pdSchedule{pre: &optimalCtl{period: e.pre.cfg.Period, init: ip, d: rec.pre}, dec: &optimalCtl{period: e.pre.cfg.Period, init: id, d: rec.dec}}
	periods := len(rec.dec)
	peak := id
	for _, v := range rec.dec {
		peak = max(peak, v)
	}
	best := &pdSchedule{pre: preCtl, dec: recPair.dec}
	bestRes, err := pdEval(ctx, e, best)
	if err != nil {
		return nil, 0, 0, err
	}
	for k := 1; k <= peak+1; k++ {
		c := &pdSchedule{pre: preCtl, dec: constSchedule(e.pre.cfg.Period, k, periods)}
		r, err := pdEval(ctx, e, c)
		if err != nil {
			return nil, 0, 0, err
		}
		if r.better(bestRes) {
			best, bestRes = c, r
		}
	}
	if r := (scheduleResult{misses: recRes.Misses(), seconds: recRes.ReplicaSeconds()}); r.better(bestRes) {
		best, bestRes = recPair, r
	}
	prog(0, 0.55)(1)
	budget := min(max(int(optimalDescentWork/max(float64(pb.requests), 1)), 4), optimalDescents)
	// 2b and 3: descend and cap the decode schedule, then the prefill's.
	for i, role := range []roleSel{selDecode, selPrefill} {
		eval := func(c *optimalCtl) (scheduleResult, error) {
			return pdEval(ctx, e, role.with(best, c))
		}
		d, dres, err := descendWith(ctx, role.of(best), bestRes, budget, true, eval)
		if err != nil {
			return nil, 0, 0, err
		}
		if dres.better(bestRes) {
			best, bestRes = role.with(best, d), dres
		}
		if c, cres, ok, err := capWith(role.of(best), bestRes, eval); err != nil {
			return nil, 0, 0, err
		} else if ok && cres.better(bestRes) {
			best, bestRes = role.with(best, c), cres
		}
		prog(0, 0.55+0.2*float64(i+1))(1)
	}
	best.bound = bound
	return best, best.pre.init, best.dec.init, nil
}

// roleSel picks one pool's schedule of a pair.
type roleSel bool

const (
	selPrefill roleSel = false
	selDecode  roleSel = true
)

func (r roleSel) of(c *pdSchedule) *optimalCtl {
	if r == selDecode {
		return c.dec
	}
	return c.pre
}

func (r roleSel) with(c *pdSchedule, x *optimalCtl) *pdSchedule {
	n := *c
	if r == selDecode {
		n.dec = x
	} else {
		n.pre = x
	}
	return &n
}

// capWith bisects the lowest cap on one schedule that misses no more.
func capWith(ctl *optimalCtl, res scheduleResult, eval func(*optimalCtl) (scheduleResult, error)) (*optimalCtl, scheduleResult, bool, error) {
	peak := ctl.init
	for _, v := range ctl.d {
		peak = max(peak, v)
	}
	var best *optimalCtl
	var bestRes scheduleResult
	var err error
	bisect(0, peak, func(c int) bool {
		if err != nil {
			return true
		}
		n := &optimalCtl{period: ctl.period, init: min(ctl.init, c), d: make([]int, len(ctl.d))}
		for k, v := range ctl.d {
			n.d[k] = min(v, c)
		}
		var r scheduleResult
		if r, err = eval(n); err != nil {
			return true
		}
		if r.misses <= res.misses {
			best, bestRes = n, r
			return true
		}
		return false
	})
	return best, bestRes, best != nil && err == nil, err
}

// decodeBound is the decode pool's busy-time bound (see above).
func decodeBound(e pdEnv) (float64, error) {
	sp := e.dec.sp
	perToken := sp.m.StepTime(sp.maxBatch, 0) / float64(sp.maxBatch)
	slowest := sp.m.StepTime(sp.maxBatch, sp.kvCap)
	rd, err := e.src.Open()
	if err != nil {
		return 0, err
	}
	defer rd.Close()
	end := e.src.Duration
	type req struct {
		a   float64
		out int32
	}
	var all []req
	last := 0.0
	for {
		q, err := rd.Next()
		if err != nil {
			if err == io.EOF {
				break
			}
			return 0, err
		}
		last = q.Arrival
		if int64(q.Prompt)+int64(q.Output) > sp.kvCap || sp.m.PrefillTime(int(q.Prompt))+sp.overhead > e.dec.cfg.SLOTTFT {
			continue // rejected, or its prefill alone misses: no schedule must decode it in time
		}
		all = append(all, req{q.Arrival, q.Output})
	}
	if !(end > 0) {
		end = last
	}
	var w float64
	for _, q := range all {
		if q.a+e.dec.cfg.SLOTTFT+float64(q.out)*slowest <= end {
			w += float64(q.out) * perToken
		}
	}
	return w, nil
}
