package config

import (
	"errors"
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
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err == nil && (math.IsNaN(f) || math.IsInf(f, 0)):
		return fmt.Errorf("%q is not a finite number", s)
	case err == nil:
		*q = Quantity{Value: f, Set: true}
		return nil
	case errors.Is(err, strconv.ErrRange):
		return fmt.Errorf("%q is out of the range of a float64", s)
	}
	switch strings.ToLower(s) {
	case ".nan", ".inf", "+.inf", "-.inf": // YAML's spellings
		return fmt.Errorf("%q is not a finite number", s)
	}
	d, err := model.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid value %q", s)
	}
	*q = Quantity{Value: float64(d) / 1e9, Duration: true, Set: true}
	return nil
}

// MarshalYAML prints the number (seconds for durations).
func (q Quantity) MarshalYAML() ([]byte, error) {
	return []byte(strconv.FormatFloat(q.Value, 'g', -1, 64)), nil
}
