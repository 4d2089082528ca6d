package trace

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/infscale/infscale/internal/membudget"
)

// RateScale compresses time by factor k (> 0): every arrival and the
// duration are divided by k, so the rate is k times the original and the
// token lengths are untouched. k = 2 replays an hour's requests in 30 min.
func RateScale(s Source, k float64) Source {
	if k == 1 {
		return s
	}
	return NewSource(fmt.Sprintf("%s x%g", s.Name, k), s.Duration/k, func() (Reader, error) {
		r, err := s.Open()
		if err != nil {
			return nil, err
		}
		return &scaled{Reader: r, k: k}, nil
	})
}

type scaled struct {
	Reader
	k float64
}

// Skipped is the skip count of the trace's pass (SkippedRows).
func (r *scaled) Skipped() int64 { return SkippedRows(r.Reader) }

// fork is a copy of the pass at its position (forker), nil when the
// trace's pass cannot be copied.
func (r *scaled) fork() Reader {
	c := fork(r.Reader)
	if c == nil {
		return nil
	}
	return &scaled{Reader: c, k: r.k}
}

func (r *scaled) Next() (Request, error) {
	q, err := r.Reader.Next()
	q.Arrival /= r.k
	return q, err
}

// WindowContext keeps the requests arriving in [start, end) seconds and
// shifts them so that start becomes 0; end <= 0 means "to the end of the
// trace". The window's duration is end-start (or what is left of the
// trace's). Its passes end with ctx's error once ctx is
// done while they skip the requests before start, looked at every
// CheckEvery skipped: a window at the end of a week of generated traffic
// (2^28 requests drawn to reach it) does not hold an interrupt for a
// minute. WithContext around a pass does not see that skip: it happens
// inside one Next.
//
// A trace whose pass can be copied at its position (a generated trace, one
// held in memory: forker) is skipped once, by the first pass opened (the
// others opened meanwhile wait for it), and every later pass starts from a
// copy of where it stopped: the same requests, without drawing the ones
// before start again. Another trace's passes each skip on their own.
func WindowContext(ctx context.Context, s Source, start, end float64) Source {
	d := 0.0
	switch {
	case end > 0:
		d = end - start
	case s.Duration > 0:
		d = max(s.Duration-start, 0)
	}
	var mu sync.Mutex
	var at *windowed // a pass stopped before the window's first request, never advanced; nil until one is
	return NewSource(fmt.Sprintf("%s [%gs,%s)", s.Name, start, endString(end)), d, func() (Reader, error) {
		mu.Lock()
		defer mu.Unlock()
		if at != nil {
			return at.fork(), nil
		}
		r, err := s.Open()
		if err != nil {
			return nil, err
		}
		w := &windowed{Reader: r, ctx: ctx, start: start, end: end}
		if start <= 0 {
			return w, nil
		}
		if fork(r) == nil {
			// Not copyable (a file's pass, RateScale over one): the pass
			// skips in its first Next, outside the lock, as the others do.
			return w, nil
		}
		if err := w.skip(); err != nil {
			r.Close()
			return nil, err
		}
		if c, ok := w.fork().(*windowed); ok {
			at = c
		}
		return w, nil
	})
}

func endString(end float64) string {
	if end <= 0 {
		return "end"
	}
	return fmt.Sprintf("%gs", end)
}

type windowed struct {
	Reader
	ctx        context.Context
	start, end float64
	// head is the first request at or after start when held (skip read
	// it), not yet served; eof when the trace ended before start.
	head      Request
	held, eof bool
}

// Skipped is the skip count of the trace's pass (SkippedRows), over the
// whole file read so far, inside the window or not.
func (r *windowed) Skipped() int64 { return SkippedRows(r.Reader) }

// fork is a copy of the pass at its position (forker), nil when the
// trace's pass cannot be copied.
func (r *windowed) fork() Reader {
	c := fork(r.Reader)
	if c == nil {
		return nil
	}
	w := *r
	w.Reader = c
	return &w
}

// skip reads up to the first request at or after start and holds it (eof
// when there is none), looking at ctx every CheckEvery requests skipped.
func (r *windowed) skip() error {
	for skipped := 1; ; skipped++ {
		q, err := r.Reader.Next()
		if err == io.EOF {
			r.eof = true
			return nil
		}
		if err != nil {
			return err
		}
		if q.Arrival >= r.start {
			r.head, r.held = q, true
			return nil
		}
		if skipped%CheckEvery == 0 {
			if err := r.ctx.Err(); err != nil {
				return err
			}
		}
	}
}

func (r *windowed) Next() (Request, error) {
	if !r.held && !r.eof {
		if err := r.skip(); err != nil {
			return Request{}, err
		}
	}
	if r.eof {
		return Request{}, io.EOF
	}
	q := r.head
	r.held = false
	if r.end > 0 && q.Arrival >= r.end {
		r.eof = true
		return Request{}, io.EOF
	}
	q.Arrival -= r.start
	return q, nil
}

// ParseWindow reads a --window value: "START:END", "START:" or ":END" or
// just "END" (from 0), each a span ParseSeconds accepts ("600", "10m", "1d").
func ParseWindow(v string) (start, end float64, err error) {
	a, b, ok := strings.Cut(v, ":")
	if !ok {
		a, b = "", v
	}
	if a != "" {
		if start, err = ParseSeconds(a); err != nil || start < 0 {
			return 0, 0, fmt.Errorf("window start %q: want seconds >= 0 or a duration like 10m", a)
		}
	}
	if b != "" {
		if end, err = ParseSeconds(b); err != nil || end <= start {
			return 0, 0, fmt.Errorf("window end %q: want a time after the start (%gs), seconds or a duration like 1h", b, start)
		}
	}
	return start, end, nil
}

// SortedContext reads the whole trace into memory and serves it in arrival order
// (stable: equal arrivals keep their file order). For traces whose rows are
// not in order (the readers refuse those otherwise). Readers skip their
// ordering check under it. Each pass reports the rows the file's
// reader skipped (SkippedRows). The rows are held in memory (16 bytes
// each): one that would take more than the memory budget (membudget, the
// process's memory limit less what it holds and a headroom) is an error
// naming the file, the rows read and what to do, before it is allocated.
// The read ends with ctx's error once ctx is done (looked at every
// CheckEvery rows): an interrupt does not wait for a 4 GiB file to be read.
func SortedContext(ctx context.Context, s Source) (Source, error) {
	return sorted(ctx, s, membudget.Now)
}

// sorted is SortedContext with the memory budget read from budget at each
// growth of the rows held.
func sorted(ctx context.Context, s Source, budget func() membudget.Budget) (Source, error) {
	r, err := s.open()
	if err != nil {
		return Source{}, err
	}
	defer r.Close()
	if u, ok := r.(interface{ unordered() }); ok {
		u.unordered()
	}
	rc := WithContext(ctx, r)
	var reqs []Request
	for {
		q, err := rc.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Source{}, err
		}
		if len(reqs) == cap(reqs) {
			// The next block of rows, with the ones held while they are
			// copied: refused before it is allocated, not killed after.
			next := cap(reqs) + cap(reqs)/4 + 4096
			if b := budget(); int64(next)*16 > b.Available {
				return Source{}, fmt.Errorf("%s: --sort holds the rows in memory (16 bytes each): %d rows read and more to come would need %.3g MiB, more than the %.3g MiB this process may still take (memory limit %.3g MiB); sort the file by arrival on disk instead (a generic CSV: sort -t, -k1,1g, its header kept first) and leave --sort out, or give the process more memory",
					s.Name, len(reqs), float64(next)*16/(1<<20), float64(b.Available)/(1<<20), float64(b.Limit)/(1<<20))
			}
			reqs = slices.Grow(reqs, next-len(reqs))
		}
		reqs = append(reqs, q)
	}
	if len(reqs) > 0 {
		if lo := slices.MinFunc(reqs, cmpArrival).Arrival; lo < 0 {
			for i := range reqs {
				reqs[i].Arrival -= lo // a file whose first row was not its earliest
			}
		}
	}
	slices.SortStableFunc(reqs, cmpArrival)
	skipped := SkippedRows(r)
	return NewSource(s.Name, s.Duration, func() (Reader, error) { return &sliceReader{reqs: reqs, skipped: skipped}, nil }), nil
}

func cmpArrival(a, b Request) int {
	switch {
	case a.Arrival < b.Arrival:
		return -1
	case a.Arrival > b.Arrival:
		return 1
	}
	return 0
}
