package recommend

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestUnboundedSpansRefused: a ttft or queuewait target and a schedule
// window's duration had no upper bound (a ttft of
// 100000h, a floor lasting 11 years, were accepted and never acted). Each
// is refused one step past its documented bound (a latency target: a
// week, 604,800 s; a window: a year, 8,760 h) and admitted
// at it, the error naming the field and what is allowed.
func TestUnboundedSpansRefused(t *testing.T) {
	week, year := 7*24*time.Hour, 365*24*time.Hour // a zero cooldown keeps KEDA's int32 seconds: not bounded here
	base := func() *Policy {
		return &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}}, Min: 0, Max: 4}
	}
	for _, c := range []struct {
		name string
		edit func(*Policy, bool)
		path string
		want string
	}{
		{"ttft", func(p *Policy, past bool) {
			p.Min = 1
			p.Metrics = append(p.Metrics, Metric{Signal: SignalTTFT, Target: 604800 + map[bool]float64{true: 1}[past]})
		}, "metrics[1].target", "604801 s must be at most 604800 s (a week): a ttft quantile never reaches a target that long, so it would never scale; e.g. 2s"},
		{"queuewait", func(p *Policy, past bool) {
			p.Min = 1
			p.Metrics = append(p.Metrics, Metric{Signal: SignalQueueWait, Target: 604800 + map[bool]float64{true: 1}[past]})
		}, "metrics[1].target", "604801 s must be at most 604800 s (a week): a queuewait quantile"},
		{"schedule", func(p *Policy, past bool) {
			d := year
			if past {
				d += time.Second
			}
			p.Schedule = []ScheduleWindow{{Cron: "0 8 * * *", Duration: d, Min: 2}}
		}, "schedule[0].duration", "8760h0m1s must be at most 8760h0m0s (a year, the period of @yearly)"},
	} {
		at := base()
		c.edit(at, false)
		if err := at.Validate(); err != nil {
			t.Errorf("%s at its bound: %v, want it admitted", c.name, err)
		}
		past := base()
		c.edit(past, true)
		var fes FieldErrors
		if err := past.Validate(); !errors.As(err, &fes) || len(fes) != 1 || fes[0].Path != c.path || !strings.Contains(fes[0].Msg, c.want) {
			t.Errorf("%s past its bound: %v, want %s: ...%s", c.name, err, c.path, c.want)
		}
	}
	if MaxLatencyTarget != week {
		t.Errorf("MaxLatencyTarget %v, want a week", MaxLatencyTarget)
	}
}
