package config

import (
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// Policy converts the target into the recommend.Policy it decides with and
// validates it (recommend.Policy.Validate: behavior defaults filled in,
// schedules compiled). Load already ran it for every target, so on a loaded
// File it does not fail.
func (t *Target) Policy() (recommend.Policy, error) {
	p := recommend.Policy{
		Lookahead: time.Duration(t.Lookahead),
	}
	if t.Min != nil {
		p.Min = *t.Min
	}
	if t.Max != nil {
		p.Max = *t.Max
	}
	for _, m := range t.Metrics {
		s, err := recommend.ParseSignal(m.Type)
		if err != nil {
			return recommend.Policy{}, err
		}
		p.Metrics = append(p.Metrics, recommend.Metric{Signal: s, Target: m.Target.Value})
	}
	if t.Behavior != nil {
		p.Behavior = *t.Behavior.DeepCopy()
	}
	if t.Zero != nil {
		p.Zero = &recommend.Zero{Cooldown: time.Duration(t.Zero.Cooldown)}
	}
	for _, w := range t.Schedule {
		p.Schedule = append(p.Schedule, recommend.ScheduleWindow{
			Cron: w.Cron, Duration: time.Duration(w.Duration), Min: w.Min, Location: w.Timezone,
		})
	}
	if err := p.Validate(); err != nil {
		return recommend.Policy{}, err
	}
	return p, nil
}
