package recommend

import (
	"fmt"
	"strings"
)

var reasonNames = [...]string{
	ReasonMetric:      "metric",
	ReasonTolerance:   "tolerance",
	ReasonStabilized:  "stabilized",
	ReasonRateLimited: "rate-limited",
	ReasonMin:         "min",
	ReasonMax:         "max",
	ReasonIdleToZero:  "idle-to-zero",
	ReasonActivate:    "activate",
	ReasonSchedule:    "schedule",
	ReasonNoData:      "no-data",
	ReasonLookahead:   "lookahead",
	ReasonPartialData: "partial-data",
	ReasonCooldown:    "cooldown",
	ReasonGuard:       "guard",
}

// String is the reason's name: metric, tolerance, stabilized, rate-limited,
// min, max, idle-to-zero, activate, schedule, no-data, lookahead,
// partial-data, cooldown, guard; "-" for 0 (a step that changed nothing).
func (r Reason) String() string {
	if r >= ReasonMetric && r <= ReasonGuard {
		return reasonNames[r]
	}
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Reasons lists every reason, in declaration order (for metrics labels and docs).
func Reasons() []Reason {
	out := make([]Reason, 0, len(reasonNames)-1)
	for r := ReasonMetric; r <= ReasonGuard; r++ {
		out = append(out, r)
	}
	return out
}

// MarshalText writes the reason's name.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a reason's name.
func (r *Reason) UnmarshalText(b []byte) error {
	for v := ReasonMetric; v <= ReasonGuard; v++ {
		if reasonNames[v] == string(b) {
			*r = v
			return nil
		}
	}
	return fmt.Errorf("unknown reason %q (allowed: %s)", b, strings.Join(reasonNames[1:], ", "))
}
