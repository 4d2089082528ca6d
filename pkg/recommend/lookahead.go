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
	return projectSamples(&st.Demand, demand, now, lookaheadSpan*p.Lookahead, p.Lookahead)
}

// projectSamples is project over any sample list: it records v at now in
// *samples (pruned to span), fits the least-squares slope and returns
// v + max(0, slope) × horizon. A v that overflowed float64 (+Inf) is
// already capped downstream and is no trend sample: it is not recorded (a
// state file holds finite numbers only) and its projection is itself.
func projectSamples(samples *[]DemandSample, v float64, now time.Time, span, horizon time.Duration) (projected, slope float64, n int) {
	s := recordSample(samples, v, now, span)
	n = len(s)
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return v, 0, n
	}
	slope, _, _, ok := leastSquares(s, now)
	if !ok {
		return v, 0, n
	}
	return v + math.Max(0, slope)*horizon.Seconds(), slope, n
}

// recordSample records v at now in *samples, pruned to the last span (a
// repeated decision at the same instant replaces its sample), and returns
// the list. A v that is not finite is not recorded.
func recordSample(samples *[]DemandSample, v float64, now time.Time, span time.Duration) []DemandSample {
	s := pruneOld(*samples, now.Add(-span), sampleAt, false)
	*samples = s
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return s
	}
	if n := len(s); n > 0 && s[n-1].At.Equal(now) {
		s[n-1].Demand = v
	} else {
		s = append(s, DemandSample{At: now, Demand: v})
	}
	*samples = s
	return s
}

// leastSquares fits a line to the samples over time: the slope (per
// second), the samples' mean and Σ (t − mean t)² in s²; ok is false with
// fewer than 2 distinct times or a slope that is not finite.
func leastSquares(s []DemandSample, now time.Time) (slope, mean, sxx float64, ok bool) {
	n := len(s)
	if n < 2 {
		return 0, 0, 0, false
	}
	// Fit over t in seconds relative to now (small numbers, no precision loss).
	var st_, sy, stt, sty float64
	for _, x := range s {
		t := x.At.Sub(now).Seconds()
		st_ += t
		sy += x.Demand
		stt += t * t
		sty += t * x.Demand
	}
	fn := float64(n)
	den := fn*stt - st_*st_
	if den <= 0 {
		return 0, 0, 0, false
	}
	slope = (fn*sty - st_*sy) / den
	if math.IsNaN(slope) || math.IsInf(slope, 0) {
		return 0, 0, 0, false
	}
	return slope, sy / fn, den / fn, true
}

// lookahead turns the projection into a recommendation for metric m with
// the same arithmetic and tolerance as the present demand (rawFor). The
// samples are listed only when ex (explain) is set.
func (p *Policy) lookahead(st *State, m Metric, demand float64, cur int, now time.Time, ex bool) (int, string) {
	projected, slope, n := p.project(st, demand, now)
	replicas := ceilReplicas(projected / m.Target)
	rise := num(slope)
	if !(slope >= 0) { // only a rising trend counts
		rise = "max(0, " + rise + ")"
	}
	text := "lookahead " + secs(p.Lookahead) + ": " + m.Signal.String() + " trend " + num(slope) + "/s (least squares over " +
		itoa(n) + " samples in " + secs(lookaheadSpan*p.Lookahead) + fitText(st.Demand, now, ex) + "), projected " + num(demand) + " + " +
		rise + " × " + num(p.Lookahead.Seconds()) + " = " + num(projected) +
		" / target " + num(m.Target) + " = " + countText(projected/m.Target)
	if cur > 0 {
		r := perReplica(projected, m.Target, cur)
		if p.tol.within(r) {
			return cur, text + "; ratio " + p.tol.ratioText(r) + " within tolerance: " + itoa(cur)
		}
	}
	return replicas, text
}
