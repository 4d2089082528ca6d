package trace

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
)

// all reads a pass to its end.
func all(t *testing.T, s Source) []Request {
	t.Helper()
	r, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []Request
	for {
		q, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, q)
	}
}

// cut is the window [a, b) of reqs (b 0: to the end) shifted by a, worked
// out from the whole trace, as Window's doc comment says.
func cut(reqs []Request, a, b float64) []Request {
	var out []Request
	for _, q := range reqs {
		if q.Arrival >= a && (b <= 0 || q.Arrival < b) {
			q.Arrival -= a
			out = append(out, q)
		}
	}
	return out
}

// TestWindowSkipsOnce: every pass of a window over a generated trace drew
// all the requests before its start again (each of simulate's ten
// policies drew 2^28 to reach the end of a week). Now the first pass
// skips them and the others start from a copy of where it stopped: the
// trace is opened once for any number of passes, and each pass yields
// exactly the requests the whole trace holds in the window, shifted by its
// start, for a Poisson, a diurnal (linear pieces), an on-off trace (its
// pending bursts copied) and RateScale over them.
func TestWindowSkipsOnce(t *testing.T) {
	diurnal := DefaultDiurnal
	diurnal.Duration = 7200
	onoff := OnOff{Rate: 20, On: 60, Gap: 120, Alpha: 1.5, Burst: Tokens{Lo: 2, Hi: 8}, Spread: 5, Duration: 7200, Prompt: Tokens{Lo: 10, Hi: 20}, Output: Tokens{Lo: 5, Hi: 9}, Seed: 3}
	for _, base := range []Source{
		Synthetic{Rate: 30, Duration: 7200, Prompt: Tokens{Lo: 1, Hi: 100}, Output: Tokens{Lo: 1, Hi: 100}, Seed: 7}.Source(),
		diurnal.Shape().Source("diurnal", 5),
		onoff.Source(),
		RateScale(Synthetic{Rate: 30, Duration: 7200, Prompt: Tokens{Lo: 1, Hi: 100}, Output: Tokens{Lo: 1, Hi: 100}, Seed: 7}.Source(), 2),
	} {
		whole := all(t, base)
		opens := 0
		counted := NewSource(base.Name, base.Duration, func() (Reader, error) { opens++; return base.Open() })
		for _, w := range [][2]float64{{2000, 5000}, {1000, 0}, {9000, 0}} {
			opens = 0
			win := Window(counted, w[0], w[1])
			want := cut(whole, w[0], w[1])
			if len(want) == 0 && w[0] < base.Duration {
				t.Fatalf("%s [%g, %g): no request in the window: a test of nothing", base.Name, w[0], w[1])
			}
			for pass := range 3 {
				if got := all(t, win); !slices.Equal(got, want) {
					t.Fatalf("%s [%g, %g) pass %d: %d requests, want the whole trace's %d in the window", base.Name, w[0], w[1], pass, len(got), len(want))
				}
			}
			if opens != 1 {
				t.Errorf("%s [%g, %g): the trace opened %d times for 3 passes, want 1", base.Name, w[0], w[1], opens)
			}
		}
	}
}

// TestWindowSkipsOnceParallel: passes opened at once (simulate's policies)
// wait for the first one's skip and read the same requests; a file's
// passes (no copy) each skip on their own, as before.
func TestWindowSkipsOnceParallel(t *testing.T) {
	base := Synthetic{Rate: 30, Duration: 3600, Prompt: Tokens{Lo: 1, Hi: 100}, Output: Tokens{Lo: 1, Hi: 100}, Seed: 2}.Source()
	want := cut(all(t, base), 1800, 2400)
	win := WindowContext(context.Background(), base, 1800, 2400)
	var wg sync.WaitGroup
	got := make([][]Request, 8)
	for i := range got {
		wg.Go(func() {
			r, err := win.Open()
			if err != nil {
				t.Error(err)
				return
			}
			for {
				q, err := r.Next()
				if err != nil {
					break
				}
				got[i] = append(got[i], q)
			}
		})
	}
	wg.Wait()
	for i, g := range got {
		if !slices.Equal(g, want) {
			t.Errorf("pass %d: %d requests, want %d", i, len(g), len(want))
		}
	}

	opens := 0
	file := NewSource("big.csv", 0, func() (Reader, error) { opens++; return &countingReader{n: 100}, nil })
	for range 2 {
		// Requests at seconds 1..100: [90, end) holds 90..100, shifted 0..10.
		if got := all(t, Window(file, 90, 0)); len(got) != 11 || got[0].Arrival != 0 || got[10].Arrival != 10 {
			t.Fatalf("file window: %v", got)
		}
	}
	if opens != 2 {
		t.Errorf("file opened %d times for 2 passes, want 2", opens)
	}
}
