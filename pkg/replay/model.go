package replay

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/infscale/infscale/pkg/recommend"
)

// Model is what the replay asks of a replica; *replica.Replica implements
// it. Times are float64 seconds.
type Model interface {
	// StepTime is one decode step for batch sequences holding contextTokens
	// tokens of KV in total. The replay assumes the form
	// max(a(batch) + b·contextTokens, StepTime(batch, 0)): memory-bound
	// linear in the context, with a compute floor (pkg/replica's model).
	StepTime(batch int, contextTokens int64) float64
	// PrefillTime is the time to prefill tokens prompt tokens.
	PrefillTime(tokens int) float64
	// KVCapacityTokens is the KV cache size in tokens of context.
	KVCapacityTokens() int64
	// MaxBatch is the most sequences running at once.
	MaxBatch() int
	// ColdStart is the time from adding a replica to it serving.
	ColdStart() float64
	// CPUPercent is the pod's CPU as a percentage of its request with
	// running sequences in the batch.
	CPUPercent(running int) float64
}

// speed is a Model decomposed once into tables for the hot path: the step
// time of batch b at context C is max(alpha[b] + beta·C, floor[b]).
type speed struct {
	m        Model
	beta     float64   // seconds per context token per step
	alpha    []float64 // intercept of the memory-bound line, by batch
	floor    []float64 // StepTime(b, 0): the compute floor, by batch
	maxBatch int
	kvCap    int64
	cold     float64
	cpu      []float64 // CPUPercent by running count
	overhead float64   // RequestOverhead, added to every TTFT
	role     poolRole  // roleDecode: the demand signal reads the decode role's capacity (pd.go)
}

// requestOverhead is implemented by a Model whose requests spend a fixed
// time before the scheduler sees them (*replica.Replica: RequestOverhead).
type requestOverhead interface{ RequestOverhead() float64 }

// probe is a context large enough that a step is memory-bound at any batch.
const probe = 1e9

func newSpeed(m Model) (*speed, error) {
	if m == nil {
		return nil, errors.New("replay: no replica model")
	}
	s := &speed{m: m, maxBatch: m.MaxBatch(), kvCap: m.KVCapacityTokens(), cold: m.ColdStart()}
	if s.maxBatch < 1 || s.kvCap < 1 || !(s.cold >= 0) {
		return nil, fmt.Errorf("replay: replica model with max batch %d, KV capacity %d tokens, cold start %g s: want >= 1, >= 1, >= 0", s.maxBatch, s.kvCap, s.cold)
	}
	s.beta = (m.StepTime(1, 2*probe) - m.StepTime(1, probe)) / probe
	s.alpha = make([]float64, s.maxBatch+1)
	s.floor = make([]float64, s.maxBatch+1)
	s.cpu = make([]float64, s.maxBatch+1)
	for b := 1; b <= s.maxBatch; b++ {
		s.alpha[b] = m.StepTime(b, probe) - s.beta*probe
		s.floor[b] = m.StepTime(b, 0)
		if !(s.floor[b] > 0) || math.IsInf(s.floor[b], 0) || s.beta < 0 {
			return nil, fmt.Errorf("replay: replica step time at batch %d is %g s: want a finite time > 0", b, s.floor[b])
		}
	}
	for b := range s.cpu {
		s.cpu[b] = m.CPUPercent(b)
	}
	if o, ok := m.(requestOverhead); ok {
		s.overhead = max(o.RequestOverhead(), 0)
	}
	return s, nil
}

// curve is the time of the steps of one decode phase with a fixed batch:
// step i (from 0) takes max(a + d·i, f), where a = alpha + beta·C0 and
// d = beta·batch (each step adds one token per sequence to the context).
type curve struct {
	a, d, f float64
	k       float64 // steps before the linear part rises above the floor
}

func (s *speed) curve(batch int, context int64) curve {
	var c curve
	s.setCurve(&c, batch, context)
	return c
}

// setCurve sets *c to s.curve(batch, context) in place (a replica's phase
// curve, without copying it back).
func (s *speed) setCurve(c *curve, batch int, context int64) {
	c.a, c.d, c.f = s.alpha[batch]+s.beta*float64(context), s.beta*float64(batch), s.floor[batch]
	switch {
	case c.a >= c.f:
		c.k = 0
	case c.d <= 0:
		c.k = math.Inf(1)
	default:
		c.k = math.Ceil((c.f - c.a) / c.d)
	}
}

// time is the duration of the first n steps.
func (c curve) time(n int64) float64 {
	x := float64(n)
	if x <= c.k {
		return x * c.f
	}
	// k floor steps, then steps k..n-1 on the line.
	m := x - c.k
	return c.k*c.f + m*(c.a+c.d*c.k) + c.d*m*(m-1)/2
}

// stepsBy is the number of whole steps done within elapsed seconds: the
// largest n with time(n) <= elapsed.
func (c curve) stepsBy(elapsed float64) int64 {
	n, _ := c.stepsByNext(elapsed)
	return n
}

// stepsByNext is stepsBy(elapsed) and time(stepsBy(elapsed)+1), the end
// of the step under way, which the search has computed already.
func (c curve) stepsByNext(elapsed float64) (int64, float64) {
	if elapsed <= 0 {
		return 0, c.time(1)
	}
	var n float64
	if c.k*c.f >= elapsed {
		n = math.Floor(elapsed / c.f)
	} else {
		e := elapsed - c.k*c.f
		b := c.a + c.d*c.k
		var m float64
		if c.d <= 0 {
			m = e / b
		} else {
			// d/2·m² + (b - d/2)·m - e = 0
			p := b - c.d/2
			m = 2 * e / (p + math.Sqrt(p*p+2*c.d*e))
		}
		n = c.k + math.Floor(m)
	}
	i := int64(n)
	for i > 0 && c.time(i) > elapsed {
		i--
	}
	next := c.time(i + 1)
	for next <= elapsed {
		i++
		next = c.time(i + 1)
	}
	return i, next
}

// forReplica is p with the replica's capacity when a metric needs it (the
// demand signal) and p has none; p itself otherwise.
func forReplica(p *recommend.Policy, s *speed) (*recommend.Policy, error) {
	if p.Capacity != nil || !slices.ContainsFunc(p.Metrics, func(m recommend.Metric) bool { return m.Signal == recommend.SignalDemand }) {
		return p, nil
	}
	c := *p
	c.Capacity = recommend.CapacityFrom(s.m)
	if s.role == roleDecode {
		c.Capacity = c.Capacity.ForRole(recommend.RoleDecode)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}
