package config

import (
	"strconv"
	"strings"

	"github.com/infscale/infscale/internal/quantity"
	"github.com/infscale/infscale/pkg/recommend"
)

// Quantity is a metric target: a plain number (requests, a fraction, a
// percentage, seconds), a percentage such as 80% or a Prometheus duration
// string such as 2s or 500ms, which is stored in seconds. Its value in the
// signal's unit is For's.
type Quantity struct {
	// Value is the number as written (80 for 80%; seconds for durations).
	Value float64
	// Duration is true when the YAML held a duration string.
	Duration bool
	// Percent is true when the YAML held a percentage (80%).
	Percent bool
	// Set is true when the key was present.
	Set bool
}

// UnmarshalYAML decodes a number, a percentage or a duration string
// (ParseQuantity).
func (q *Quantity) UnmarshalYAML(b []byte) error {
	v, err := ParseQuantity(strings.Trim(strings.TrimSpace(string(b)), `"'`))
	if err != nil {
		return err
	}
	*q = v
	return nil
}

// ParseQuantity reads a metric target as quantity.ParseTarget does (the
// one parser of the config file's target: key, decide's --target and
// simulate's policy strings), Set true. Errors quote s.
func ParseQuantity(s string) (Quantity, error) {
	v, dur, pct, err := quantity.ParseTarget(s)
	if err != nil {
		return Quantity{}, err
	}
	return Quantity{Value: v, Duration: dur, Percent: pct, Set: true}, nil
}

// For is q as a target of sig, in its unit (recommend.Signal.TargetValue:
// 80% is 0.8 for kv and demand, 80 for cpu). Errors: a duration or a
// percentage the signal does not take.
func (q Quantity) For(sig recommend.Signal) (float64, error) {
	return sig.TargetValue(q.Value, q.Duration, q.Percent)
}

// MarshalYAML prints the number (seconds for durations), with its % when
// it was a percentage: 80% printed as 80 would read back as a kv target of
// 80, not 0.8.
func (q Quantity) MarshalYAML() ([]byte, error) {
	s := strconv.FormatFloat(q.Value, 'g', -1, 64)
	if q.Percent {
		s += "%"
	}
	return []byte(s), nil
}
