package seasonal

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/infscale/infscale/pkg/recommend"
)

// kedaCronActive is KEDA v2.21's cron scaler's rule (cron_scaler.go
// GetMetricsAndActivity), on the same robfig/cron (v3.0.1), written out
// apart from kedaHolds: the next start and end after now in loc; active
// between them when the start comes first, else unless past the end.
func kedaCronActive(start, end cron.Schedule, loc *time.Location, now time.Time) bool {
	cur := now.In(loc)
	ns, ne := start.Next(cur), end.Next(cur)
	if ns.Before(ne) {
		return cur.After(ns) && cur.Before(ne)
	}
	return cur.After(ns) || cur.Before(ne)
}

// DSTDays' spans are exactly where KEDA's cron trigger for a window (Cron,
// EndCron, run by KEDA's rule) and serve's schedule (recommend's Floor for
// Cron and Hours) differ: checked every 5 minutes from a day before each
// change in the year to 2 days after it, every 35 from 9 days before, for Sunday windows of every
// start hour and several lengths, in zones whose changes skip or repeat an
// hour, 2 h (Troll) or 30 min (Lord Howe).
func TestDSTDaysNameWhereKEDADiffers(t *testing.T) {
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	from := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	for _, zone := range []string{"Europe/Berlin", "America/New_York", "America/Santiago", "Europe/London", "America/Havana", "Australia/Lord_Howe", "Antarctica/Troll"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		var changes []time.Time
		_, prev := from.In(loc).Zone()
		for c := from; c.Before(from.AddDate(1, 0, 0)); c = c.Add(15 * time.Minute) {
			if _, off := c.In(loc).Zone(); off != prev {
				changes, prev = append(changes, c), off
			}
		}
		for hour := range 24 {
			for _, hours := range []int{1, 3, 8} {
				w := Window{From: 0, To: 0, Hour: hour, Hours: hours, Min: 3}
				start, err1 := parser.Parse(w.Cron())
				end, err2 := parser.Parse(w.EndCron())
				p := &recommend.Policy{Metrics: []recommend.Metric{{Signal: recommend.SignalQueue, Target: 4}}, Min: 1, Max: 10,
					Schedule: []recommend.ScheduleWindow{{Cron: w.Cron(), Duration: time.Duration(hours) * time.Hour, Min: 3, Location: zone}}}
				if err := p.Validate(); err1 != nil || err2 != nil || err != nil {
					t.Fatal(err1, err2, err)
				}
				days, err := w.DSTDays(loc, from)
				if err != nil {
					t.Fatal(err)
				}
				in := func(spans []Span, now time.Time) bool {
					for _, s := range spans {
						if !now.Before(s.From) && now.Before(s.To) {
							return true
						}
					}
					return false
				}
				for _, ch := range changes {
					var named *DSTDay
					for i := range days {
						if days[i].Change.Equal(ch) {
							named = &days[i]
						}
					}
					for now := ch.Add(-9 * 24 * time.Hour).Add(time.Minute); now.Before(ch.Add(48 * time.Hour)); {
						keda, serve := kedaCronActive(start, end, loc, now), p.Floor(now) == 3
						var kedaOnly, serveOnly bool
						if named != nil {
							kedaOnly, serveOnly = in(named.KEDAOnly, now), in(named.ServeOnly, now)
						}
						if kedaOnly != (keda && !serve) || serveOnly != (serve && !keda) {
							t.Errorf("%s: %q to %q (%dh), change at %s: at %s KEDA holds %v, serve %v; DSTDays: KEDA only %v, serve only %v (%+v)",
								zone, w.Cron(), w.EndCron(), hours, ch.In(loc).Format(time.RFC3339), now.In(loc).Format(time.RFC3339), keda, serve, kedaOnly, serveOnly, named)
							break
						}
						step := 35 * time.Minute // minutes of every quarter hour in turn
						if now.After(ch.Add(-26*time.Hour)) && now.Before(ch.Add(34*time.Hour)) {
							step = 5 * time.Minute
						}
						now = now.Add(step)
					}
				}
			}
		}
	}
}
