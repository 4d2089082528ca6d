package seasonal

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/infscale/infscale/internal/wallclock"
)

// Floor is the proposed minimum replicas per weekday and hour.
type Floor struct {
	Location *time.Location
	// Min[d][h] is the floor on weekday d (Sunday 0) at hour h.
	Min [7][24]int
	// Support[d][h] is the number of occurrences that carry Min[d][h]: the
	// days whose hour h had at least the floor's traffic, or the weeks
	// whose weekday d at hour h had it, whichever is larger (0 when Min is 0).
	Support [7][24]int
}

// A floor must recur to be proposed: the same hour on at least MinDays
// days of the history, or the same weekday and hour in at least MinWeeks
// weeks. One spike is not a schedule.
const (
	MinDays  = 3
	MinWeeks = 2
)

// ProposeFloor turns the profile into a floor: at each weekday and hour,
// floor(fraction × rate / perReplica) replicas, where perReplica is the
// rate one replica accounts for: requests/s on a profile of arrivals, or 1
// on a profile of the replicas a policy held (what infscale profile
// builds from a replay of the reactive policy), and fraction
// (0 < f <= 1) keeps the floor below the expected need so the reactive
// policy still scales on the rest. The floor is then lowered to the
// largest value that recurs: m replicas at (d, h) need m × perReplica /
// fraction requests/s on MinDays days at hour h, or on MinWeeks
// occurrences of weekday d at hour h (Profile.Occurrences); Support
// counts them. Errors: perReplica or fraction out of range.
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
			m := int(min(math.Floor(fraction*r/perReplica+1e-9), math.MaxInt32))
			f.Min[d][h], f.Support[d][h] = recurring(p, d, h, m, perReplica/fraction)
		}
	}
	return f, nil
}

// recurring lowers m to the largest floor whose traffic (m × perFloor
// requests/s) recurs at weekday d, hour h, and returns it with its support.
// The traffic that recurs is the MinWeeks-th largest rate of weekday d at
// hour h, or the MinDays-th largest of hour h over all days.
func recurring(p Profile, d, h, m int, perFloor float64) (int, int) {
	var day []float64
	for d2 := range 7 {
		day = append(day, p.Occurrences[d2][h]...)
	}
	week := p.Occurrences[d][h]
	r := max(kthLargest(week, MinWeeks), kthLargest(day, MinDays))
	m = min(m, int(min(math.Floor(r/perFloor+1e-9), math.MaxInt32)))
	if m <= 0 {
		return 0, 0
	}
	need := float64(m)*perFloor - 1e-9
	return m, max(countAtLeast(week, need), countAtLeast(day, need))
}

// kthLargest is the k-th largest of rates (k >= 1), 0 when there are fewer.
func kthLargest(rates []float64, k int) float64 {
	if len(rates) < k {
		return 0
	}
	s := slices.Sorted(slices.Values(rates))
	return s[len(s)-k]
}

func countAtLeast(rates []float64, v float64) int {
	n := 0
	for _, r := range rates {
		if r >= v {
			n++
		}
	}
	return n
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
	// Support is the fewest occurrences carrying any hour of the window
	// (Floor.Support).
	Support int
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
	support := [7][]int{}
	for d := range 7 {
		for h := 0; h < 24; {
			m, sup := f.Min[d][h], f.Support[d][h]
			e := h + 1
			for e < 24 && f.Min[d][e] == m {
				sup = min(sup, f.Support[d][e])
				e++
			}
			if m > above {
				perDay[d] = append(perDay[d], key{h, e - h, m})
				support[d] = append(support[d], sup)
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
			to, sup := d, support[d][k]
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
				to, sup = d2, min(sup, support[d2][found])
			}
			out = append(out, Window{From: time.Weekday(d), To: time.Weekday(to), Hour: w.hour, Hours: w.hours, Min: w.min, Support: sup})
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

// DSTDay is a day on which KEDA's cron trigger for a window (its start
// and end crons, WriteKEDACron) differs from serve's schedule: the
// window's start or end hour does not exist that day (a spring-forward
// skips it), or its start hour is read twice (a fall-back repeats it).
// serve reads a window on the wall clock, open from the first reading of
// its start (the instant the clock jumps past it when skipped) to the last
// reading of its end (pkg/recommend); KEDA v2.21's cron scaler is active
// while its end cron's next firing comes before its start cron's
// (robfig/cron in the zone, which never fires a skipped time and fires a
// repeated one twice), so:
//   - a skipped start: KEDA's next start is the window's next occurrence,
//     so it holds the floor from the occurrence before's end (a week for a
//     window of one weekday) to this one's end; serve opens it at the jump;
//   - a skipped end: KEDA's next end is the next occurrence's, after its
//     next start, so it does not open the window that day; serve closes it
//     at the jump;
//   - a repeated start: KEDA opens it at the second reading, the change
//     late (an hour in most zones).
//
// In a zone whose change is not a whole hour (Australia/Lord_Howe), robfig
// also misses the whole hours after the change when it looks from before
// it: KEDA differs on days this does not name (deploy/kedae2e
// TestKEDACronScalerOnDSTDays).
//
// A window a change falls inside, or whose end is repeated, is the same
// in both.
type DSTDay struct {
	// Day is noon of the window's day in its zone.
	Day time.Time
	// StartSkipped, EndSkipped and StartRepeated say what the change does
	// to the window that day.
	StartSkipped, EndSkipped, StartRepeated bool
	// Open and Close are when serve's schedule opens and closes the
	// window that day; KEDAOpen, for a repeated start, when KEDA opens it.
	Open, Close, KEDAOpen time.Time
}

// DSTDays lists the days in the year from from on which KEDA's cron
// trigger for the window, read in loc, differs from serve's schedule
// (DSTDay). None in a zone without DST (nil is UTC).
func (w Window) DSTDays(loc *time.Location, from time.Time) []DSTDay {
	if loc == nil {
		return nil // UTC: no DST
	}
	var out []DSTDay
	f := from.In(loc)
	for i := range 366 {
		// Noon names the day: midnight itself is skipped in a few zones.
		day := time.Date(f.Year(), f.Month(), f.Day()+i, 12, 0, 0, 0, loc)
		if wd := day.Weekday(); wd < w.From || wd > w.To {
			continue
		}
		y, m, d := day.Date()
		// hour:00 of the day, the window's end at 24 and above the next day's
		at := func(hour int) time.Time { return time.Date(y, m, d, hour, 0, 0, 0, time.UTC) }
		open := wallclock.Readings(at(w.Hour), loc)
		closing := wallclock.Readings(at(w.Hour+w.Hours), loc)
		x := DSTDay{Day: day, StartSkipped: len(open) == 0, EndSkipped: len(closing) == 0, StartRepeated: len(open) == 2}
		if !x.StartSkipped && !x.EndSkipped && !x.StartRepeated {
			continue
		}
		// serve's: the first reading of the start, the last of the end, or
		// the jump past a skipped one.
		x.Open, x.Close = wallclock.Past(at(w.Hour), loc), wallclock.Past(at(w.Hour+w.Hours), loc)
		if n := len(closing); n > 0 {
			x.Close = closing[n-1]
		}
		if x.StartSkipped && x.EndSkipped && x.Open.Equal(x.Close) {
			continue // inside one gap: neither opens it
		}
		if x.StartRepeated {
			x.KEDAOpen = open[1]
		}
		out = append(out, x)
	}
	return out
}
