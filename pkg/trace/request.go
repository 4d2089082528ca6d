package trace

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Request is one inference request of a trace. It is kept to 16 bytes: a
// week at 30 req/s is 18 million of them.
type Request struct {
	// Arrival is the time the request arrives, in seconds since the start of
	// the trace (the first request of a file trace arrives at 0).
	Arrival float64
	// Prompt is the prompt (input, context) length in tokens, >= 1.
	Prompt int32
	// Output is the number of tokens generated, >= 1 (the first one comes
	// from the prefill).
	Output int32
}

// Reader streams the requests of one pass over a trace.
type Reader interface {
	// Next returns the next request in arrival order (non-decreasing
	// Arrival), or io.EOF after the last one. Any other error is fatal for
	// the pass and names the file and line where it applies.
	Next() (Request, error)
	// Close releases the pass's resources (an open file).
	Close() error
}

// Source is a trace that can be read any number of times, each pass with its
// own Reader (the simulator runs one pass per policy, in parallel).
type Source struct {
	// Name describes the trace in reports ("reference", a file name, ...).
	Name string
	// Duration is the span the trace covers, in seconds: the replay accounts
	// replica time over [0, Duration]. 0 means "until the last arrival".
	Duration float64

	// expected is a generated trace's expected number of requests (the
	// integral of its rate); 0 for a file, unknown until read.
	expected float64
	open     func() (Reader, error)
}

// NewSource builds a Source from a function that opens a fresh pass; open
// must return readers that yield the same requests every time.
func NewSource(name string, duration float64, open func() (Reader, error)) Source {
	return Source{Name: name, Duration: duration, open: open}
}

// Open starts a pass over the trace.
func (s Source) Open() (Reader, error) {
	if s.open == nil {
		return nil, errors.New("trace: no source")
	}
	return s.open()
}

// ErrEmpty is returned (wrapped) for a trace without a single request.
var ErrEmpty = errors.New("trace has no requests")

// Check reads the whole trace once and returns the number of requests and
// the last arrival, or the first error (ErrEmpty for an empty trace;
// ctx's once it is done, looked at every CheckEvery requests). It
// validates a file before several passes start in parallel.
func Check(ctx context.Context, s Source) (n int64, last float64, err error) {
	r, err := s.Open()
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	r = WithContext(ctx, r)
	for {
		q, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, last, err
		}
		n++
		last = q.Arrival
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("%s: %w", s.Name, ErrEmpty)
	}
	return n, last, nil
}

// Count is the number of s's requests, at most limit (the pass stops
// there: a replay's backlog bound need not read the rest), or the pass's
// first error (ErrEmpty is not one: 0; ctx's once it is done, looked at
// every CheckEvery requests).
func Count(ctx context.Context, s Source, limit int64) (int64, error) {
	r, err := s.Open()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	r = WithContext(ctx, r)
	var n int64
	for n < limit {
		if _, err := r.Next(); err == io.EOF {
			break
		} else if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// sliceReader serves requests from memory (sorted traces, tests).
type sliceReader struct {
	reqs    []Request
	i       int
	skipped int64 // the rows the file's reader skipped (Sorted)
}

// Skipped is the rows the file's reader skipped (SkippedRows) while
// Sorted read it whole.
func (r *sliceReader) Skipped() int64 { return r.skipped }

func (r *sliceReader) Next() (Request, error) {
	if r.i >= len(r.reqs) {
		return Request{}, io.EOF
	}
	r.i++
	return r.reqs[r.i-1], nil
}

func (r *sliceReader) Close() error { return nil }

// fork is a copy of the pass at its position (forker).
func (r *sliceReader) fork() Reader {
	c := *r
	return &c
}

// FromSlice is a Source over requests already in memory, which must be in
// arrival order (it is not copied: do not modify it while passes run).
func FromSlice(name string, duration float64, reqs []Request) Source {
	return NewSource(name, duration, func() (Reader, error) { return &sliceReader{reqs: reqs}, nil })
}
