package tune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/infscale/infscale/pkg/trace"
)

// ErrShortTrace is wrapped by Run's error for a trace that cannot be split
// in time into a tuning part and a held-out part that both have requests:
// one request, requests all at one instant, or none on one side of the
// split. The message says which, with the numbers.
var ErrShortTrace = errors.New("trace too short to tune on")

// splitCheck reads src once and returns nil when the tuning part [0,
// split) and the held-out part [split, dur] both have requests, else an
// error wrapping ErrShortTrace that says what the trace is (trace.ErrEmpty
// for no request at all).
func splitCheck(ctx context.Context, src trace.Source, dur, split, holdout float64) error {
	var n, before int64
	first, last := math.Inf(1), math.Inf(-1)
	if err := each(ctx, src, func(q trace.Request) {
		n++
		if q.Arrival < split {
			before++
		}
		first, last = min(first, q.Arrival), max(last, q.Arrival)
	}); err != nil {
		return err
	}
	parts := fmt.Sprintf("tune replays a tuning part (the first %g%% of the trace's span) and judges the winner on a held-out part (the last %g%%), so both need requests", 100*(1-holdout), 100*holdout)
	switch {
	case n == 0:
		return fmt.Errorf("%s: %w", src.Name, trace.ErrEmpty)
	case n == 1:
		return fmt.Errorf("%s: %w: it has one request (arriving at %g s); %s: give a trace of many requests over time", src.Name, ErrShortTrace, ms(first), parts)
	case !(dur > 0) || first == last:
		return fmt.Errorf("%s: %w: its %d requests all arrive at %g s, a span of 0 s; %s", src.Name, ErrShortTrace, n, ms(first), parts)
	case before == 0:
		return fmt.Errorf("%s: %w: the tuning part (0 to %g s) has no request (the %d requests arrive from %g s to %g s); %s", src.Name, ErrShortTrace, ms(split), n, ms(first), ms(last), parts)
	case before == n:
		return fmt.Errorf("%s: %w: the held-out part (%g s to %g s) has no request (the %d requests arrive from %g s to %g s); %s", src.Name, ErrShortTrace, ms(split), ms(dur), n, ms(first), ms(last), parts)
	}
	return nil
}

// ms rounds seconds to the millisecond for a message (0.1474806800841032
// reads 0.147).
func ms(s float64) float64 { return math.Round(s*1000) / 1000 }

// each calls f on every request of one pass over src, or returns ctx's
// error once it is done (checked every trace.CheckEvery requests: a pass over
// 2^28 generated requests takes tens of seconds, which a SIGTERM waited
// out, and one over 10^10 ran on for ten minutes after it).
func each(ctx context.Context, src trace.Source, f func(trace.Request)) error {
	rd, err := src.Open()
	if err != nil {
		return err
	}
	defer rd.Close()
	rd = trace.WithContext(ctx, rd)
	for {
		q, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		f(q)
	}
}
