package replay

import (
	"math"
	"sort"
)

// hist is a log-linear histogram (HDR-style) for quantiles of many values
// in little memory: each power of two from 2^-14 s (61 µs) to 2^20 s is
// split into 256 linear sub-buckets read straight from the float's bits, so
// a quantile is within 0.2% of the exact order statistic and adding a value
// costs no logarithm.
type hist struct {
	counts []int64
	n      int64
}

const (
	histMinExp = -14
	histMaxExp = 20
	histSub    = 8 // bits of mantissa per power of two: 256 sub-buckets
)

var histBuckets = (histMaxExp-histMinExp)<<histSub + 2

// histMin is 2^histMinExp, the lowest bucket's upper edge (a constant:
// math.Ldexp is a call).
const histMin = 1.0 / (1 << -histMinExp)

func histIndex(x float64) int {
	if !(x >= histMin) {
		return 0
	}
	b := math.Float64bits(x)
	exp := int(b>>52&0x7ff) - 1023
	if exp >= histMaxExp {
		return histBuckets - 1
	}
	return 1 + (exp-histMinExp)<<histSub + int(b>>(52-histSub)&(1<<histSub-1))
}

func (h *hist) add(x float64) {
	if h.counts == nil {
		h.counts = make([]int64, histBuckets)
	}
	h.counts[histIndex(x)]++
	h.n++
}

// quantile returns the q-quantile (0..1), NaN when empty: the middle of the
// bucket holding the ceil(q·n)-th value.
func (h *hist) quantile(q float64) float64 {
	if h.n == 0 {
		return math.NaN()
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var c int64
	for i, k := range h.counts {
		c += k
		if c >= rank {
			if i == 0 {
				return histMin / 2
			}
			j := i - 1
			exp := j>>histSub + histMinExp
			sub := j & (1<<histSub - 1)
			return math.Ldexp(1+(float64(sub)+0.5)/(1<<histSub), exp)
		}
	}
	return math.NaN()
}

// ttftBuckets are vLLM's vllm:time_to_first_token_seconds bucket bounds
// (pkg/modelserver's TTFTBuckets, held here so that the replay does not
// import the query builder's dependencies; TestBucketsAreModelServers
// holds the two equal): the window quantile a ttft policy sees is computed
// from them with Prometheus's histogram_quantile interpolation, as in
// production.
var ttftBuckets = newBuckets(0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)

// queueBuckets are vLLM's vllm:request_queue_time_seconds bucket bounds
// (its request latency buckets: pkg/modelserver's QueueTimeBuckets, as
// ttftBuckets; pkg/fleet writes the same): the queuewait signal reads its
// quantile from them as in production, where a wait of a few milliseconds
// reads as up to 0.3 s (the lowest bucket, interpolated from 0).
var queueBuckets = newBuckets(0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)

// buckets is a histogram's bucket bounds (increasing, +Inf implied last)
// with a table that finds a value's bucket from its binary exponent.
type buckets struct {
	bounds []float64
	// start[e] is the first bucket whose bound is at least
	// 2^(e+bucketMinExp): a value in [2^x, 2^(x+1)) lies in it or a few
	// buckets after.
	start [bucketMaxExp - bucketMinExp]uint8
}

// bucketMinExp and bucketMaxExp bound the powers of two a bucket table
// covers: from below the lowest bound to above the highest of both sets.
const (
	bucketMinExp = -10 // 2^-10 < 0.001
	bucketMaxExp = 13  // 2^13 > 7680
	bucketLow    = 1.0 / (1 << -bucketMinExp)
	bucketHigh   = 1 << bucketMaxExp
)

func newBuckets(bounds ...float64) *buckets {
	b := &buckets{bounds: bounds}
	for e := range b.start {
		b.start[e] = uint8(sort.SearchFloat64s(bounds, math.Ldexp(1, e+bucketMinExp)))
	}
	return b
}

// index is v's bucket: the first whose bound is at least v, len(bounds)
// (+Inf) when none is (NaN too). The value's binary exponent picks where
// to start looking.
func (b *buckets) index(v float64) int {
	i := 0
	if v >= bucketLow && v < bucketHigh {
		i = int(b.start[int(math.Float64bits(v)>>52)-1023-bucketMinExp])
	}
	for i < len(b.bounds) && !(v <= b.bounds[i]) {
		i++
	}
	return i
}

// window is a sliding histogram over the last slots periods, in a model
// server's buckets.
type window struct {
	b      *buckets
	slots  [][]float64 // per period, per bucket (+Inf last)
	ids    []int64     // the period index each slot holds
	period float64
	last   int       // the slot add wrote last: most adds fall in its period
	lo, hi float64   // exactly the times of period ids[last] (spanOf)
	cur    []float64 // slots[last]
}

func newWindow(b *buckets, span, period float64) *window {
	n := max(1, int(math.Ceil(span/period))) + 1 // the current, partial period too
	w := &window{b: b, slots: make([][]float64, n), ids: make([]int64, n), period: period}
	for i := range w.slots {
		w.slots[i] = make([]float64, len(b.bounds)+1)
		w.ids[i] = -1
	}
	return w
}

func (w *window) add(t, v float64) {
	if !(t >= w.lo && t < w.hi) {
		w.turn(t)
	}
	w.cur[w.b.index(v)]++
}

// turn points last at the slot of t's period, cleared when it held an
// older one: add's slow path, the division, at most once per period.
func (w *window) turn(t float64) {
	id := int64(t / w.period)
	if w.ids[w.last] != id {
		s := int(id % int64(len(w.slots)))
		if w.ids[s] != id {
			clear(w.slots[s])
			w.ids[s] = id
		}
		w.last = s
	}
	w.lo, w.hi = spanOf(id, w.period)
	w.cur = w.slots[w.last]
}

// quantile is histogram_quantile(q) over the periods ending at t (the
// current one and the ones before it in the window); NaN when no request
// was recorded there (the ttft and queuewait metrics abstain).
func (w *window) quantile(t, q float64) float64 {
	now := int64(t / w.period)
	bs := w.b.bounds
	counts := make([]float64, len(bs)+1)
	var n float64
	for s, id := range w.ids {
		if id >= 0 && id > now-int64(len(w.slots)) && id <= now {
			for i, c := range w.slots[s] {
				counts[i] += c
				n += c
			}
		}
	}
	if n == 0 {
		return math.NaN()
	}
	rank := q * n
	var c float64
	for i, k := range counts {
		if c+k >= rank && k > 0 {
			if i == len(bs) {
				return bs[len(bs)-1] // Prometheus: the highest finite bound
			}
			lo := 0.0
			if i > 0 {
				lo = bs[i-1]
			}
			return lo + (bs[i]-lo)*(rank-c)/k
		}
		c += k
	}
	return math.NaN()
}
