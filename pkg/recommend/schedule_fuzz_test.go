package recommend

import (
	"strings"
	"testing"
	"time"
)

// FuzzSchedule: any --schedule window (CRON;DURATION;MIN[;TIMEZONE]) is an
// error naming its field, or a policy whose floor at any moment (across
// daylight-saving changes of zones that change at midnight) is Min or a
// window's min, answered without hanging, and whose Decide says why.
func FuzzSchedule(f *testing.F) {
	for _, s := range []string{
		"0 8 * * 1-5;10h;4;Europe/Berlin", "0 0 * * *;90;2;America/Sao_Paulo", "30 1 30 3 *;1h;3;Europe/Lisbon",
		"0 0 * * *;24h;5;America/Santiago", "@daily;12h;1", "0 0 29 2 *;8760h;2;Africa/Cairo", "*/5 * * * *;1m;8;Asia/Tehran",
	} {
		f.Add(s, int64(1_700_000_000))
		f.Add(s, int64(1_234_567_890))
	}
	f.Fuzz(func(t *testing.T, spec string, at int64) {
		w, err := ParseScheduleWindow(spec)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		p := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}}, Min: 1, Max: 10, Schedule: []ScheduleWindow{w}}
		if err := p.Validate(); err != nil {
			if !strings.Contains(err.Error(), "schedule[0]") {
				t.Fatalf("%q: error without the window: %v", spec, err)
			}
			return
		}
		now := time.Unix(at%(400*365*86400), 0) // 1570..2370
		for range 3 {
			if fl := p.Floor(now); fl != p.Min && fl != w.Min {
				t.Fatalf("%q at %v: floor %d, want %d or %d", spec, now, fl, p.Min, w.Min)
			}
			var st State
			if d := Decide(p, Observation{Current: 2, Reporting: 2, Running: 1}, &st, now); d.Desired < p.Min || d.Desired > p.Max || len(d.Steps) == 0 {
				t.Fatalf("%q at %v: %+v", spec, now, d)
			}
			for i := range p.windows {
				p.windows[i].open(now)
			}
			now = now.Add(w.Duration/2 + 7*time.Minute)
		}
	})
}
