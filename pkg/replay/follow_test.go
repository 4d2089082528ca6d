package replay

import (
	"github.com/infscale/infscale/pkg/recommend"
	"math"
	"testing"
)

func TestFollowTimeline(t *testing.T) {
	p, err := Follow("actual", 60, []float64{2, math.NaN(), 5, 0})
	if err != nil {
		t.Fatal(err)
	}
	ctl, _ := p.build(env{})
	// Entry i covers [60i, 60i+60): the NaN entry holds 2, past the end the
	// last entry (0) holds.
	for _, c := range []struct {
		now  float64
		want int
	}{{0, 2}, {59, 2}, {60, 2}, {120, 5}, {179, 5}, {180, 0}, {1e6, 0}} {
		if got := ctl.Decide(c.now, recommend.Observation{}); got != c.want {
			t.Errorf("Decide(%v) = %d, want %d", c.now, got, c.want)
		}
	}
	if p.min != 2 {
		t.Errorf("initial replicas %d, want the first entry 2", p.min)
	}
	for _, bad := range [][]float64{nil, {-1}} {
		if _, err := Follow("x", 60, bad); err == nil {
			t.Errorf("Follow(%v): want an error", bad)
		}
	}
	if _, err := Follow("x", 0, []float64{1}); err == nil {
		t.Error("step 0: want an error")
	}
}
