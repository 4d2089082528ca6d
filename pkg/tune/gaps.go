package tune

import (
	"context"
	"fmt"

	"github.com/infscale/infscale/pkg/trace"
)

// StretchGaps is s with every silent gap (no arrival for at least minGap
// seconds between two requests) k times as long (k >= 1): the requests
// after a gap move later by (k-1) times its length, bursts keep their
// shape and the rate within them. It reads s once to count the gaps and
// the stretched span: n is how many gaps it stretched (0: the copy is s
// itself). Errors: s's read error, ctx's.
func StretchGaps(ctx context.Context, s trace.Source, k, minGap float64) (out trace.Source, n int, err error) {
	if !(k > 1) || !(minGap > 0) {
		return s, 0, nil
	}
	added, last := 0.0, 0.0
	first := true
	if err := each(ctx, s, func(q trace.Request) {
		if !first && q.Arrival-last >= minGap {
			n++
			added += (k - 1) * (q.Arrival - last)
		}
		first, last = false, q.Arrival
	}); err != nil {
		return trace.Source{}, 0, err
	}
	if n == 0 {
		return s, 0, nil
	}
	d := s.Duration
	if d > 0 {
		d += added
	}
	return trace.NewSource(fmt.Sprintf("%s gaps x%g", s.Name, k), d, func() (trace.Reader, error) {
		r, err := s.Open()
		if err != nil {
			return nil, err
		}
		return &stretched{Reader: r, k: k, minGap: minGap}, nil
	}), n, nil
}

type stretched struct {
	trace.Reader
	k, minGap   float64
	last, shift float64
	started     bool
}

func (r *stretched) Next() (trace.Request, error) {
	q, err := r.Reader.Next()
	if err != nil {
		return q, err
	}
	if r.started && q.Arrival-r.last >= r.minGap {
		r.shift += (r.k - 1) * (q.Arrival - r.last)
	}
	r.started, r.last = true, q.Arrival
	q.Arrival += r.shift
	return q, nil
}
