package recommend

import (
	"testing"
	"time"
)

// BenchmarkScheduleFloor is Floor with one window, as Decide calls it every
// cycle for every target and every replay step: a weekday window in a zone
// with DST, at instants a minute apart over a week away from any change.
func BenchmarkScheduleFloor(b *testing.B) {
	for _, tc := range []struct{ name, cron, zone string }{
		{"weekdays-Berlin", "0 8 * * 1-5", "Europe/Berlin"},
		{"weekly-Berlin", "0 2 * * 0", "Europe/Berlin"},
		{"every15-UTC", "*/15 * * * *", "UTC"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := queuePolicy(4)
			p.Schedule = []ScheduleWindow{{Cron: tc.cron, Duration: 10 * time.Hour, Min: 3, Location: tc.zone}}
			if err := p.Validate(); err != nil {
				b.Fatal(err)
			}
			start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
			b.ResetTimer()
			for i := range b.N {
				p.Floor(start.Add(time.Duration(i%10080) * time.Minute))
			}
		})
	}
}
