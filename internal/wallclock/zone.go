package wallclock

import (
	"slices"
	"time"
)

// In is t's wall clock in loc written as a UTC time: the time line a
// zone's clock reads, without DST's gaps and repeats (a cron read on the
// clock runs on it).
func In(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// Readings lists, in order, the instants at which loc's clock reads the
// wall time w (as In writes it): one, none when a spring-forward skips w,
// two when a fall-back repeats it. A reading is w less an offset loc has
// in the zone period time.Date puts w in or in the one before or after
// it, so a change of any size counts (Lord Howe's 30 min, Troll's 2 h,
// Apia's skipped day).
func Readings(w time.Time, loc *time.Location) []time.Time {
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	near := []time.Time{t}
	start, end := t.ZoneBounds() // zero: no change before, after
	if !start.IsZero() {
		near = append(near, start.Add(-time.Nanosecond))
	}
	if !end.IsZero() {
		near = append(near, end)
	}
	var out []time.Time
	for _, x := range near {
		_, off := x.Zone()
		c := time.Unix(w.Unix()-int64(off), int64(w.Nanosecond())).In(loc)
		if In(c, loc).Equal(w) && !slices.ContainsFunc(out, c.Equal) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// Past is the instant loc's clock jumps past the wall time w that a
// spring-forward skips (Readings has none): the bound of the zone period
// time.Date puts w in, before which the clock reads less than w and from
// which it reads more. For a w the clock reads, its first reading.
func Past(w time.Time, loc *time.Location) time.Time {
	if r := Readings(w, loc); len(r) > 0 {
		return r[0]
	}
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	start, end := t.ZoneBounds()
	for _, b := range []time.Time{start, end} {
		if !b.IsZero() && In(b.Add(-time.Nanosecond), loc).Before(w) && In(b, loc).After(w) {
			return b.In(loc)
		}
	}
	return t
}
