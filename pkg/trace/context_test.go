package trace

import (
	"context"
	"errors"
	"io"
	"testing"
)

// countingReader serves n requests a second apart, counting the reads, and
// calls at(i) before the i-th (from 1); it reports skip rows skipped.
type countingReader struct {
	n, read int
	skip    int64
	at      func(i int)
}

func (r *countingReader) Next() (Request, error) {
	if r.read == r.n {
		return Request{}, io.EOF
	}
	r.read++
	if r.at != nil {
		r.at(r.read)
	}
	return Request{Arrival: float64(r.read), Prompt: 1, Output: 1}, nil
}
func (r *countingReader) Close() error   { return nil }
func (r *countingReader) Skipped() int64 { return r.skip }

// TestCheckCancelled: Check read a whole file (up to 4 GiB) whatever its
// context; now it ends at the first look after the context is done. The
// context is cancelled while the 10th request is read: the next look is
// before request CheckEvery+1 (65,537), so exactly CheckEvery requests
// are read of the 3 x CheckEvery.
func TestCheckCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rd := &countingReader{n: 3 * CheckEvery, at: func(i int) {
		if i == 10 {
			cancel()
		}
	}}
	src := NewSource("big.csv", 0, func() (Reader, error) { return rd, nil })
	if _, _, err := Check(ctx, src); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if rd.read != CheckEvery {
		t.Errorf("read %d requests, want %d", rd.read, CheckEvery)
	}
	// Not cancelled: the whole trace, 3 x 65,536 requests, the last at
	// second 196,608.
	rd = &countingReader{n: 3 * CheckEvery}
	if n, last, err := Check(context.Background(), src); err != nil || n != 3*CheckEvery || last != 3*CheckEvery {
		t.Errorf("Check = %d, %g, %v; want %d, %d, nil", n, last, err, 3*CheckEvery, 3*CheckEvery)
	}
}

// TestWithContextSkipped: the wrapper reports the rows its reader skipped
// (a BurstGPT file's Request tokens 0), and a context done before the
// first request ends the pass at once.
func TestWithContextSkipped(t *testing.T) {
	r := WithContext(context.Background(), &countingReader{n: 1, skip: 7})
	if got := SkippedRows(r); got != 7 {
		t.Errorf("SkippedRows = %d, want 7", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	inner := &countingReader{n: 5}
	if _, err := WithContext(ctx, inner).Next(); !errors.Is(err, context.Canceled) || inner.read != 0 {
		t.Errorf("done context: err %v after %d reads; want context.Canceled before any", err, inner.read)
	}
}

// TestSortedCancelled: --sort read a whole file into memory whatever the
// context (SIGINT waited 7.9 s on a 500 MB CSV); cancelled at the 10th
// row, it ends at the next look, after CheckEvery rows of 3 x that.
func TestSortedCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rd := &countingReader{n: 3 * CheckEvery, at: func(i int) {
		if i == 10 {
			cancel()
		}
	}}
	src := NewSource("big.csv", 0, func() (Reader, error) { return rd, nil })
	if _, err := SortedContext(ctx, src); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if rd.read != CheckEvery {
		t.Errorf("read %d rows, want %d", rd.read, CheckEvery)
	}
}

// TestWindowContextCancelled: a window's pass skipped every request
// before its start inside one Next, whatever the context (simulate
// --window 604000:604800 on synthetic:poisson,rate=440,duration=7d held
// an interrupt for 56 s). Cancelled while the 10th of 3 x CheckEvery
// requests is read, all before the window, the pass ends at the look
// after CheckEvery (65,536) skipped: exactly that many are read.
func TestWindowContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rd := &countingReader{n: 3 * CheckEvery, at: func(i int) {
		if i == 10 {
			cancel()
		}
	}}
	src := NewSource("big.csv", 0, func() (Reader, error) { return rd, nil })
	r, err := WindowContext(ctx, src, 1e9, 0).Open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if rd.read != CheckEvery {
		t.Errorf("read %d requests, want %d", rd.read, CheckEvery)
	}
	// Not cancelled: the window [196600, end) of requests at seconds 1 to
	// 196,608 holds the last 9 (196,600 to 196,608), shifted to 0 to 8.
	rd = &countingReader{n: 3 * CheckEvery}
	r, _ = WindowContext(context.Background(), src, 196600, 0).Open()
	var got []float64
	for {
		q, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, q.Arrival)
	}
	if len(got) != 9 || got[0] != 0 || got[8] != 8 {
		t.Errorf("window arrivals %v, want 0 to 8", got)
	}
}
