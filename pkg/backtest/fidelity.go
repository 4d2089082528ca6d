package backtest

import (
	"math"
	"slices"
	"time"

	"github.com/infscale/infscale/pkg/replay"
)

// Fidelity compares, hour by hour, the p95 TTFT observed in production
// with the one simulated when replaying the actual replica timeline: how
// far the other rows can be trusted.
type Fidelity struct {
	// Hours is the number of hours with both values.
	Hours int
	// MeanAbsErrorS is the mean |simulated - observed| p95, seconds;
	// MedianRelError the median |simulated - observed| / observed.
	MeanAbsErrorS  float64
	MedianRelError float64
	// Pairs are the per-hour values (T: end of the hour).
	Pairs []FidelityHour
}

// FidelityHour is one hour's observed and simulated p95 TTFT, seconds.
type FidelityHour struct {
	T         time.Time
	Observed  float64
	Simulated float64
}

// fidelity pairs the observed hourly p95 with the simulated one. The
// simulated hour's p95 is approximated by the arrival-weighted mean of the
// timeline periods' p95 inside the hour (the replay reports p95 per
// period, not per hour). nil when no hour has both.
func fidelity(g Grid, observed []HourValue, tl []replay.Sample) *Fidelity {
	if len(observed) == 0 || len(tl) == 0 {
		return nil
	}
	f := &Fidelity{}
	var rels []float64
	k := 0
	for _, o := range observed {
		if math.IsNaN(o.V) || math.IsInf(o.V, 0) {
			continue
		}
		hi := o.T.Sub(g.Start).Seconds()
		lo := hi - 3600
		var sum, wsum float64
		for k < len(tl) && tl[k].T <= lo {
			k++
		}
		for i := k; i < len(tl) && tl[i].T <= hi; i++ {
			s := tl[i]
			if math.IsNaN(s.TTFTP95) || !(s.ArrivalRate > 0) {
				continue
			}
			sum += s.TTFTP95 * s.ArrivalRate
			wsum += s.ArrivalRate
		}
		if wsum == 0 {
			continue
		}
		sim := sum / wsum
		f.Pairs = append(f.Pairs, FidelityHour{T: o.T, Observed: o.V, Simulated: sim})
		f.MeanAbsErrorS += math.Abs(sim - o.V)
		if o.V > 0 {
			rels = append(rels, math.Abs(sim-o.V)/o.V)
		}
	}
	f.Hours = len(f.Pairs)
	if f.Hours == 0 {
		return nil
	}
	f.MeanAbsErrorS /= float64(f.Hours)
	f.MedianRelError = math.NaN()
	if len(rels) > 0 {
		slices.Sort(rels)
		f.MedianRelError = rels[len(rels)/2]
	}
	return f
}
