package trace

import (
	"errors"
	"io"
	"runtime"
	"testing"
	"time"
)

// countReader yields n requests with Arrival i, then err (io.EOF when nil).
type countReader struct {
	n, i   int
	err    error
	closed int
}

func (r *countReader) Next() (Request, error) {
	if r.i >= r.n {
		if r.err != nil {
			return Request{}, r.err
		}
		return Request{}, io.EOF
	}
	r.i++
	return Request{Arrival: float64(r.i - 1), Prompt: int32(r.i), Output: 1}, nil
}

func (r *countReader) Close() error { r.closed++; return nil }

// TestReadAheadSameSequence: every request in order, then the reader's own
// error, on both sides of the batch boundaries; Close closes the reader once.
func TestReadAheadSameSequence(t *testing.T) {
	bad := errors.New("line 7: bad arrival")
	for _, n := range []int{0, 1, ReadAheadBatch - 1, ReadAheadBatch, ReadAheadBatch + 1, 3*ReadAheadBatch + 5} {
		for _, end := range []error{nil, bad} {
			src := &countReader{n: n, err: end}
			rd := ReadAhead(src)
			for i := 0; i < n; i++ {
				q, err := rd.Next()
				if err != nil {
					t.Fatalf("n=%d: request %d: %v", n, i, err)
				}
				if q.Arrival != float64(i) || q.Prompt != int32(i+1) {
					t.Fatalf("n=%d: request %d is %+v", n, i, q)
				}
			}
			want := io.EOF
			if end != nil {
				want = bad
			}
			for range 2 { // the end repeats
				if _, err := rd.Next(); err != want {
					t.Fatalf("n=%d: after the last request: %v, want %v", n, err, want)
				}
			}
			if err := rd.Close(); err != nil || src.closed != 1 {
				t.Fatalf("n=%d: Close: %v, the reader closed %d times", n, err, src.closed)
			}
		}
	}
}

// TestReadAheadCloseEarly: closing before the end stops the goroutine (no
// leak), and a Next after Close errors instead of hanging.
func TestReadAheadCloseEarly(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 50 {
		src := &countReader{n: 10 * ReadAheadBatch}
		rd := ReadAhead(src)
		if _, err := rd.Next(); err != nil {
			t.Fatal(err)
		}
		if err := rd.Close(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			for {
				if _, err := rd.Next(); err != nil {
					done <- err
					return
				}
			}
		}()
		select {
		case err := <-done:
			if err == io.EOF {
				t.Fatal("Next after Close returned io.EOF, want an error saying it is closed")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Next after Close hangs")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after closing 50 read-aheads, %d before", n, before)
	}
}
