package main

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// countedReader serves n requests a second apart and cancels cancel when
// the 10th is read.
type countedReader struct {
	n, read int
	cancel  func()
}

func (r *countedReader) Next() (trace.Request, error) {
	if r.read == r.n {
		return trace.Request{}, io.EOF
	}
	if r.read++; r.read == 10 {
		r.cancel()
	}
	return trace.Request{Arrival: float64(r.read), Prompt: 1, Output: 1}, nil
}
func (r *countedReader) Close() error { return nil }

// TestScanTraceCancelled: simulate's and load's up-front scan read a
// whole file whatever the context (Ctrl-C on a 500 MB CSV of 30 million
// rows waited 5.7 s). Cancelled at the 10th request, it ends at the next
// look, after trace.CheckEvery (65,536) requests of 3 x that.
func TestScanTraceCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rd := &countedReader{n: 3 * trace.CheckEvery, cancel: cancel}
	src := trace.NewSource("big.csv", 0, func() (trace.Reader, error) { return rd, nil })
	if _, _, _, _, err := scanTrace(ctx, src, 0, 0, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if rd.read != trace.CheckEvery {
		t.Errorf("read %d requests, want %d", rd.read, trace.CheckEvery)
	}
}
