package trace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

// TestGeneratedDrawsCapped: the bound on a generated trace (MaxGenerated)
// was checked on its expected count alone, and synthetic:onoff,rate=50,
// duration=2h draws 12% above its 360,000 (its bursts and Pareto gaps):
// a spec just under the bound drew past it. Now a pass ends with an
// error naming the spec at the bound's next request. With the bound set to
// the spec's mean (360,000, 50 x 7,200 s), the pass serves exactly that
// many and then refuses the next, naming the spec and what to lower.
func TestGeneratedDrawsCapped(t *testing.T) {
	src, err := ParseContext(context.Background(), "synthetic:onoff,rate=50,duration=2h", Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	n, err := Count(context.Background(), src, math.MaxInt64)
	if err != nil || n <= 360000 {
		t.Fatalf("Count = %d, %v: want more than the mean 360,000 (the overshoot this bounds)", n, err)
	}
	r, err := src.Open()
	if err != nil {
		t.Fatal(err)
	}
	r.(*capped).most = 360000
	served := 0
	for {
		_, err = r.Next()
		if err != nil {
			break
		}
		served++
	}
	if err == io.EOF || served != 360000 {
		t.Fatalf("served %d, then %v; want 360000 and an error", served, err)
	}
	for _, s := range []string{`trace "synthetic:onoff,rate=50,`, "drew more than 360000 requests", "about 3.6e+05", "lower rate= or duration="} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q: want %q in it", err, s)
		}
	}
}

// TestGeneratedBoundIs: both errors of the bound (a spec refused for its
// mean: rate=1e6 over 1,000 s is 1e9 requests, more than 2^28; a pass that
// drew past it: 3 requests under a bound of 2) are ErrGeneratedBound to
// errors.Is, through a wrap, so tune exits 2 on them as simulate does.
func TestGeneratedBoundIs(t *testing.T) {
	_, err := ParseContext(context.Background(), "synthetic:poisson,rate=1e6,duration=1000", Options{Seed: 1})
	if !errors.Is(fmt.Errorf("tune: %w", err), ErrGeneratedBound) || !strings.Contains(err.Error(), "lower rate= or duration=") {
		t.Errorf("mean over the bound: %v, want ErrGeneratedBound naming the keys", err)
	}
	reqs := []Request{{Arrival: 1}, {Arrival: 2}, {Arrival: 3}}
	c := capDraws(&sliceReader{reqs: reqs}, "synthetic:step,low=1", 2).(*capped)
	c.most = 2
	for range 2 {
		if _, err := c.Next(); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.Next()
	if !errors.Is(fmt.Errorf("tune: %w", err), ErrGeneratedBound) || !strings.Contains(err.Error(), `trace "synthetic:step,low=1" drew more than 2 requests`) ||
		!strings.Contains(err.Error(), "lower low=, high= (or for=) or duration=") {
		t.Errorf("drawn past the bound: %v, want ErrGeneratedBound naming the spec and keys", err)
	}
}
