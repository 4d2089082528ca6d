package replay

import (
	"context"
	"errors"

	"github.com/infscale/infscale/pkg/trace"
)

// Latency is one request's measured latencies in a replay, in seconds
// (the model's request overhead included, as a client measures them).
type Latency struct {
	// Arrival is when the request arrived (seconds since the trace start).
	Arrival float64
	// TTFT is arrival to first token; E2E arrival to last token.
	TTFT, E2E float64
	// Output is the request's output tokens.
	Output int32
}

// Latencies replays src through n always-ready replicas (a fixed fleet, no
// policy) and returns every completed request's latencies in first-token
// order: what a load generator measures against a fixed deployment
// (`infscale accuracy`). Requests with equal output lengths complete in
// the order of their first tokens on one replica, which is how a
// completion is matched to its arrival; with n > 1 the same holds per
// replica only, so the E2E values are exact for n = 1 and approximate
// (the right multiset within each output length) otherwise. Errors: as
// Run's.
func Latencies(ctx context.Context, src trace.Source, n int, cfg Config) ([]Latency, error) {
	if n < 1 || n > MaxReplicas {
		return nil, errors.New("replay: latencies need 1..MaxReplicas replicas")
	}
	pol := Policy{Name: "fixed", min: n, exact: true, build: func(env) (Controller, error) { return fixed(n), nil }}
	cfg.ctx = ctx
	cfg.Initial = n
	s, err := newSim(src, pol, cfg)
	if err != nil {
		return nil, err
	}
	defer s.rd.Close()
	// A model whose tokens reach the client some steps after their own
	// (*replica.Replica: OutputLagSteps) delays every first and last token
	// by that many steps at the batch's step time.
	lagSteps := 0.0
	if l, ok := cfg.Model.(interface{ OutputLagSteps() float64 }); ok {
		lagSteps = max(l.OutputLagSteps(), 0)
	}
	lag := func() float64 {
		if lagSteps == 0 || len(s.reps) == 0 {
			return 0
		}
		r := s.reps[0]
		b := len(r.run) + len(r.pre)
		ctx := r.context()
		for _, p := range r.pre {
			ctx += int64(p.prompt)
		}
		return lagSteps * s.sp.m.StepTime(max(b, 1), ctx)
	}
	var out []Latency
	// open holds, per output length, the indices into out of the requests
	// with a first token and no completion yet, oldest first.
	open := map[int32][]int{}
	s.onFirst = func(now float64, p pending) {
		out = append(out, Latency{Arrival: p.arrival, TTFT: now - p.arrival + s.sp.overhead + lag(), E2E: -1, Output: p.output})
		if p.output <= 1 {
			return // completes in the same instant: onDone follows at once
		}
		open[p.output] = append(open[p.output], len(out)-1)
	}
	s.onDone = func(now float64, output int32) {
		if output <= 1 {
			l := &out[len(out)-1]
			l.E2E = l.TTFT
			return
		}
		q := open[output]
		if len(q) == 0 {
			return
		}
		l := &out[q[0]]
		open[output] = q[1:]
		l.E2E = now - l.Arrival + s.sp.overhead + lag()
	}
	if _, err := s.replay(ctx); err != nil {
		return nil, err
	}
	done := out[:0]
	for _, l := range out {
		if l.E2E >= 0 {
			done = append(done, l)
		}
	}
	return done, nil
}
