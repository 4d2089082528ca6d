package recommend

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// compiledWindow is a ScheduleWindow with its cron parsed in its location.
type compiledWindow struct {
	sched    cron.Schedule
	duration time.Duration
	min      int
	text     string
}

// neverFromRef is where compileSchedule looks for a cron's next firing
// (February 29 fires in 2000).
var neverFromRef = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// compileSchedule parses every window; problems name the window by index.
func compileSchedule(ws []ScheduleWindow, maxReplicas int) ([]compiledWindow, []error) {
	var out []compiledWindow
	var errs []error
	for i, w := range ws {
		bad := false
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("schedule[%d]: "+format, append([]any{i}, args...)...))
			bad = true
		}
		loc := time.UTC
		if w.Location != "" {
			l, err := time.LoadLocation(w.Location)
			if err != nil {
				fail("location %q is not an IANA time zone (e.g. Europe/Berlin, UTC): %v", w.Location, err)
			} else {
				loc = l
			}
		}
		s, err := cron.ParseStandard(w.Cron)
		if err != nil {
			fail("cron %q: %v (allowed: 5 fields: minute hour day-of-month month day-of-week, e.g. \"0 8 * * 1-5\", or @daily, @hourly ...)", w.Cron, err)
		} else if spec, ok := s.(*cron.SpecSchedule); !ok {
			fail("cron %q: @every is relative to the start, not a time of day or week (allowed: 5 fields or @daily, @weekly ...)", w.Cron)
		} else {
			if spec.Location == time.Local {
				spec.Location = loc
			}
			// robfig's Next gives up (zero time) after 5 years without a
			// match: such a cron never fires (February 30, April 31).
			// Searched from a fixed instant, so Validate stays pure.
			if s.Next(neverFromRef).IsZero() {
				fail("cron %q never fires (no matching time within 5 years, e.g. a day the month does not have; allowed: a cron that fires, e.g. \"0 8 * * 1-5\")", w.Cron)
			}
		}
		if w.Duration <= 0 {
			fail("duration %v must be > 0", w.Duration)
		}
		if w.Min < 0 || w.Min > maxReplicas {
			fail("min %d must be in 0..max (%d)", w.Min, maxReplicas)
		}
		if !bad {
			out = append(out, compiledWindow{sched: s, duration: w.Duration, min: w.Min,
				text: fmt.Sprintf("%q for %v in %s", w.Cron, w.Duration, loc)})
		}
	}
	return out, errs
}

// active reports whether the window is open at now: the first firing after
// now-duration is at or before now, so the window [fire, fire+duration)
// contains now.
func (w *compiledWindow) active(now time.Time) bool {
	fire := w.sched.Next(now.Add(-w.duration))
	return !fire.IsZero() && !fire.After(now)
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
