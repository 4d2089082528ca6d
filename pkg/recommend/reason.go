package recommend

import (
	"fmt"
	"strings"
)

// reasonNames are the reasons' names: the HPA's condition reason, in its
// CamelCase, where the step is the HPA's own (kubernetes
// pkg/controller/podautoscaler/horizontal.go), infscale's lower-case word
// for the steps the HPA has no reason for. docs/recommend.md's Reasons
// table lists every one (TestReasonsDocumented).
var reasonNames = [...]string{
	ReasonMetric:              "DesiredWithinRange",
	ReasonTolerance:           "tolerance",
	ReasonScaleUpStabilized:   "ScaleUpStabilized",
	ReasonScaleDownStabilized: "ScaleDownStabilized",
	ReasonScaleUpLimit:        "ScaleUpLimit",
	ReasonScaleDownLimit:      "ScaleDownLimit",
	ReasonMin:                 "TooFewReplicas",
	ReasonMax:                 "TooManyReplicas",
	ReasonIdleToZero:          "idle-to-zero",
	ReasonActivate:            "activate",
	ReasonSchedule:            "schedule",
	ReasonNoData:              "no-data",
	ReasonLookahead:           "lookahead",
	ReasonPartialData:         "partial-data",
	ReasonCooldown:            "cooldown",
	ReasonGuard:               "guard",
	ReasonHold:                "hold",
	ReasonPair:                "pair",
}

// String is the reason's name: DesiredWithinRange, tolerance,
// ScaleUpStabilized, ScaleDownStabilized, ScaleUpLimit, ScaleDownLimit,
// TooFewReplicas, TooManyReplicas, idle-to-zero, activate, schedule,
// no-data, lookahead, partial-data, cooldown, guard, hold, pair; "-" for 0 (a
// step that changed nothing).
func (r Reason) String() string {
	if r >= ReasonMetric && r <= ReasonLast {
		return reasonNames[r]
	}
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// MarshalText writes the reason's name.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// oldReasonNames are the names before the HPA's were taken, still read
// (a state file or audit log written by the previous release); the old
// stabilized and rate-limited did not say the direction, and read as the
// usual one (a window holds a scale-down, a policy limits a scale-up).
var oldReasonNames = map[string]Reason{"metric": ReasonMetric, "min": ReasonMin, "max": ReasonMax,
	"stabilized": ReasonScaleDownStabilized, "rate-limited": ReasonScaleUpLimit}

// UnmarshalText reads a reason's name (or its old name).
func (r *Reason) UnmarshalText(b []byte) error {
	for v := ReasonMetric; v <= ReasonLast; v++ {
		if reasonNames[v] == string(b) {
			*r = v
			return nil
		}
	}
	if v, ok := oldReasonNames[string(b)]; ok {
		*r = v
		return nil
	}
	return fmt.Errorf("unknown reason %q (allowed: %s)", b, strings.Join(reasonNames[1:], ", "))
}
