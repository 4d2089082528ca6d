package wallclock

import (
	"testing"
	"time"
)

// TestReadings: Europe/Berlin skips 02:00-03:00 on 2027-03-28 (the clock
// jumps at 01:00Z); America/New_York reads 01:00-02:00 twice on 2026-11-01
// (05:00Z-06:00Z EDT, 06:00Z-07:00Z EST), from the tz rules.
func TestReadings(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip(err)
	}
	wallAt := func(s string) time.Time { v, _ := time.Parse("2006-01-02 15:04", s); return v }
	for _, tc := range []struct {
		name string
		w    time.Time
		loc  *time.Location
		want []string // UTC
		past string
	}{
		{"skipped", wallAt("2027-03-28 02:30"), berlin, nil, "2027-03-28T01:00:00Z"},
		{"after the jump", wallAt("2027-03-28 03:00"), berlin, []string{"2027-03-28T01:00:00Z"}, "2027-03-28T01:00:00Z"},
		{"repeated", wallAt("2026-11-01 01:30"), ny, []string{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z"}, "2026-11-01T05:30:00Z"},
		{"plain", wallAt("2026-11-01 08:00"), ny, []string{"2026-11-01T13:00:00Z"}, "2026-11-01T13:00:00Z"},
	} {
		got := Readings(tc.w, tc.loc)
		ok := len(got) == len(tc.want)
		for i := 0; ok && i < len(got); i++ {
			ok = got[i].UTC().Format(time.RFC3339) == tc.want[i]
		}
		if !ok {
			t.Errorf("%s: Readings %v, want %v", tc.name, got, tc.want)
		}
		if p := Past(tc.w, tc.loc).UTC().Format(time.RFC3339); p != tc.past {
			t.Errorf("%s: Past %s, want %s", tc.name, p, tc.past)
		}
		if in := In(Past(tc.w, tc.loc), tc.loc); len(got) > 0 && !in.Equal(tc.w) {
			t.Errorf("%s: In(Past) %v, want %v", tc.name, in, tc.w)
		}
	}
}
