package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

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

// UnmarshalYAML decodes a number or a duration string (ParseQuantity).
func (q *Quantity) UnmarshalYAML(b []byte) error {
	v, err := ParseQuantity(strings.Trim(strings.TrimSpace(string(b)), `"'`))
	if err != nil {
		return err
	}
	*q = v
	return nil
}

// ParseQuantity reads a metric target, the one parser of the config file's
// target: key, decide's --target and simulate's policy strings: a finite
// number, or a duration in Prometheus's form (2s, 500ms, 1m30s, 1d) or Go's
// (0.5s, 1.5m) (Value in seconds, Duration set). Whether a duration suits the metric is the
// caller's check (only ttft and queuewait take one). Errors quote s.
func ParseQuantity(s string) (Quantity, error) {
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err == nil && (math.IsNaN(f) || math.IsInf(f, 0)):
		return Quantity{}, fmt.Errorf("%q is not a finite number", s)
	case err == nil:
		return Quantity{Value: f, Set: true}, nil
	case errors.Is(err, strconv.ErrRange):
		return Quantity{}, fmt.Errorf("%q is out of the range of a float64", s)
	}
	switch strings.ToLower(s) {
	case ".nan", ".inf", "+.inf", "-.inf": // YAML's spellings
		return Quantity{}, fmt.Errorf("%q is not a finite number", s)
	}
	if d, err := model.ParseDuration(s); err == nil {
		return Quantity{Value: float64(d) / 1e9, Duration: true, Set: true}, nil
	}
	// Go's form too: a fraction (0.5s) or microseconds, as simulate's
	// policy strings have always read them.
	d, err := time.ParseDuration(s)
	if err != nil {
		return Quantity{}, fmt.Errorf("invalid value %q", s)
	}
	return Quantity{Value: d.Seconds(), Duration: true, Set: true}, nil
}

// MarshalYAML prints the number (seconds for durations).
func (q Quantity) MarshalYAML() ([]byte, error) {
	return []byte(strconv.FormatFloat(q.Value, 'g', -1, 64)), nil
}
