package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
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

// UnmarshalYAML decodes a number or a duration string.
func (q *Quantity) UnmarshalYAML(b []byte) error {
	s := strings.TrimSpace(string(b))
	s = strings.Trim(s, `"'`)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%q is not a finite number", s)
		}
		*q = Quantity{Value: f, Set: true}
		return nil
	}
	d, err := model.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is neither a number nor a duration such as 2s or 500ms", s)
	}
	*q = Quantity{Value: float64(d) / 1e9, Duration: true, Set: true}
	return nil
}

// MarshalYAML prints the number (seconds for durations).
func (q Quantity) MarshalYAML() ([]byte, error) {
	return []byte(strconv.FormatFloat(q.Value, 'g', -1, 64)), nil
}
