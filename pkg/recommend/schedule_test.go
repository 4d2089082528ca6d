package recommend

import (
	"strings"
	"testing"
	"time"
)

// "0 8 * * 1-5" for 12 h in Europe/Berlin: weekdays 08:00–20:00 local,
// which is 07:00–19:00 UTC in winter (CET, +1) and 06:00–18:00 UTC in
// summer (CEST, +2).
func TestScheduleFloorTimezone(t *testing.T) {
	p := queuePolicy(4)
	p.Schedule = []ScheduleWindow{{Cron: "0 8 * * 1-5", Duration: 12 * time.Hour, Min: 4, Location: "Europe/Berlin"}}
	mustValidate(t, p)
	for _, tc := range []struct {
		utc  string
		want int
	}{
		{"2026-11-30T06:59:00Z", 1}, // Monday 07:59 CET: before
		{"2026-11-30T07:00:00Z", 4}, // 08:00 CET: the firing itself
		{"2026-11-30T18:59:00Z", 4}, // 19:59 CET
		{"2026-11-30T19:00:00Z", 1}, // 20:00 CET: the window [08:00, 20:00) is over
		{"2026-12-05T09:00:00Z", 1}, // Saturday
		{"2026-07-06T06:30:00Z", 4}, // Monday 08:30 CEST
		{"2026-07-06T05:59:00Z", 1}, // Monday 07:59 CEST
	} {
		now, _ := time.Parse(time.RFC3339, tc.utc)
		if got, _ := p.floor(now); got != tc.want {
			t.Errorf("%s: floor %d, want %d", tc.utc, got, tc.want)
		}
	}
	// The floor shows as the reason when it raises the desired count: idle
	// queue (0/4 → 0) at Monday 08:30 CET → 4 (schedule).
	now, _ := time.Parse(time.RFC3339, "2026-11-30T07:30:00Z")
	expect(t, Decide(p, queueObs(1, 0), nil, now), 4, ReasonSchedule)
	// A window that ends before the next one starts does not chain: a
	// window overlapping midnight ("0 22 * * *" for 4 h) is active at 01:00.
	p2 := queuePolicy(4)
	p2.Schedule = []ScheduleWindow{{Cron: "0 22 * * *", Duration: 4 * time.Hour, Min: 3}}
	mustValidate(t, p2)
	if got, _ := p2.floor(time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)); got != 3 {
		t.Errorf("window across midnight: floor %d, want 3", got)
	}
}

// A cron that never fires is refused; February 29 fires (every 4 years).
func TestScheduleNeverFires(t *testing.T) {
	for _, c := range []string{"0 0 30 2 *", "0 0 31 4 *", "0 0 31 11 *"} {
		p := queuePolicy(4)
		p.Schedule = []ScheduleWindow{{Cron: c, Duration: time.Hour, Min: 3}}
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), "schedule[0].cron: \""+c+"\" never fires") {
			t.Errorf("%s: %v, want never fires", c, err)
		}
	}
	p := queuePolicy(4)
	p.Schedule = []ScheduleWindow{{Cron: "0 0 29 2 *", Duration: time.Hour, Min: 3, Location: "Europe/Berlin"}}
	mustValidate(t, p)
}
