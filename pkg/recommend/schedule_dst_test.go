package recommend

import (
	"testing"
	"time"
)

// A window is read on its zone's wall clock, a DST change or not (as KEDA's
// cron trigger's end and a written "from 02:00 for 6 h" mean it). The
// instants are worked from the tz rules: Europe/Berlin springs forward on
// 2027-03-28 at 01:00 UTC (02:00 CET -> 03:00 CEST: 02:00-03:00 does not
// exist); America/New_York falls back on 2026-11-01 at 06:00 UTC (02:00 EDT
// -> 01:00 EST: 01:00-02:00 is read twice, 05:00-06:00 and 06:00-07:00 UTC).
func TestScheduleWindowOnTheWallClock(t *testing.T) {
	for _, tc := range []struct {
		name, cron, zone string
		d                time.Duration
		utc              string
		want             int
	}{
		// 02:00 skipped: the window opens as the clock jumps, 03:00 CEST,
		// and ends at 08:00 CEST (robfig's cron in the zone never fires it
		// that day: the floor was missing all day).
		{"gap start: before", "0 2 * * 0", "Europe/Berlin", 6 * time.Hour, "2027-03-28T00:59:00Z", 1},      // 01:59 CET
		{"gap start: at the jump", "0 2 * * 0", "Europe/Berlin", 6 * time.Hour, "2027-03-28T01:00:00Z", 3}, // 03:00 CEST
		{"gap start: 04:00 CEST", "0 2 * * 0", "Europe/Berlin", 6 * time.Hour, "2027-03-28T02:00:00Z", 3},
		{"gap start: 07:59 CEST", "0 2 * * 0", "Europe/Berlin", 6 * time.Hour, "2027-03-28T05:59:00Z", 3},
		{"gap start: 08:00 CEST", "0 2 * * 0", "Europe/Berlin", 6 * time.Hour, "2027-03-28T06:00:00Z", 1},
		// 00:00 CET for 6 h of clock: until 06:00 CEST, 5 elapsed hours
		// (elapsed time had it until 07:00 CEST).
		{"across spring-forward: 05:59 CEST", "0 0 * * 0", "Europe/Berlin", 6 * time.Hour, "2027-03-28T03:59:00Z", 3},
		{"across spring-forward: 06:00 CEST", "0 0 * * 0", "Europe/Berlin", 6 * time.Hour, "2027-03-28T04:00:00Z", 1},
		// 00:00 EDT for 6 h of clock: until 06:00 EST, 7 elapsed hours
		// (elapsed time had it end at 05:00 EST).
		{"across fall-back: 05:30 EST", "0 0 * * 0", "America/New_York", 6 * time.Hour, "2026-11-01T10:30:00Z", 3},
		{"across fall-back: 06:00 EST", "0 0 * * 0", "America/New_York", 6 * time.Hour, "2026-11-01T11:00:00Z", 1},
		// Fires 01:30 EDT (05:30 UTC), 1 h of clock: until 02:30, read
		// once, 02:30 EST (07:30 UTC); open through the repeated 01:00-01:30
		// EST, which is before its firing on the clock.
		{"start in the repeat: 01:29 EDT", "30 1 * * 0", "America/New_York", time.Hour, "2026-11-01T05:29:00Z", 1},
		{"start in the repeat: 01:30 EDT", "30 1 * * 0", "America/New_York", time.Hour, "2026-11-01T05:30:00Z", 3},
		{"start in the repeat: 01:10 EST", "30 1 * * 0", "America/New_York", time.Hour, "2026-11-01T06:10:00Z", 3},
		{"start in the repeat: 02:29 EST", "30 1 * * 0", "America/New_York", time.Hour, "2026-11-01T07:29:00Z", 3},
		{"start in the repeat: 02:30 EST", "30 1 * * 0", "America/New_York", time.Hour, "2026-11-01T07:30:00Z", 1},
		// 20:00 EDT Saturday for 5.5 h: until 01:30, whose last reading is
		// 01:30 EST (06:30 UTC); open through 01:30-02:00 EDT too.
		{"end in the repeat: 01:45 EDT", "0 20 * * 6", "America/New_York", 5*time.Hour + 30*time.Minute, "2026-11-01T05:45:00Z", 3},
		{"end in the repeat: 01:29 EST", "0 20 * * 6", "America/New_York", 5*time.Hour + 30*time.Minute, "2026-11-01T06:29:00Z", 3},
		{"end in the repeat: 01:30 EST", "0 20 * * 6", "America/New_York", 5*time.Hour + 30*time.Minute, "2026-11-01T06:30:00Z", 1},
		// 00:00 EDT for 1 h: its end, 01:00, is the repeated hour's start,
		// read at 05:00 UTC (EDT) and last at 06:00 UTC (EST): open
		// through the first pass, as KEDA's end cron, which fires at both.
		{"end at the repeat's start: 00:59 EDT", "0 0 * * 0", "America/New_York", time.Hour, "2026-11-01T04:59:00Z", 3},
		{"end at the repeat's start: 01:00 EDT", "0 0 * * 0", "America/New_York", time.Hour, "2026-11-01T05:00:00Z", 3},
		{"end at the repeat's start: 01:59 EDT", "0 0 * * 0", "America/New_York", time.Hour, "2026-11-01T05:59:00Z", 3},
		{"end at the repeat's start: 01:00 EST", "0 0 * * 0", "America/New_York", time.Hour, "2026-11-01T06:00:00Z", 1},
		// 00:00 for 30 min, ending before the repeat: closed through it.
		{"end before the repeat: 01:10 EDT", "0 0 * * 0", "America/New_York", 30 * time.Minute, "2026-11-01T05:10:00Z", 1},
	} {
		d := tc.d
		p := queuePolicy(4)
		p.Schedule = []ScheduleWindow{{Cron: tc.cron, Duration: d, Min: 3, Location: tc.zone}}
		mustValidate(t, p)
		now, _ := time.Parse(time.RFC3339, tc.utc)
		if got, _ := p.floor(now); got != tc.want {
			t.Errorf("%s (%s for %v in %s at %s): floor %d, want %d", tc.name, tc.cron, d, tc.zone, tc.utc, got, tc.want)
		}
	}
}

// The step says the instants: a firing in the skipped hour as the jump,
// an end in the repeated hour as its last reading.
func TestScheduleSaysWallClockInstants(t *testing.T) {
	for _, tc := range []struct {
		cron, zone string
		d          time.Duration
		utc, want  string
	}{
		{"0 2 * * 0", "Europe/Berlin", 6 * time.Hour, "2027-03-28T02:00:00Z",
			"fired 2027-03-28T03:00:00+02:00, open until 2027-03-28T08:00:00+02:00"},
		{"0 0 * * 0", "America/New_York", 6 * time.Hour, "2026-11-01T10:30:00Z",
			"fired 2026-11-01T00:00:00-04:00, open until 2026-11-01T06:00:00-05:00"},
		{"0 20 * * 6", "America/New_York", 5*time.Hour + 30*time.Minute, "2026-11-01T05:45:00Z",
			"fired 2026-10-31T20:00:00-04:00, open until 2026-11-01T01:30:00-05:00"},
		{"30 1 * * 0", "America/New_York", time.Hour, "2026-11-01T06:10:00Z",
			"fired 2026-11-01T01:30:00-04:00, open until 2026-11-01T02:30:00-05:00"},
		// Antarctica/Troll falls back 2 h on 2026-10-25 at 01:00 UTC (03:00
		// +02 -> 01:00 +00: 01:00-03:00 is read twice): fired at the first
		// reading of 01:00 (23:00 UTC the day before), ends at the last of
		// 02:00 (02:00 UTC).
		{"0 1 * * 0", "Antarctica/Troll", time.Hour, "2026-10-24T23:30:00Z",
			"fired 2026-10-25T01:00:00+02:00, open until 2026-10-25T02:00:00Z"},
		// Pacific/Apia skipped 2011-12-30 (23:59:59 -10 on the 29th, then
		// 00:00 +14 on the 31st, 10:00 UTC): an end in the skipped day is
		// the jump.
		{"0 22 * * *", "Pacific/Apia", 4 * time.Hour, "2011-12-30T09:00:00Z",
			"fired 2011-12-29T22:00:00-10:00, open until 2011-12-31T00:00:00+14:00"},
	} {
		p := queuePolicy(4)
		p.Schedule = []ScheduleWindow{{Cron: tc.cron, Duration: tc.d, Min: 3, Location: tc.zone}}
		mustValidate(t, p)
		now, _ := time.Parse(time.RFC3339, tc.utc)
		_, w := p.floor(now)
		if w == nil {
			t.Fatalf("%s at %s: no window open", tc.cron, tc.utc)
		}
		if got := w.open(now); got != tc.want {
			t.Errorf("%s for %v in %s at %s:\n got %s\nwant %s", tc.cron, tc.d, tc.zone, tc.utc, got, tc.want)
		}
	}
}
