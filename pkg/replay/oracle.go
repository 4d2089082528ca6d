package replay

import (
	"context"
	"math"

	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/trace"
)

// OracleUtilization is the share of a replica's batch slots the oracle fills
// at most: the mean concurrency per replica it plans for is
// OracleUtilization × MaxBatch, so that Poisson bursts within a bucket and
// the prefills that stall decoding still find a free slot.
const OracleUtilization = 0.7

// oracleBucket is the oracle's planning resolution in seconds.
const oracleBucket = 15.0

// oracleCtl is clairvoyant: it reads the trace ahead (its own pass) and
// knows the cold start. At each decision it plans for the demand of every
// 15 s bucket from now until a replica started now would serve plus one
// period (buy what will be needed before it is needed, keep nothing
// longer), and asks for the most replicas any of those buckets needs. A
// bucket's need is the fewest replicas whose mean-value model (Little's law
// with prefill stalls, mva) keeps the mean concurrency per replica within
// OracleUtilization × the sequences a replica holds (MaxBatch, or fewer
// when the KV cache binds). It is an approximate lower bound on
// replica time at zero misses: approximate because the model is a mean and
// buckets are coarse, a bound because no causal policy knows the future.
type oracleCtl struct {
	rd      trace.Reader
	sp      *speed
	horizon float64
	min     int
	max     int

	next   trace.Request
	have   bool
	ctx    context.Context // nil: never cancelled
	reads  uint64          // requests read, for the checkpoint
	base   int64           // bucket index of buckets[0]
	count  []float64       // arrivals per bucket from base
	prompt []float64       // prompt tokens per bucket
	output []float64       // output tokens per bucket
}

func newOracle(e env, lo, hi int) (Controller, error) {
	rd, err := e.src.Open()
	if err != nil {
		return nil, err
	}
	c := &oracleCtl{rd: rd, sp: e.sp, horizon: e.sp.cold + e.cfg.Period, min: lo, max: hi, ctx: e.cfg.ctx}
	c.pull()
	return c, nil
}

func (c *oracleCtl) pull() {
	q, err := c.rd.Next()
	c.next, c.have = q, err == nil
	if err != nil {
		c.rd.Close()
	}
}

func (c *oracleCtl) Decide(now float64, _ recommend.Observation) int {
	first := int64(math.Floor(now / oracleBucket))
	last := int64(math.Floor((now + c.horizon) / oracleBucket))
	// Drop buckets in the past, read the trace up to the horizon.
	if drop := int(first - c.base); drop > 0 {
		drop = min(drop, len(c.count))
		c.count, c.prompt, c.output = c.count[drop:], c.prompt[drop:], c.output[drop:]
		c.base = first
	}
	for c.have && int64(c.next.Arrival/oracleBucket) <= last {
		// A dense trace holds millions of requests within the horizon:
		// a cancel stops the reading (the replay then returns ctx's error).
		if c.reads++; c.reads%checkpointEvery == 0 && c.ctx != nil && c.ctx.Err() != nil {
			break
		}
		i := int(int64(c.next.Arrival/oracleBucket) - c.base)
		// A request that can never fit a replica's KV cache is rejected on
		// arrival (sim.arrive): no number of replicas serves it.
		if i >= 0 && int64(c.next.Prompt)+int64(c.next.Output) <= c.sp.kvCap {
			for len(c.count) <= i {
				c.count, c.prompt, c.output = append(c.count, 0), append(c.prompt, 0), append(c.output, 0)
			}
			c.count[i]++
			c.prompt[i] += float64(c.next.Prompt)
			c.output[i] += float64(c.next.Output)
		}
		c.pull()
	}
	want := 0
	for i := 0; i < len(c.count) && c.base+int64(i) <= last; i++ {
		if c.count[i] == 0 {
			continue
		}
		n := c.count[i]
		want = max(want, c.need(n/oracleBucket, c.prompt[i]/n, c.output[i]/n))
	}
	return min(max(want, c.min), c.max)
}

// need is the fewest replicas that serve rate req/s of mean prompt p and
// output o tokens within the utilisation bound.
func (c *oracleCtl) need(rate, p, o float64) int {
	// A replica holds at most MaxBatch sequences and, as admission reserves
	// prompt + output, KV capacity / (p + o) of them.
	slots := min(float64(c.sp.maxBatch), float64(c.sp.kvCap)/(p+o))
	for n := 1; n < MaxReplicas; n++ {
		if l, ok := c.mva(rate/float64(n), p, o); ok && l <= OracleUtilization*slots {
			return n
		}
	}
	return MaxReplicas
}

// mva is the mean concurrency of one replica at lambda req/s: the share of
// time spent prefilling is f = lambda × prefill(p); decoding pauses then,
// so a token takes step(L)/(1-f), and by Little's law
// L = lambda × (prefill(p) + (o-1) × step(L)/(1-f)), solved by fixed-point
// iteration (the right side grows with L). ok is false when the replica
// cannot keep up.
func (c *oracleCtl) mva(lambda, p, o float64) (float64, bool) {
	pre := c.sp.m.PrefillTime(int(math.Round(p)))
	f := lambda * pre
	if f >= 0.95 {
		return 0, false
	}
	l := 0.0
	for range 100 {
		b := min(max(int(math.Ceil(l)), 1), c.sp.maxBatch)
		ctx := l * (p + o/2)
		step := math.Max(c.sp.alpha[b]+c.sp.beta*ctx, c.sp.floor[b])
		nl := lambda * (pre + (o-1)*step/(1-f))
		if nl > float64(c.sp.maxBatch) {
			return nl, false
		}
		if math.Abs(nl-l) < 1e-6 {
			return nl, true
		}
		l = nl
	}
	return l, true
}

// parseOracle reads oracle[,min=N,max=N] (min defaults to 0: knowing the
// future, the oracle goes to zero when no request comes within a cold start).
func parseOracle(full, s string, parts []part, off int) (Policy, error) {
	lo, hi, err := bounds(full, parts[1:], off, 0)
	if err != nil {
		return Policy{}, err
	}
	return Policy{Name: s, min: max(lo, 1), max: hi, build: func(e env) (Controller, error) { return newOracle(e, lo, hi) }}, nil
}
