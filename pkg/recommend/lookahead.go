package recommend

import (
	"math"
	"time"
)

// lookaheadSpan is how many lookahead durations of demand history the trend
// is fitted over.
const lookaheadSpan = 2

// project records demand (the first additive metric's total, in requests)
// and projects it over the lookahead L:
//
//	slope     = least-squares slope of demand over time, in requests/s, over
//	            the samples of the last 2·L (including this one, which
//	            replaces a sample at the same instant); 0 with fewer than 2
//	            samples
//	projected = demand + max(0, slope) × L
//
// Only a rising trend counts: lookahead buys replicas before they are
// needed and never removes any (a falling trend is left to the scale-down
// window). It returns the projection, the slope and the samples used.
func (p *Policy) project(st *State, demand float64, now time.Time) (projected, slope float64, n int) {
	st.Demand = pruneDemand(st.Demand, now.Add(-lookaheadSpan*p.Lookahead))
	if n := len(st.Demand); n > 0 && st.Demand[n-1].At.Equal(now) {
		st.Demand[n-1].Demand = demand // a repeated decision at the same instant replaces its sample
	} else {
		st.Demand = append(st.Demand, DemandSample{At: now, Demand: demand})
	}
	n = len(st.Demand)
	if n < 2 {
		return demand, 0, n
	}
	// Fit over t in seconds relative to now (small numbers, no precision loss).
	var st_, sy, stt, sty float64
	for _, s := range st.Demand {
		t := s.At.Sub(now).Seconds()
		st_ += t
		sy += s.Demand
		stt += t * t
		sty += t * s.Demand
	}
	fn := float64(n)
	den := fn*stt - st_*st_
	if den <= 0 {
		return demand, 0, n
	}
	slope = (fn*sty - st_*sy) / den
	if math.IsNaN(slope) || math.IsInf(slope, 0) {
		return demand, 0, n
	}
	return demand + math.Max(0, slope)*p.Lookahead.Seconds(), slope, n
}

func pruneDemand(s []DemandSample, cutoff time.Time) []DemandSample {
	i := 0
	for i < len(s) && !s[i].At.After(cutoff) {
		i++
	}
	if i == 0 {
		return s
	}
	return s[:copy(s, s[i:])]
}

// lookahead turns the projection into a recommendation for metric m with
// the same arithmetic and tolerance as the present demand (rawFor).
func (p *Policy) lookahead(st *State, m Metric, demand float64, cur int, now time.Time) (int, string) {
	projected, slope, n := p.project(st, demand, now)
	replicas := ceilReplicas(projected / m.Target)
	text := "lookahead " + secs(p.Lookahead) + ": " + m.Signal.String() + " trend " + num(slope) + "/s (least squares over " +
		itoa(n) + " samples in " + secs(lookaheadSpan*p.Lookahead) + "), projected " + num(demand) + " + " +
		num(math.Max(0, slope)) + " × " + num(p.Lookahead.Seconds()) + " = " + num(projected) +
		" / target " + num(m.Target) + " = " + countText(projected/m.Target)
	if cur > 0 {
		r := projected / (m.Target * float64(cur))
		if p.tol.within(r) {
			return cur, text + "; ratio " + ratio(r) + " within tolerance: " + itoa(cur)
		}
	}
	return replicas, text
}
