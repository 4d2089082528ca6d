package tune

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/backtest"
)

// TestPartsCoveredAtZero: an hour of history on 30 s steps (points 0..120)
// whose counter has no sample from minute 50 to 60, inside the held-out
// last quarter (minutes 45..60, 15 min). A scale-to-zero target at zero
// replicas has no pod to export the counter: where the replicas query
// reads 0 that span is no outage (nothing was served, and the counters'
// increase spread over it is none), so it is not counted as a gap.
// By hand: replicas 1 throughout, or no replicas query: 10 of 15 min are
// gap, more than half, refused. Replicas 0 at points 100..120 (50 to 60
// min): no gap time, taken. Replicas 0 at points 100..104 (50 to 52 min):
// the four steps 50-52 min have 0 at both ends and are not counted; the
// step from point 104 (0) to 105 (1) is: 8 of 15 min, refused. Zero at
// points 100..110 (50 to 55 min): 5 of 15 min, taken.
func TestPartsCoveredAtZero(t *testing.T) {
	t0 := time.Date(2026, 1, 9, 15, 0, 0, 0, time.UTC)
	g := backtest.Grid{Start: t0, Step: 30 * time.Second, N: 120}
	cov := backtest.Coverage{Gaps: []backtest.Gap{{From: t0.Add(50 * time.Minute), To: t0.Add(60 * time.Minute)}}}
	replicas := func(zeroFrom, zeroTo int) []float64 {
		r := make([]float64, g.N+1)
		for i := range r {
			if i < zeroFrom || i > zeroTo {
				r[i] = 1
			}
		}
		return r
	}
	for _, tc := range []struct {
		name     string
		replicas []float64
		want     string // "" when taken
	}{
		{"no replicas query", nil, "has no sample for 10m0s of its 15m0s"},
		{"serving", replicas(1, 0), "has no sample for 10m0s of its 15m0s"},
		{"at zero", replicas(100, 120), ""},
		{"at zero 2 min", replicas(100, 104), "has no sample for 8m0s of its 15m0s"},
		{"at zero 5 min", replicas(100, 110), ""},
	} {
		err := PartsCovered(backtest.Workload{Grid: g, Coverage: cov, Replicas: tc.replicas}, DefaultHoldout)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v; want taken", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrHistoryGaps) || !strings.Contains(err.Error(), "the held-out part (2026-01-09T15:45:00Z..2026-01-09T16:00:00Z) "+tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}
