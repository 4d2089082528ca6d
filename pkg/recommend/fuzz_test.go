package recommend

import (
	"math"
	"testing"
	"time"
)

// FuzzDecide feeds arbitrary signals through a stateful policy: Decide
// never panics and always answers within [0, max] (0 only with min 0).
func FuzzDecide(f *testing.F) {
	f.Add(1, 2, 0, 2.0, 10.0, 0.0, 0.5, 50.0, 1.0, int64(15))
	f.Add(0, 0, 0, math.NaN(), math.NaN(), 5.0, math.NaN(), math.NaN(), math.NaN(), int64(0))
	f.Add(1000, 999, 3, 1e12, math.Inf(1), -3.0, 2.0, -1.0, 1e-300, int64(-5))
	f.Fuzz(func(t *testing.T, cur, reporting, unready int, running, waiting, held, kv, cpu, ttft float64, step int64) {
		p := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalTTFT, Target: 2}}, Min: 0, Max: 50,
			Lookahead: 90 * time.Second, Schedule: []ScheduleWindow{{Cron: "0 8 * * *", Duration: time.Hour, Min: 2}}}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		var st State
		obs := Observation{Current: cur % 2000, Reporting: reporting % 2000, Unready: unready % 2000, Running: running, Waiting: waiting, Held: held, KV: kv, CPU: cpu, TTFT: ttft}
		now := time.Unix(1_700_000_000, 0)
		for range 5 {
			d := Decide(p, obs, &st, now)
			if d.Desired < 0 || d.Desired > max(p.Max, obs.Current) || d.Reason == 0 || len(d.Steps) == 0 {
				t.Fatalf("%+v: desired %d reason %v steps %d", obs, d.Desired, d.Reason, len(d.Steps))
			}
			obs.Current = d.Desired
			now = now.Add(time.Duration(step%600) * time.Second)
		}
	})
}
