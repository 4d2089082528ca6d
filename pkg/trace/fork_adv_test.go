package trace

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestWindowForkSpecs: through ParseContext, as simulate and tune open a
// trace, every kind of generated trace with --rate-scale and --window
// together yields, on each of 3 passes after the first and on 4 opened at
// once, exactly the requests the rate-scaled trace holds in the window
// shifted by its start (cut: Window's doc comment), an on-off window
// starting inside a busy period (bursts pending) among them.
func TestWindowForkSpecs(t *testing.T) {
	for _, spec := range []string{
		"synthetic:poisson,rate=20,duration=2h",
		"synthetic:step,low=5,high=40,at=30m,for=20m,duration=2h",
		"synthetic:diurnal,trough=5,peak=30,duration=2h",
		"synthetic:onoff,rate=20,on=60,gap=120,spread=5,duration=2h",
	} {
		base, err := ParseContext(context.Background(), spec, Options{Seed: 4, RateScale: 2})
		if err != nil {
			t.Fatal(err)
		}
		whole := all(t, base)
		// Scaled by 2, the trace spans 3,600 s: [1000, 2500) and [1000, end).
		for _, w := range [][2]float64{{1000, 2500}, {1000, 0}} {
			win, err := ParseContext(context.Background(), spec, Options{Seed: 4, RateScale: 2, WindowStart: w[0], WindowEnd: w[1]})
			if err != nil {
				t.Fatal(err)
			}
			want := cut(whole, w[0], w[1])
			if len(want) < 100 {
				t.Fatalf("%s %v: %d requests in the window, a weak test", spec, w, len(want))
			}
			for pass := range 3 {
				if got := all(t, win); !slices.Equal(got, want) {
					t.Fatalf("%s %v pass %d: %d requests, want the %d the whole trace holds there", spec, w, pass, len(got), len(want))
				}
			}
			// A fresh window's passes opened at once.
			win, _ = ParseContext(context.Background(), spec, Options{Seed: 4, RateScale: 2, WindowStart: w[0], WindowEnd: w[1]})
			got := make([][]Request, 4)
			var wg sync.WaitGroup
			for i := range got {
				wg.Go(func() {
					r, err := win.Open()
					if err != nil {
						t.Error(err)
						return
					}
					defer r.Close()
					for q, err := r.Next(); err == nil; q, err = r.Next() {
						got[i] = append(got[i], q)
					}
				})
			}
			wg.Wait()
			for i, g := range got {
				if !slices.Equal(g, want) {
					t.Errorf("%s %v concurrent pass %d: %d requests, want %d", spec, w, i, len(g), len(want))
				}
			}
		}
	}
}

// TestWindowForkSorted: --sort holds the file in memory (a copyable pass):
// rows at 5, 1, 3, 9, 7 s sorted are 1, 3, 5, 7, 9; the window [3, 8)
// holds 3, 5 and 7, shifted to 0, 2 and 4, on every pass.
func TestWindowForkSorted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(path, []byte(GenericHeader+"\n5,50,5\n1,10,1\n3,30,3\n9,90,9\n7,70,7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := ParseContext(context.Background(), path, Options{Sort: true, WindowStart: 3, WindowEnd: 8})
	if err != nil {
		t.Fatal(err)
	}
	want := []Request{{Arrival: 0, Prompt: 30, Output: 3}, {Arrival: 2, Prompt: 50, Output: 5}, {Arrival: 4, Prompt: 70, Output: 7}}
	for pass := range 3 {
		if got := all(t, src); !slices.Equal(got, want) {
			t.Fatalf("pass %d: %v, want %v", pass, got, want)
		}
	}
}

// TestWindowForkEmpty: a window past the trace's end, or between its
// requests, is empty on every pass, and the trace (in memory: 1, 2 and
// 50 s) is opened once; [10, end) holds 50, shifted to 40.
func TestWindowForkEmpty(t *testing.T) {
	reqs := []Request{{Arrival: 1, Prompt: 1, Output: 1}, {Arrival: 2, Prompt: 2, Output: 2}, {Arrival: 50, Prompt: 3, Output: 3}}
	for _, c := range []struct {
		a, b float64
		want []Request
	}{
		{100, 0, nil},
		{100, 200, nil},
		{10, 20, nil},
		{10, 0, []Request{{Arrival: 40, Prompt: 3, Output: 3}}},
	} {
		opens := 0
		src := NewSource("mem", 60, func() (Reader, error) { opens++; return &sliceReader{reqs: reqs}, nil })
		win := Window(src, c.a, c.b)
		for pass := range 3 {
			if got := all(t, win); !slices.Equal(got, c.want) {
				t.Fatalf("[%g, %g) pass %d: %v, want %v", c.a, c.b, pass, got, c.want)
			}
		}
		if opens != 1 {
			t.Errorf("[%g, %g): opened %d times for 3 passes, want 1", c.a, c.b, opens)
		}
	}
}

// forkCounting is countingReader with a copy (forker): requests a second
// apart, at(i) called before the i-th of each copy's reads.
type forkCounting struct{ countingReader }

func (r *forkCounting) fork() Reader { c := *r; return &c }

// TestWindowForkCancelled: the first pass of a window over a copyable
// trace, cancelled while it skips (at the 10th of 3 x CheckEvery requests,
// all before the window), fails at the look after CheckEvery skipped and
// keeps no half-skipped position: a later open under the same (done)
// context fails too, and a window whose context is live still yields the
// last 9 requests (196,600 to 196,608 s, shifted to 0 to 8).
func TestWindowForkCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rd *forkCounting
	src := NewSource("mem", 0, func() (Reader, error) {
		rd = &forkCounting{countingReader{n: 3 * CheckEvery, at: func(i int) {
			if i == 10 {
				cancel()
			}
		}}}
		return rd, nil
	})
	win := WindowContext(ctx, src, 196600, 0)
	if _, err := all2(win); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if rd.read != CheckEvery {
		t.Errorf("read %d before the cancel was seen, want %d", rd.read, CheckEvery)
	}
	if _, err := all2(win); !errors.Is(err, context.Canceled) {
		t.Fatalf("second pass: err = %v, want context.Canceled (no half-skipped position reused)", err)
	}
	live := WindowContext(context.Background(), NewSource("mem", 0, func() (Reader, error) {
		return &forkCounting{countingReader{n: 3 * CheckEvery}}, nil
	}), 196600, 0)
	for range 2 {
		got, err := all2(live)
		if err != nil || len(got) != 9 || got[0].Arrival != 0 || got[8].Arrival != 8 {
			t.Fatalf("live window: %d requests (%v), err %v; want 0 to 8", len(got), got, err)
		}
	}
}

// all2 is all returning the pass's error instead of failing.
func all2(s Source) ([]Request, error) {
	r, err := s.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Request
	for {
		q, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, q)
	}
}

// TestWindowScaledFileNoSkipInOpen: a window over --rate-scale over a
// file (a pass that cannot be copied, though its RateScale wrapper has a
// fork method) skipped inside Open, holding the window's lock: the
// passes simulate and tune open at once read the file's start one after
// another. Open reads nothing now; the skip happens in the first Next,
// and the pass yields requests 1..100 s halved (0.5..50 s) from 40 s:
// 40 to 50 in steps of 0.5 (21), shifted to 0 to 10.
func TestWindowScaledFileNoSkipInOpen(t *testing.T) {
	var rd *countingReader
	file := NewSource("big.csv", 0, func() (Reader, error) { rd = &countingReader{n: 100}; return rd, nil })
	win := Window(RateScale(file, 2), 40, 0)
	for range 2 {
		r, err := win.Open()
		if err != nil {
			t.Fatal(err)
		}
		if rd.read != 0 {
			t.Errorf("Open read %d requests, want 0 (the skip is the pass's, not the lock holder's)", rd.read)
		}
		var got []float64
		for q, err := r.Next(); err == nil; q, err = r.Next() {
			got = append(got, q.Arrival)
		}
		if len(got) != 21 || got[0] != 0 || got[1] != 0.5 || got[20] != 10 {
			t.Fatalf("arrivals %v, want 0 to 10 in steps of 0.5", got)
		}
	}
}
