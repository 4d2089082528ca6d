package trace

import (
	"context"
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
