package seasonal

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/infscale/infscale/pkg/recommend"
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

// DSTDay is a DST change (any change of loc's UTC offset) around which
// KEDA's cron trigger for a window (its start and end crons,
// WriteKEDACron) and serve's schedule (pkg/recommend, the window's cron
// and hours) hold the floor at different times. serve reads the window on
// the wall clock: open from the first reading of its start (the instant
// the clock jumps past it when a change skips it) to the last reading of
// its end. KEDA v2.21's cron scaler is active while its end cron's next
// firing comes before its start cron's (kedaHolds), and robfig/cron, which
// computes those firings, walks the zone's clock in ways a change upsets:
//   - it never fires a time a change skips: with the start skipped it
//     holds the floor from the occurrence before's end (a week for a
//     window of one weekday); with the end skipped it does not open;
//   - it reads an hour a change repeats from the reading time.Date picks
//     (the second in a zone east of UTC): a start repeated opens late; in
//     a 2 h repeat (Antarctica/Troll) an end at the repeat's first hour is
//     missed from inside its second hour, closing an hour early, and a
//     start there opens at the first reading of the next hour;
//   - it walks hours by adding one, so after a change that is not a whole
//     hour (Australia/Lord_Howe, 30 min) it lands on :30 and misses the
//     whole hours after the change it looks for from before it: it can
//     hold a floor from the occurrence before's end, or open late.
//
// DSTDays finds these spans by running both rules, not from a list of
// zones; deploy/kedae2e TestKEDACronScalerOnDSTDays runs KEDA's own
// scaler on the same days.
type DSTDay struct {
	// Day is noon of the change's day in its zone.
	Day time.Time
	// Change is the instant loc's offset changes; Shift how far the clock
	// moves then (+1h a spring-forward, -2h Troll's fall-back).
	Change time.Time
	Shift  time.Duration
	// KEDAOnly are the spans in which KEDA's trigger holds the floor and
	// serve's schedule does not; ServeOnly the reverse. In order, each
	// [From, To), to the quarter hour.
	KEDAOnly, ServeOnly []Span
}

// Span is the time from From to To, To excluded.
type Span struct{ From, To time.Time }

// dstBefore and dstAfter are how far before and after a change DSTDays
// compares KEDA and serve: from beyond the end of a weekly window's
// occurrence before it (KEDA can hold a floor from there) to two days
// after.
const dstBefore, dstAfter = 9 * 24 * time.Hour, 2 * 24 * time.Hour

// DSTDays lists the offset changes in the year from from around which
// KEDA's cron trigger for the window, read in loc, and serve's schedule
// hold the floor at different times (DSTDay). None in a zone without
// changes (nil is UTC). Errors: loc has no IANA name serve's schedule
// can load (a time.FixedZone). Both rules are read at the middle of each
// quarter hour: every zone's offsets and changes are whole quarter hours
// and a window starts and ends on whole hours, so neither changes inside
// one.
func (w Window) DSTDays(loc *time.Location, from time.Time) ([]DSTDay, error) {
	if loc == nil {
		return nil, nil // UTC: no DST
	}
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow) // KEDA's
	start, err1 := parser.Parse(w.Cron())
	end, err2 := parser.Parse(w.EndCron())
	// serve's schedule for the window alone: the floor is 2 while it is open.
	p := &recommend.Policy{Metrics: []recommend.Metric{{Signal: recommend.SignalQueue, Target: 1}}, Min: 1, Max: 2,
		Schedule: []recommend.ScheduleWindow{{Cron: w.Cron(), Duration: time.Duration(w.Hours) * time.Hour, Min: 2, Location: loc.String()}}}
	if err := errors.Join(err1, err2, p.Validate()); err != nil {
		return nil, fmt.Errorf("window %q for %dh in %s: %w", w.Cron(), w.Hours, loc, err)
	}
	var out []DSTDay
	for t := from; ; {
		_, c := t.In(loc).ZoneBounds()
		if c.IsZero() || !c.Before(from.AddDate(1, 0, 0)) {
			return out, nil
		}
		t = c
		_, before := c.Add(-time.Nanosecond).In(loc).Zone()
		_, after := c.In(loc).Zone()
		x := DSTDay{Change: c.In(loc), Shift: time.Duration(after-before) * time.Second}
		cl := c.In(loc)
		x.Day = time.Date(cl.Year(), cl.Month(), cl.Day(), 12, 0, 0, 0, loc)
		const q = 15 * time.Minute
		for at := c.Add(-dstBefore); at.Before(c.Add(dstAfter)); at = at.Add(q) {
			mid := at.Add(q / 2)
			k, s := kedaHolds(start, end, mid.In(loc)), p.Floor(mid) == 2
			switch {
			case k && !s:
				x.KEDAOnly = extend(x.KEDAOnly, at, at.Add(q), loc)
			case s && !k:
				x.ServeOnly = extend(x.ServeOnly, at, at.Add(q), loc)
			}
		}
		if len(x.KEDAOnly)+len(x.ServeOnly) > 0 {
			out = append(out, x)
		}
	}
}

// extend adds [from, to) to spans, joining it to the last span when they
// meet.
func extend(spans []Span, from, to time.Time, loc *time.Location) []Span {
	if n := len(spans); n > 0 && spans[n-1].To.Equal(from) {
		spans[n-1].To = to.In(loc)
		return spans
	}
	return append(spans, Span{from.In(loc), to.In(loc)})
}

// kedaHolds is KEDA v2.21's cron scaler's rule (pkg/scalers/cron_scaler.go
// GetMetricsAndActivity), on the robfig/cron v3.0.1 it runs: the next
// start and end after now (in the trigger's zone); active between them
// when the start comes first, else unless past the end.
func kedaHolds(start, end cron.Schedule, now time.Time) bool {
	ns, ne := start.Next(now), end.Next(now)
	if ns.Before(ne) {
		return now.After(ns) && now.Before(ne)
	}
	return now.After(ns) || now.Before(ne)
}
