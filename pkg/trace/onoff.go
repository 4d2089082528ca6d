package trace

import (
	"container/heap"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// OnOff is synthetic on-off traffic, code-completion-like: busy periods of
// bursts separated by silent gaps whose lengths are heavy-tailed (Pareto).
//
//   - A busy period lasts an exponential time of mean On seconds.
//   - In it, bursts start as a Poisson process; a burst is Burst.Lo..Burst.Hi
//     requests (uniform), each arriving at the burst's start plus a uniform
//     offset in [0, Spread) seconds.
//   - The burst rate is set so that the whole trace averages Rate req/s:
//     bursts/s = Rate × (On + Gap) / On / Burst.Mean().
//   - A silent gap follows the busy period's last arrival: Pareto with
//     shape Alpha (> 1) and mean Gap, so its minimum is Gap × (Alpha-1)/Alpha
//     and P(gap > x) = (min/x)^Alpha above it.
//
// With the defaults (2.5 req/s, 60 s busy, 90 s mean gap, Alpha 1.5: gaps of
// at least 30 s) an hour has about 3600/150 = 24 gaps over 30 s: the shape
// of code-completion traffic, bursts of 5-20 requests between silences of
// 30-300 s.
type OnOff struct {
	// Rate is the mean arrival rate over the whole trace, req/s (> 0).
	Rate float64
	// On is the mean busy period and Gap the mean silent gap, seconds (> 0).
	On, Gap float64
	// Alpha is the Pareto shape of the gaps (> 1; smaller is heavier-tailed).
	Alpha float64
	// Burst is the requests per burst (uniform Lo..Hi).
	Burst Tokens
	// Spread is the span a burst's requests arrive over, seconds (>= 0).
	Spread float64
	// Duration is the span in seconds (> 0).
	Duration float64
	// Prompt and Output are the token-length distributions.
	Prompt, Output Tokens
	// Seed fixes the draws.
	Seed uint64
}

// DefaultOnOff is what unset synthetic:onoff fields take: 2.5 req/s on
// average, 60 s busy periods, 90 s mean gaps (Pareto shape 1.5), bursts of
// 5-20 requests over 2 s, an hour, the reference trace's token lengths.
var DefaultOnOff = OnOff{Rate: 2.5, On: 60, Gap: 90, Alpha: 1.5, Burst: Tokens{Lo: 5, Hi: 20}, Spread: 2, Duration: 3600,
	Prompt: ReferenceShape.Prompt, Output: ReferenceShape.Output, Seed: 1}

// GapMin is the shortest gap: the Pareto scale Gap × (Alpha-1)/Alpha.
func (o OnOff) GapMin() float64 { return o.Gap * (o.Alpha - 1) / o.Alpha }

// String is the spec form.
func (o OnOff) String() string {
	return fmt.Sprintf("synthetic:onoff,rate=%g,on=%gs,gap=%gs,alpha=%g,burst=%s,spread=%gs,duration=%gs,prompt=%s,output=%s,seed=%d",
		o.Rate, o.On, o.Gap, o.Alpha, o.Burst, o.Spread, o.Duration, o.Prompt, o.Output, o.Seed)
}

// Source generates the traffic; every pass yields the same requests.
func (o OnOff) Source() Source {
	expected := o.Rate * o.Duration // the burst rate makes the mean Rate
	src := NewSource(o.String(), o.Duration, func() (Reader, error) {
		rng, pcg := newRNG(o.Seed)
		return capDraws(&onoffReader{o: o, rng: rng, pcg: pcg}, o.String(), expected), nil
	})
	src.expected = expected
	return src
}

type onoffReader struct {
	o    OnOff
	rng  *rand.Rand
	pcg  *rand.PCG // rng's state (fork)
	t    float64   // start of the next busy period
	busy bool      // within a busy period: end, next, last and perBurst hold
	// end is the busy period's end, next the start of its next burst (none
	// from end on), last its latest arrival, perBurst its bursts a second.
	end, next, last, perBurst float64
	// pend holds the drawn requests not yet due, earliest first (ties in
	// the order drawn): those of the bursts within Spread of next, not the
	// whole busy period (R × (on + gap) requests: 1.5e10 at rate=1e8).
	pend onoffHeap
	seq  int
}

func (r *onoffReader) Close() error { return nil }

// fork is a copy of the pass at its position (forker).
func (r *onoffReader) fork() Reader {
	c := *r
	c.rng, c.pcg = copyRNG(r.pcg)
	c.pend = slices.Clone(r.pend)
	return &c
}

func (r *onoffReader) Next() (Request, error) {
	o := r.o
	for {
		if !r.busy {
			if r.t >= o.Duration {
				return Request{}, io.EOF
			}
			r.busy = true
			r.end = r.t + r.rng.ExpFloat64()*o.On
			r.perBurst = o.Rate * (o.On + o.Gap) / o.On / o.Burst.Mean()
			r.last = r.t
			r.next = r.t + r.rng.ExpFloat64()/r.perBurst
			continue
		}
		// Every later burst's requests arrive at or after next, and were
		// drawn later: a request due by then goes first.
		if len(r.pend) > 0 && (r.next >= r.end || r.pend[0].Arrival <= r.next) {
			return heap.Pop(&r.pend).(onoffItem).Request, nil
		}
		if r.next >= r.end {
			// Pareto by inversion: min / U^(1/alpha), U in (0, 1].
			u := 1 - r.rng.Float64()
			r.t = max(r.end, r.last) + o.GapMin()/math.Pow(u, 1/o.Alpha)
			r.busy = false
			continue
		}
		n := o.Burst.Draw(r.rng)
		for range n {
			a := r.next + r.rng.Float64()*o.Spread
			if a >= o.Duration {
				continue
			}
			heap.Push(&r.pend, onoffItem{Request{Arrival: a, Prompt: o.Prompt.Draw(r.rng), Output: o.Output.Draw(r.rng)}, r.seq})
			r.seq++
			r.last = max(r.last, a)
		}
		r.next += r.rng.ExpFloat64() / r.perBurst
	}
}

// onoffItem is a drawn request and its draw order, which breaks ties.
type onoffItem struct {
	Request
	seq int
}

// onoffHeap is a min-heap of drawn requests by (arrival, draw order).
type onoffHeap []onoffItem

func (h onoffHeap) Len() int { return len(h) }
func (h onoffHeap) Less(i, j int) bool {
	if h[i].Arrival != h[j].Arrival {
		return h[i].Arrival < h[j].Arrival
	}
	return h[i].seq < h[j].seq
}
func (h onoffHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *onoffHeap) Push(x any)   { *h = append(*h, x.(onoffItem)) }
func (h *onoffHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// parseOnOff reads synthetic:onoff,... (the part after "synthetic:"):
// keys rate (req/s), on, gap, spread, duration (spans: seconds or 90s, 1h,
// 7d), alpha (> 1), burst, prompt, output (N or LO-HI) and seed, all
// optional (DefaultOnOff; seed --seed). Errors name the field's position
// (1-based, comma-separated) and what is allowed.
func parseOnOff(spec string, seed uint64) (OnOff, error) {
	o := DefaultOnOff
	o.Seed = seed
	const keys = "rate, on, gap, alpha, burst, spread, duration, prompt, output or seed"
	for i, f := range strings.Split(spec, ",")[1:] {
		pos := i + 2
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return o, fmt.Errorf("synthetic field %d %q: want key=value with key %s", pos, f, keys)
		}
		switch k {
		case "rate", "alpha":
			x, err := strconv.ParseFloat(v, 64)
			if k == "rate" && (err != nil || !(x > 0 && x < 1e9)) {
				return o, fmt.Errorf("synthetic field %d rate=%q: want requests per second, more than 0 and less than 1e9", pos, v)
			}
			if k == "alpha" && (err != nil || !(x > 1 && x <= 100)) {
				return o, fmt.Errorf("synthetic field %d alpha=%q: want the gaps' Pareto shape, more than 1 (a finite mean) and at most 100", pos, v)
			}
			if k == "rate" {
				o.Rate = x
			} else {
				o.Alpha = x
			}
		case "on", "gap", "spread", "duration":
			x, err := ParseSeconds(v)
			if err != nil || !(x >= 0 && x < 1e9) || (k != "spread" && x == 0) {
				return o, fmt.Errorf("synthetic field %d %s=%q: want a span (seconds, or 90s, 1h, 7d), more than 0 (spread: 0 or more) and less than 1e9", pos, k, v)
			}
			*map[string]*float64{"on": &o.On, "gap": &o.Gap, "spread": &o.Spread, "duration": &o.Duration}[k] = x
		case "burst", "prompt", "output":
			t, err := ParseTokens(v)
			if err != nil && k == "burst" {
				return o, fmt.Errorf("synthetic field %d burst=%q: want requests per burst N >= 1 or a uniform range LO-HI with 1 <= LO <= HI", pos, v)
			}
			if err != nil {
				return o, fmt.Errorf("synthetic field %d %s=%v", pos, k, err)
			}
			*map[string]*Tokens{"burst": &o.Burst, "prompt": &o.Prompt, "output": &o.Output}[k] = t
		case "seed":
			s, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return o, fmt.Errorf("synthetic field %d seed=%q: want an unsigned integer", pos, v)
			}
			o.Seed = s
		default:
			return o, fmt.Errorf("synthetic field %d %q: unknown key, want %s", pos, k, keys)
		}
	}
	// A busy period holds its whole burst rate, Rate x (On + Gap) / On, so a
	// gap or busy period past the trace's duration would pack the average of a
	// span the trace never reaches into one period (gap=1000h in 1 h: about
	// 4 million requests).
	if o.On > o.Duration || o.Gap > o.Duration {
		return o, fmt.Errorf("synthetic onoff on=%gs, gap=%gs: want each at most the duration (%gs); lengthen duration= for longer gaps", o.On, o.Gap, o.Duration)
	}
	if o.Spread > o.On {
		return o, fmt.Errorf("synthetic onoff spread=%gs: want at most the busy period on=%gs (a burst's arrivals spread past it lower the average rate)", o.Spread, o.On)
	}
	// The reader holds the requests of the bursts within one spread of the
	// next burst: past a bound, a spec within rate's range ran out of memory.
	if held := o.Rate*(o.On+o.Gap)/o.On*o.Spread + float64(o.Burst.Hi); held > onoffMaxHeld {
		return o, fmt.Errorf("synthetic onoff rate=%g, spread=%gs, burst=%s: about %.3g requests arrive within one spread (rate x (on + gap) / on x spread, plus the largest burst), more than the %d the generator holds at once; lower rate= or spread= (spread=0: a burst's requests at one instant)",
			o.Rate, o.Spread, o.Burst, held, onoffMaxHeld)
	}
	return o, nil
}

// onoffMaxHeld bounds the requests an onoff reader holds at once (about 32
// bytes each, per policy replaying the trace).
const onoffMaxHeld = 1 << 20
