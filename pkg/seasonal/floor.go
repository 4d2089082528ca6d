package seasonal

import (
	"fmt"
	"math"
	"time"
)

// Floor is the proposed minimum replicas per weekday and hour.
type Floor struct {
	Location *time.Location
	// Min[d][h] is the floor on weekday d (Sunday 0) at hour h.
	Min [7][24]int
}

// ProposeFloor turns the profile into a floor: at each weekday and hour,
// floor(fraction × rate / perReplica) replicas, where perReplica is the
// arrival rate one replica sustains at the policy's target (requests/s,
// e.g. target concurrency / request latency by Little's law) and fraction
// (0 < f <= 1) keeps the floor below the expected need so the reactive
// policy still scales on the rest. Errors: perReplica or fraction out of range.
func ProposeFloor(p Profile, perReplica, fraction float64) (Floor, error) {
	if !(perReplica > 0) || math.IsInf(perReplica, 0) {
		return Floor{}, fmt.Errorf("requests per second per replica %g: want > 0", perReplica)
	}
	if !(fraction > 0 && fraction <= 1) {
		return Floor{}, fmt.Errorf("floor fraction %g: want 0 < f <= 1", fraction)
	}
	f := Floor{Location: p.Location}
	for d := range 7 {
		for h := range 24 {
			r := p.Expected(d, h)
			if math.IsNaN(r) {
				continue
			}
			f.Min[d][h] = int(min(math.Floor(fraction*r/perReplica+1e-9), math.MaxInt32))
		}
	}
	return f, nil
}

// Cap limits every hour's floor to n replicas (the policy's max: a
// schedule window may not ask for more than the policy allows).
func (f *Floor) Cap(n int) {
	for d := range f.Min {
		for h := range f.Min[d] {
			f.Min[d][h] = min(f.Min[d][h], n)
		}
	}
}

// Window is one schedule window: from Hour on the weekdays From..To
// (inclusive, Sunday 0), for Hours hours, at least Min replicas.
type Window struct {
	From, To time.Weekday
	Hour     int
	Hours    int
	Min      int
}

// Cron is the window's 5-field cron expression ("0 8 * * 1-5").
func (w Window) Cron() string {
	days := fmt.Sprint(int(w.From))
	if w.To != w.From {
		days = fmt.Sprintf("%d-%d", w.From, w.To)
	}
	return fmt.Sprintf("0 %d * * %s", w.Hour, days)
}

// EndCron is the cron expression of the window's end (KEDA's end), on the
// same days; a window reaching midnight ends at 0 of the next day.
func (w Window) EndCron() string {
	end := w.Hour + w.Hours
	from, to := int(w.From), int(w.To)
	if end >= 24 {
		end -= 24
		from, to = (from+1)%7, (to+1)%7
	}
	days := fmt.Sprint(from)
	if to != from {
		days = fmt.Sprintf("%d-%d", from, to)
		if to < from { // the range wrapped past Saturday
			days = fmt.Sprintf("%d-6,0-%d", from, to)
			if to == 0 {
				days = fmt.Sprintf("%d-6,0", from)
			}
		}
	}
	return fmt.Sprintf("0 %d * * %s", end, days)
}

// Windows lists the floor as windows: per day, each maximal run of hours
// with the same floor >= above+1 becomes a window; identical windows on
// consecutive weekdays (Monday..Saturday, then Sunday alone) merge into
// one range. Floors at or below `above` (the policy's own minimum) are
// left out: they would change nothing.
func (f Floor) Windows(above int) []Window {
	type key struct{ hour, hours, min int }
	perDay := [7][]key{}
	for d := range 7 {
		for h := 0; h < 24; {
			m := f.Min[d][h]
			e := h + 1
			for e < 24 && f.Min[d][e] == m {
				e++
			}
			if m > above {
				perDay[d] = append(perDay[d], key{h, e - h, m})
			}
			h = e
		}
	}
	// Merge runs of consecutive days (Monday=1 .. Saturday=6, Sunday=0 alone
	// so that ranges never wrap) that share a window.
	order := []int{1, 2, 3, 4, 5, 6, 0}
	var out []Window
	used := map[[2]int]bool{} // (day, index in perDay)
	for i, d := range order {
		for k, w := range perDay[d] {
			if used[[2]int{d, k}] {
				continue
			}
			used[[2]int{d, k}] = true
			to := d
			for _, d2 := range order[i+1:] {
				if d2 == 0 {
					break
				}
				found := -1
				for k2, w2 := range perDay[d2] {
					if w2 == w && !used[[2]int{d2, k2}] {
						found = k2
					}
				}
				if found < 0 {
					break
				}
				used[[2]int{d2, found}] = true
				to = d2
			}
			out = append(out, Window{From: time.Weekday(d), To: time.Weekday(to), Hour: w.hour, Hours: w.hours, Min: w.min})
		}
	}
	return out
}

// Timeline is the floor per step for a replay: entry i is the floor at
// start + i·step (n entries), read in the floor's time zone.
func (f Floor) Timeline(start time.Time, step time.Duration, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		t := start.Add(time.Duration(i) * step).In(f.Location)
		out[i] = float64(f.Min[t.Weekday()][t.Hour()])
	}
	return out
}
