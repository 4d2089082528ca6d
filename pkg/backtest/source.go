package backtest

import (
	"io"
	"math"
	"math/rand/v2"

	"github.com/infscale/infscale/pkg/trace"
)

// Source streams the workload as requests for the replay: second 0 is the
// grid's start; step j receives the whole number of arrivals that the
// running sum of Arrivals crosses (so the total is Requests rounded), at
// times spread like a Poisson process conditioned on that count (uniform
// order statistics, drawn from exponential spacings); token lengths are
// drawn from Prompt and Output. Every pass with the same seed yields the
// same requests.
func (w Workload) Source(name string, seed uint64) trace.Source {
	dur := float64(w.Grid.N) * w.Grid.Step.Seconds()
	return trace.NewSource(name, dur, func() (trace.Reader, error) {
		return &reader{w: w, rng: rand.New(rand.NewPCG(seed, 0x6261636b74657374)), j: 0}, nil
	})
}

type reader struct {
	w    Workload
	rng  *rand.Rand
	j    int     // current step
	cum  float64 // arrivals through step j
	made int64   // requests emitted through step j
	buf  []trace.Request
	i    int
}

func (r *reader) Next() (trace.Request, error) {
	for r.i >= len(r.buf) {
		if r.j >= r.w.Grid.N {
			return trace.Request{}, io.EOF
		}
		r.j++
		r.fill()
	}
	r.i++
	return r.buf[r.i-1], nil
}

// fill generates step j's requests into buf.
func (r *reader) fill() {
	r.cum += r.w.Arrivals[r.j]
	n := int64(math.Floor(r.cum+0.5)) - r.made
	r.made += max(n, 0)
	r.buf, r.i = r.buf[:0], 0
	if n <= 0 {
		return
	}
	st := r.w.Grid.Step.Seconds()
	t0 := float64(r.j-1) * st
	// n+1 exponential spacings normalised to the step: the n partial sums
	// are n sorted uniforms on (0, st).
	total := 0.0
	for k := int64(0); k < n; k++ {
		total += r.rng.ExpFloat64()
		r.buf = append(r.buf, trace.Request{Arrival: total})
	}
	total += r.rng.ExpFloat64()
	for k := range r.buf {
		r.buf[k].Arrival = t0 + r.buf[k].Arrival/total*st
		r.buf[k].Prompt = r.w.Prompt.Draw(r.rng)
		r.buf[k].Output = r.w.Output.Draw(r.rng)
	}
}

func (r *reader) Close() error { return nil }
