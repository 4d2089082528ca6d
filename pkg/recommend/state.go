package recommend

import (
	"math"
	"strings"
	"time"
)

// zeroTime is what Validate says of a time left out, or written as Go's
// zero time, which decodes the same.
const zeroTime = "missing or 0001-01-01T00:00:00Z, the zero time (want the RFC3339 time it happened, e.g. 2026-11-30T08:00:00Z)"

// Validate reports (FieldErrors) what Decide never writes into a State:
// replica counts (inherited among them) outside 0..2147483647, scale-event changes below 1,
// negative or non-finite demand, times unset, and recommendations or
// samples not oldest first (scale events are in the HPA's slot order, see
// recordEvent), more than MaxDips dips, a dip ending after last_at or
// whose floor is above its from (or back above from), an open dip or its
// lows after last_at, more than MaxRamps
// ramps or a ramp whose seen is below its rate, held_zero_at after
// last_at, and a decision's history without last_at. Each error names the
// field by its JSON path, e.g. "scale_up_events[0].change: -100 must be in
// 1..2147483647".
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
			errs.add(path, zeroTime)
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
	if len(s.Ramps) > MaxRamps {
		errs.add("ramps", "%d ramps: at most %d (Decide keeps the last %d)", len(s.Ramps), MaxRamps, MaxRamps)
	}
	for i, r := range s.Ramps {
		for _, f := range []struct {
			name string
			v    float64
		}{{"rate", r.Rate}, {"seen", r.Seen}} {
			if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
				errs.add("ramps["+itoa(i)+"]."+f.name, "%v must be a finite number >= 0 (requests/s)", f.v)
			}
		}
		if r.Seen < r.Rate { // Seen starts at Rate and only rises
			errs.add("ramps["+itoa(i)+"].seen", "%v is below rate %v (seen is the highest rate read from the count on)", r.Seen, r.Rate)
		}
		prev := time.Time{}
		if i > 0 {
			prev = s.Ramps[i-1].At
		}
		times("ramps", i, r.At, prev)
	}
	if len(s.Dips) > MaxDips {
		errs.add("dips", "%d dips: at most %d (Decide keeps the last %d)", len(s.Dips), MaxDips, MaxDips)
	}
	for i, d := range s.Dips {
		switch end := d.At.Add(time.Duration(d.Seconds * float64(time.Second))); {
		case math.IsNaN(d.Seconds) || math.IsInf(d.Seconds, 0) || d.Seconds < 0:
			errs.add("dips["+itoa(i)+"].seconds", "%v must be a finite number >= 0 (seconds)", d.Seconds)
		case !s.LastAt.IsZero() && !d.At.IsZero() && (d.Seconds > maxDipSeconds || end.After(s.LastAt.Add(time.Second))):
			errs.add("dips["+itoa(i)+"].seconds", "%v: the dip would end after last_at (a dip is recorded when it ends)", d.Seconds)
		}
		if d.Floor > d.From {
			errs.add("dips["+itoa(i)+"].floor", "%d is above from %d (the floor is the lowest recommendation in the dip)", d.Floor, d.From)
		}
		if d.Back < 0 || d.Back > d.From && d.From > 0 {
			errs.add("dips["+itoa(i)+"].back", "%d must be in 0..from (%d)", d.Back, d.From)
		}
		// Dips are kept in the order they ended (recorded): a return that
		// reaches part of a dip records that part before the rest, which
		// started earlier.
		times("dips", i, d.At, time.Time{})
		if i > 0 && !d.At.IsZero() && !s.Dips[i-1].At.IsZero() && d.end().Before(s.Dips[i-1].end()) {
			errs.add("dips["+itoa(i)+"].seconds", "%v: the dip ends at %s, before the previous entry's end %s (want them in the order they ended)",
				d.Seconds, d.end().Format(time.RFC3339Nano), s.Dips[i-1].end().Format(time.RFC3339Nano))
		}
		count("dips["+itoa(i)+"].from", d.From)
		count("dips["+itoa(i)+"].floor", d.Floor)
	}
	if d := s.OpenDip; d != nil {
		count("open_dip.from", d.From)
		count("open_dip.floor", d.Floor)
		switch {
		case d.Floor > d.From:
			errs.add("open_dip.floor", "%d is above from %d (the floor is the lowest recommendation in the dip)", d.Floor, d.From)
		case d.Floor == d.From:
			errs.add("open_dip.floor", "%d is not below from %d (a dip opens at a recommendation below the output it held, and its floor only falls)", d.Floor, d.From)
		}
		if d.At.IsZero() {
			errs.add("open_dip.at", zeroTime)
		}
		// A dip opens, and reaches each low, at a decision: never after the last.
		after := func(path string, at time.Time, what string) {
			if !s.LastAt.IsZero() && at.After(s.LastAt) {
				errs.add(path, "%s is after last_at %s (%s)", at.Format(time.RFC3339Nano), s.LastAt.Format(time.RFC3339Nano), what)
			}
		}
		after("open_dip.at", d.At, "a dip opens at a decision")
		for i, l := range d.Lows {
			name := "open_dip.lows[" + itoa(i) + "]"
			count(name+".floor", l.Floor)
			if i > 0 {
				after(name+".at", l.At, "a low is reached at a decision")
			}
			switch {
			case i == 0 && !l.At.Equal(d.At):
				errs.add(name+".at", "%v: the first low is the dip's start, at (%v)", l.At.Format(time.RFC3339), d.At.Format(time.RFC3339))
			case i > 0 && l.At.Before(d.Lows[i-1].At):
				errs.add(name+".at", "%v is before the low before it (lows are oldest first)", l.At.Format(time.RFC3339))
			case l.Floor >= d.From || i > 0 && l.Floor >= d.Lows[i-1].Floor:
				errs.add(name+".floor", "%d: each low is below the one before and below from (%d)", l.Floor, d.From)
			case i == len(d.Lows)-1 && l.Floor != d.Floor:
				errs.add(name+".floor", "%d: the last low is the dip's floor (%d)", l.Floor, d.Floor)
			}
		}
	}
	// held_zero_at is set at a decision (Decider), never after the last.
	if !s.LastAt.IsZero() && s.HeldZeroAt.After(s.LastAt) {
		errs.add("held_zero_at", "%s is after last_at %s (it is set at a decision)", s.HeldZeroAt.Format(time.RFC3339Nano), s.LastAt.Format(time.RFC3339Nano))
	}
	count("coming", s.Coming)
	count("last_desired", s.LastDesired)
	count("inherited", s.Inherited)
	if s.LastAt.IsZero() {
		// Every decision sets last_at; without it the state reads as
		// fresh (the current count as found, not its last desired) while
		// its history still holds and limits the decision.
		if held := s.history(); len(held) > 0 {
			errs.add("last_at", "missing, but the state holds a decision's history (%s), and every decision sets it: the file was edited or cut; restore last_at (the last decision's time), or delete the file to start fresh", strings.Join(held, ", "))
		}
	}
	return errs.err()
}

// history names the fields of s that only a decision writes and that
// hold something.
func (s *State) history() []string {
	var held []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"recommendations", len(s.Recommendations) > 0},
		{"scale_up_events", len(s.ScaleUpEvents) > 0},
		{"scale_down_events", len(s.ScaleDownEvents) > 0},
		{"demand", len(s.Demand) > 0},
		{"arrivals", len(s.Arrivals) > 0},
		{"last_desired", s.LastDesired > 0},
		{"coming", s.Coming > 0},
		{"dips", len(s.Dips) > 0},
		{"open_dip", s.OpenDip != nil},
		{"inherited", s.Inherited > 0},
		{"rate_peaks", len(s.RatePeaks) > 0},
		{"ramps", len(s.Ramps) > 0},
		{"held_zero_at", !s.HeldZeroAt.IsZero()},
	} {
		if f.set {
			held = append(held, f.name)
		}
	}
	return held
}

// maxDipSeconds bounds a dip's length in a State (ten years): longer ones
// overflow a time.Duration, and no dip is recorded that late.
const maxDipSeconds = 10 * 365 * 24 * 3600
