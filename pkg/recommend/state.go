package recommend

import (
	"math"
	"time"
)

// Validate reports (FieldErrors) what Decide never writes into a State:
// replica counts outside 0..2147483647, scale-event changes below 1,
// negative or non-finite demand, times unset, and recommendations or
// samples not oldest first (scale events are in the HPA's slot order, see
// recordEvent). Each error names the field by its JSON path, e.g.
// "scale_up_events[0].change: -100 must be in 1..2147483647".
func (s *State) Validate() error {
	var errs FieldErrors
	count := func(path string, n int) {
		if n < 0 || n > maxReplicas {
			errs.add(path, "%d must be in 0..%d (replicas)", n, maxReplicas)
		}
	}
	times := func(list string, i int, at, prev time.Time) {
		path := list + "[" + itoa(i) + "].at"
		switch {
		case at.IsZero():
			errs.add(path, "missing (want an RFC3339 time, e.g. 2026-11-30T08:00:00Z)")
		case i > 0 && at.Before(prev):
			errs.add(path, "%s is before the previous entry's %s (want oldest first)", at.Format(time.RFC3339Nano), prev.Format(time.RFC3339Nano))
		}
	}
	for i, r := range s.Recommendations {
		count("recommendations["+itoa(i)+"].replicas", r.Replicas)
		prev := time.Time{}
		if i > 0 {
			prev = s.Recommendations[i-1].At
		}
		times("recommendations", i, r.At, prev)
	}
	events := func(list string, es []ScaleEvent) {
		for i, e := range es {
			if e.Change < 1 || e.Change > maxReplicas {
				errs.add(list+"["+itoa(i)+"].change", "%d must be in 1..%d (replicas added or removed)", e.Change, maxReplicas)
			}
			times(list, i, e.At, time.Time{}) // slot order, not time order (recordEvent)
		}
	}
	events("scale_up_events", s.ScaleUpEvents)
	events("scale_down_events", s.ScaleDownEvents)
	samples := func(list, unit string, ds []DemandSample) {
		for i, d := range ds {
			if math.IsNaN(d.Demand) || math.IsInf(d.Demand, 0) || d.Demand < 0 {
				errs.add(list+"["+itoa(i)+"].demand", "%v must be a finite number >= 0 (%s)", d.Demand, unit)
			}
			prev := time.Time{}
			if i > 0 {
				prev = ds[i-1].At
			}
			times(list, i, d.At, prev)
		}
	}
	samples("demand", "requests", s.Demand)
	samples("work", "replicas busy", s.Work)
	samples("arrivals", "requests/s", s.Arrivals)
	samples("rate_peaks", "requests/s", s.RatePeaks)
	for i, d := range s.Dips {
		if math.IsNaN(d.Seconds) || math.IsInf(d.Seconds, 0) || d.Seconds < 0 {
			errs.add("dips["+itoa(i)+"].seconds", "%v must be a finite number >= 0 (seconds)", d.Seconds)
		}
		prev := time.Time{}
		if i > 0 {
			prev = s.Dips[i-1].At
		}
		times("dips", i, d.At, prev)
		count("dips["+itoa(i)+"].from", d.From)
		count("dips["+itoa(i)+"].floor", d.Floor)
	}
	if d := s.OpenDip; d != nil {
		count("open_dip.from", d.From)
		count("open_dip.floor", d.Floor)
		if d.At.IsZero() {
			errs.add("open_dip.at", "missing (want an RFC3339 time, e.g. 2026-11-30T08:00:00Z)")
		}
	}
	count("coming", s.Coming)
	count("last_desired", s.LastDesired)
	return errs.err()
}
