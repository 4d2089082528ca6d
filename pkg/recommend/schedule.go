package recommend

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/infscale/infscale/internal/wallclock"
)

// compiledWindow is a ScheduleWindow with its cron parsed. The cron is
// read on the wall clock of loc: sched is parsed in UTC and run on wall
// times (wall), so a window is open from its firing's wall time for
// duration of wall clock, as KEDA's end cron and a written "08:00 to
// 20:00" mean it, a DST change or not. A window is open from the first
// instant the clock reads its firing to the last it reads its end: a
// firing in the hour a spring-forward skips (02:00 in Europe/Berlin on
// 2027-03-28, which robfig's cron in loc never fires) opens it as the
// clock jumps past (03:00 CEST); a firing or an end in the hour a
// fall-back repeats counts its first and its last reading, so the window
// has no hole in that hour.
type compiledWindow struct {
	sched    cron.Schedule
	loc      *time.Location
	duration time.Duration
	min      int
	text     string
}

// wall is now's wall clock in loc written as a UTC time: the time line
// the window's cron runs on (wallclock.In).
func wall(now time.Time, loc *time.Location) time.Time { return wallclock.In(now, loc) }

// instant is the instant loc's clock reads the wall time w (as wall
// writes it), the first of the two readings a fall-back repeats (last: the
// second), and the instant the clock jumps past it when a spring-forward
// skips it (wallclock.Readings, wallclock.Past). For the step's text only.
func instant(w time.Time, loc *time.Location, last bool) time.Time {
	if r := wallclock.Readings(w, loc); last && len(r) > 0 {
		return r[len(r)-1]
	}
	return wallclock.Past(w, loc)
}

// neverFromRef is where compileSchedule looks for a cron's next firing
// (February 29 fires in 2000).
var neverFromRef = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// compileSchedule parses every window; problems name the field, e.g.
// schedule[1].cron.
func compileSchedule(ws []ScheduleWindow, maxReplicas int) ([]compiledWindow, FieldErrors) {
	var out []compiledWindow
	var errs FieldErrors
	for i, w := range ws {
		at := "schedule[" + itoa(i) + "]"
		bad := false
		fail := func(field, format string, args ...any) {
			errs.add(at+"."+field, format, args...)
			bad = true
		}
		loc := time.UTC
		switch l, err := time.LoadLocation(w.Location); {
		case w.Location == "Local":
			fail("location", "\"Local\" is the machine's zone (UTC in most containers); name an IANA zone, e.g. Europe/Berlin or UTC")
		case err != nil:
			fail("location", "%q is not an IANA time zone (e.g. Europe/Berlin, UTC): %v", w.Location, err)
		default:
			loc = l
		}
		text := strings.TrimSpace(w.Cron)
		s, err := cron.ParseStandard(text)
		switch spec, isSpec := s.(*cron.SpecSchedule); {
		case text == "":
			fail("cron", "required: a 5-field cron expression (minute hour day-of-month month day-of-week), e.g. \"0 8 * * 1-5\"")
		case strings.HasPrefix(text, "CRON_TZ=") || strings.HasPrefix(text, "TZ="):
			// robfig's prefix would silently override the window's zone.
			fail("cron", "%q: give the zone as the window's time zone, not as a CRON_TZ=/TZ= prefix", w.Cron)
		case err != nil:
			fail("cron", "%q: %v (allowed: 5 fields: minute hour day-of-month month day-of-week, e.g. \"0 8 * * 1-5\", or @hourly, @daily, @weekly, @monthly, @yearly)", w.Cron, err)
		case !isSpec:
			fail("cron", "%q: @every is relative to the start, not a time of day or week (allowed: 5 fields or @hourly, @daily, @weekly, @monthly, @yearly)", w.Cron)
		default:
			spec.Location = time.UTC // run on wall times (compiledWindow)
			// robfig's Next gives up (zero time) after 5 years without a
			// match: such a cron never fires (February 30, April 31).
			// Searched from a fixed instant, so Validate stays pure.
			if s.Next(neverFromRef).IsZero() {
				fail("cron", "%q never fires (no matching time within 5 years, e.g. a day the month does not have; allowed: a cron that fires, e.g. \"0 8 * * 1-5\")", w.Cron)
			}
		}
		if w.Duration <= 0 {
			fail("duration", "%v must be > 0 (how long the floor lasts after each firing, e.g. 12h)", w.Duration)
		} else if w.Duration > maxScheduleDuration {
			// @yearly fires once a year: a floor past it never ends, which
			// min says plainly.
			fail("duration", "%v must be at most %v (a year, the period of @yearly): how long the floor lasts after each firing, e.g. 12h; for a floor that never ends, raise min", w.Duration, maxScheduleDuration)
		}
		if w.Min < 0 || w.Min > maxReplicas {
			fail("min", "%d must be in 0..max (%d)", w.Min, maxReplicas)
		}
		if !bad {
			out = append(out, compiledWindow{sched: s, loc: loc, duration: w.Duration, min: w.Min,
				text: fmt.Sprintf("%q for %v in %s", w.Cron, w.Duration, loc)})
		}
	}
	return out, errs
}

// ScheduleSyntax is the one-string form of a ScheduleWindow that
// ParseScheduleWindow reads (decide --schedule, a policy string's
// schedule=).
const ScheduleSyntax = "CRON;DURATION;MIN[;TIMEZONE]"

// ParseScheduleWindow reads "CRON;DURATION;MIN[;TIMEZONE]", e.g.
// "0 8 * * 1-5;10h;4;Europe/Berlin" (from 08:00 on weekdays, for 10 h, at
// least 4 replicas, Berlin time); spaces around each field are ignored.
// DURATION is a Go duration (90s, 10h, 1h30m) or seconds (90); TIMEZONE
// defaults to UTC. Only the form is checked here (the parts, the numbers);
// what a window may hold is Validate's. A FieldError's Path is the field
// (cron, duration, min, location: the index among the ';'-separated parts
// is ScheduleField) or "" for the form as a whole.
func ParseScheduleWindow(s string) (ScheduleWindow, error) {
	f := strings.Split(s, ";")
	if len(f) != 3 && len(f) != 4 {
		return ScheduleWindow{}, FieldError{Msg: fmt.Sprintf("want %s, e.g. \"0 8 * * 1-5;10h;4;Europe/Berlin\", got %d part(s)", ScheduleSyntax, len(f))}
	}
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	w := ScheduleWindow{Cron: f[0]}
	if secs, err := strconv.ParseFloat(f[1], 64); err == nil && secs >= 0 && secs <= maxScheduleSeconds {
		w.Duration = time.Duration(secs * float64(time.Second))
	} else if err == nil && secs > maxScheduleSeconds { // +Inf too; Validate's words for the bound
		return ScheduleWindow{}, FieldError{Path: "duration", Msg: fmt.Sprintf("%s seconds must be at most %v (a year, the period of @yearly): how long the floor lasts after each firing, e.g. 12h; for a floor that never ends, raise min", f[1], maxScheduleDuration)}
	} else if d, err := time.ParseDuration(f[1]); err == nil {
		w.Duration = d
	} else {
		return ScheduleWindow{}, FieldError{Path: "duration", Msg: fmt.Sprintf("%q: want a duration such as 12h or 90s", f[1])}
	}
	m, err := strconv.Atoi(f[2])
	if err != nil {
		return ScheduleWindow{}, FieldError{Path: "min", Msg: fmt.Sprintf("%q: want a whole number of replicas", f[2])}
	}
	w.Min = m
	if len(f) == 4 {
		w.Location = f[3]
	}
	return w, nil
}

// maxScheduleSeconds bounds a DURATION given in seconds (a year).
const maxScheduleSeconds = 365 * 86400

// maxScheduleDuration bounds a window's Duration (a year, however it was
// written): a floor lasting longer than @yearly's period never ends.
const maxScheduleDuration = maxScheduleSeconds * time.Second

// ScheduleField is the index of a ScheduleWindow field among the parts of
// ParseScheduleWindow's string (cron 0, duration 1, min 2, location 3), for
// a front end that points at a column; -1 for an unknown field.
func ScheduleField(field string) int {
	return slices.Index([]string{"cron", "duration", "min", "location"}, field)
}

// readings returns the wall times (wall) that decide whether a window is
// open at now: seen, the latest the clock has read by now, and ahead, the
// earliest it reads from now on, less a nanosecond when that reading is
// still to come after now. Both are now's wall time but around a
// fall-back: in the repeated hour's first pass ahead is just before the
// hour's start (read again at the change, so an end there is read last
// then), in its second pass seen is just before its end (read before the
// change). A window [fire, fire+duration) of wall time is open at now when
// fire <= seen and fire+duration > ahead.
func (w *compiledWindow) readings(now time.Time) (seen, ahead time.Time) {
	n := wall(now, w.loc)
	_, off := now.In(w.loc).Zone()
	_, before := now.Add(-2 * time.Hour).In(w.loc).Zone()
	_, after := now.Add(2 * time.Hour).In(w.loc).Zone()
	switch {
	case before > off: // a fall-back in the last 2 h: in the second pass?
		at := change(now.Add(-2*time.Hour), now, w.loc)
		if shift := time.Duration(before-off) * time.Second; now.Before(at.Add(shift)) {
			return wall(at, w.loc).Add(shift - time.Nanosecond), n
		}
	case after < off: // a fall-back in the next 2 h: in the first pass?
		at := change(now, now.Add(2*time.Hour), w.loc)
		if shift := time.Duration(off-after) * time.Second; !now.Before(at.Add(-shift)) {
			return n, wall(at, w.loc).Add(-time.Nanosecond)
		}
	}
	return n, n
}

// change is the instant in (lo, hi] at which loc's UTC offset changes
// (one change between them), to the second.
func change(lo, hi time.Time, loc *time.Location) time.Time {
	_, last := hi.In(loc).Zone()
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if _, off := mid.In(loc).Zone(); off == last {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi.Truncate(time.Second)
}

// active reports whether the window is open at now: a firing after
// ahead-duration is at or before seen (readings).
func (w *compiledWindow) active(now time.Time) bool {
	seen, ahead := w.readings(now)
	fire := w.sched.Next(ahead.Add(-w.duration))
	return !fire.IsZero() && !fire.After(seen)
}

// open says, for a window active at now, when it last fired and when it
// closes, so a reader knows how long the floor lasts: "fired
// 2026-12-05T08:00:00+01:00, open until 2026-12-05T20:00:00+01:00", and
// when it fires again before then (which keeps it open longer), that
// firing too. Times are the instants in the window's zone (instant: a
// firing in a spring-forward's gap shows the instant the clock jumps past
// it). Only for the step's text: the floor is active's.
func (w *compiledWindow) open(now time.Time) string {
	seen, ahead := w.readings(now)
	lo, hi := ahead.Add(-w.duration), seen
	if f := w.sched.Next(lo); f.IsZero() || f.After(seen) {
		return ""
	}
	// The latest firing at or before seen is Next of the latest wall time
	// whose Next is not after seen (Next does not decrease); a cron fires
	// on whole minutes, so a second's precision finds it.
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if w.sched.Next(mid).After(seen) {
			hi = mid
		} else {
			lo = mid
		}
	}
	last := w.sched.Next(lo)
	next := w.sched.Next(last)
	end := last.Add(w.duration)
	text := "fired " + instant(last, w.loc, false).Format(time.RFC3339) + ", open until " + instant(end, w.loc, true).Format(time.RFC3339)
	if !next.IsZero() && next.Before(end) {
		text += "; it fires again at " + instant(next, w.loc, false).Format(time.RFC3339) + " before that, which keeps it open longer"
	}
	return text
}

// Floor returns the effective minimum replicas at now: Policy.Min raised by
// every schedule window open at now (timezone-aware). Callers that hold or
// restore a desired value outside Decide (serve during an outage) bound it
// with Floor and Max. The policy must have been validated.
func (p *Policy) Floor(now time.Time) int {
	m, _ := p.floor(now)
	return m
}

// floor returns the effective minimum at now: Policy.Min raised by every
// active schedule window, and the window that raised it (nil if none).
func (p *Policy) floor(now time.Time) (int, *compiledWindow) {
	m := p.Min
	var by *compiledWindow
	for i := range p.windows {
		w := &p.windows[i]
		if w.min > m && w.active(now) {
			m, by = w.min, w
		}
	}
	return m, by
}
