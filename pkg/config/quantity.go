package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/infscale/infscale/internal/quantity"
)

// Quantity is a metric target: a plain number (requests, a fraction, a
// percentage, seconds) or a Prometheus duration string such as 2s or 500ms,
// which is stored in seconds.
type Quantity struct {
	// Value is the number, in the signal's base unit (seconds for durations).
	Value float64
	// Duration is true when the YAML held a duration string.
	Duration bool
	// Set is true when the key was present.
	Set bool
}

// UnmarshalYAML decodes a number or a duration string (ParseQuantity).
func (q *Quantity) UnmarshalYAML(b []byte) error {
	v, err := ParseQuantity(strings.Trim(strings.TrimSpace(string(b)), `"'`))
	if err != nil {
		return err
	}
	*q = v
	return nil
}

// ParseQuantity reads a metric target as quantity.Parse does (the one
// parser of the config file's target: key, decide's --target and
// simulate's policy strings), Set true. Errors quote s.
func ParseQuantity(s string) (Quantity, error) {
	v, dur, err := quantity.Parse(s)
	if num, pct := strings.CutSuffix(strings.TrimSpace(s), "%"); err != nil && pct {
		// The target's unit is its signal's (kv a fraction, cpu percent),
		// unknown here: say how to write one rather than "invalid value".
		if f, ferr := quantity.Decimal(strings.TrimSpace(num)); ferr == nil {
			return Quantity{}, fmt.Errorf("%q is a percentage: write the number alone, a fraction for kv and demand (%s), percent for cpu (%s)",
				s, strconv.FormatFloat(f/100, 'g', -1, 64), strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	if err != nil {
		return Quantity{}, err
	}
	return Quantity{Value: v, Duration: dur, Set: true}, nil
}

// MarshalYAML prints the number (seconds for durations).
func (q Quantity) MarshalYAML() ([]byte, error) {
	return []byte(strconv.FormatFloat(q.Value, 'g', -1, 64)), nil
}
