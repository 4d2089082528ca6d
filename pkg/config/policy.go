package config

import (
	"math"
	"strings"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// Policy converts the target into the recommend.Policy it decides with and
// validates it (recommend.Policy.Validate, which owns every policy rule:
// behavior defaults filled in, schedules compiled). Load already ran it for
// every target, so on a loaded File it does not fail.
func (t *Target) Policy() (recommend.Policy, error) {
	p := t.policy()
	if err := p.Validate(); err != nil {
		return recommend.Policy{}, err
	}
	return p, nil
}

// ScalesToZero reports whether t scales to zero (minReplicaCount 0) and
// the cooldown it goes to zero after: its zero: block's cooldownPeriod,
// or recommend.DefaultZeroCooldown without one (as its Policy decides;
// Load refuses minReplicaCount 0 without the block).
func (t *Target) ScalesToZero() (cooldown time.Duration, ok bool) {
	if t.Min == nil || *t.Min != 0 {
		return 0, false
	}
	if t.Zero == nil {
		return recommend.DefaultZeroCooldown, true
	}
	return time.Duration(t.Zero.Cooldown), true
}

// policy is the target's recommend.Policy, not validated; an absent max is
// 0.
func (t *Target) policy() recommend.Policy {
	p := recommend.Policy{Lookahead: time.Duration(t.Lookahead), RampBound: t.RampBound}
	if t.Hold != nil {
		p.Hold = &recommend.Hold{BreakEven: time.Duration(t.Hold.BreakEven)}
	}
	if t.Min != nil {
		p.Min = *t.Min
	}
	if t.Max != nil {
		p.Max = *t.Max
	}
	for _, m := range t.Metrics {
		v, _ := m.Target.For(m.Type) // refused by validation when it errs
		p.Metrics = append(p.Metrics, recommend.Metric{Signal: m.Type, Target: v})
	}
	if t.Behavior != nil {
		p.Behavior = *t.Behavior.DeepCopy()
	}
	if t.Zero != nil {
		p.Zero = &recommend.Zero{Cooldown: time.Duration(t.Zero.Cooldown)}
	}
	g := recommend.Guard{Drain: recommend.DefaultDrain, Settle: recommend.DefaultSettle}
	for _, m := range t.Metrics {
		// ttft, queuewait; a window past MaxWindow is refused at its key,
		// not again as the settle it would make.
		if m.Type.Seconds() && m.Window > 0 && time.Duration(m.Window) <= MaxWindow {
			g.Settle = max(g.Settle, time.Duration(m.Window)+recommend.DefaultDrain) // the quantile's window remembers the backlog era
		}
	}
	if t.Guard != nil {
		g.Off = t.Guard.Off
		if t.Guard.Settle != 0 {
			g.Settle = time.Duration(t.Guard.Settle)
		}
		if t.Guard.Drain != 0 {
			g.Drain = time.Duration(t.Guard.Drain)
		}
	}
	p.Guard = &g
	if t.Replica != nil && t.Replica.capacity != nil {
		p.Capacity = t.Replica.capacity.ForRole(t.Role) // a decode pool prefills nothing
	}
	for _, w := range t.Schedule {
		p.Schedule = append(p.Schedule, recommend.ScheduleWindow{
			Cron: w.Cron, Duration: time.Duration(w.Duration), Min: w.Min, Location: w.Timezone,
		})
	}
	return p
}

// policyKeys maps recommend's field names (FieldError paths) to this
// file's keys where they differ: by the parent's key ("" for the
// target's own), then the name.
var policyKeys = map[string]map[string]string{
	"":         {"min": "minReplicaCount", "max": "maxReplicaCount"},
	"metrics":  {"signal": "type"},
	"zero":     {"cooldown": "cooldownPeriod"},
	"schedule": {"location": "timezone", "min": "desiredReplicas"},
}

// configKey is the key of a recommend.FieldError path inside target p:
// metrics[0].signal → targets[2].metrics[0].type, min →
// targets[2].minReplicaCount.
func configKey(p, path string) string {
	out, parent := p, ""
	for part := range splitPath(path) {
		if k, ok := policyKeys[parent][part]; ok {
			part = k
		}
		out += "." + part
		parent, _, _ = strings.Cut(part, "[")
	}
	return out
}

// splitPath yields the dot-separated parts of a path (an index stays with
// its name: metrics[0]).
func splitPath(path string) func(func(string) bool) {
	return func(yield func(string) bool) {
		start := 0
		for i := 0; i <= len(path); i++ {
			if i == len(path) || path[i] == '.' {
				if i > start && !yield(path[start:i]) {
					return
				}
				start = i + 1
			}
		}
	}
}

// standIn replaces bounds the user did not give or that failed to decode
// (their value is then not the user's) with values no rule reads as a
// problem, so a rule that reads them stays quiet instead of reporting a
// value the user did not write: max the largest allowed, min 0 with a
// zero: block and 1 without.
func standIn(p *recommend.Policy, t *Target, minBad, maxBad bool) {
	if minBad {
		p.Min = 1
		if t.Zero != nil {
			p.Min = 0
		}
	}
	if maxBad || t.Max == nil {
		p.Max = math.MaxInt32
	}
}
