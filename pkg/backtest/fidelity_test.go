package backtest

import (
	"math"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replay"
)

func TestFidelity(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 120}
	tl := []replay.Sample{
		{T: 900, TTFTP95: 0.2, ArrivalRate: 1},
		{T: 1800, TTFTP95: 0.4, ArrivalRate: 3},
		{T: 2700, TTFTP95: math.NaN(), ArrivalRate: 0}, // no first token: left out
		{T: 4500, TTFTP95: 1, ArrivalRate: 2},
	}
	obs := []HourValue{{T: at(3600), V: 0.5}, {T: at(7200), V: 2}}
	f := fidelity(g, obs, tl)
	// Hour 1: (0.2×1 + 0.4×3) / 4 = 0.35 against 0.5: |error| 0.15, relative 0.3.
	// Hour 2: 1 against 2: |error| 1, relative 0.5. Mean |error| 0.575;
	// median of {0.3, 0.5} (upper middle) 0.5.
	if f == nil || f.Hours != 2 {
		t.Fatalf("fidelity %+v, want 2 hours", f)
	}
	near(t, "hour 1 simulated", f.Pairs[0].Simulated, 0.35, 1e-12)
	near(t, "mean abs error", f.MeanAbsErrorS, 0.575, 1e-12)
	near(t, "median rel error", f.MedianRelError, 0.5, 1e-12)
	if fidelity(g, nil, tl) != nil {
		t.Error("no observed hours: want nil")
	}
}
