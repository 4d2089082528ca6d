// Package quantity reads a metric target: a number or a duration. It is
// the one parser behind pkg/config's target: key (config.ParseQuantity),
// decide's --target and the replay's policy strings, kept apart so that the
// replay need not import pkg/config.
package quantity

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Parse reads s: a finite number (duration false), or a duration in
// Prometheus's form (2s, 500ms, 1m30s, 1d) or Go's (0.5s, 1.5m) as seconds
// (duration true). Whether a duration suits the metric is the caller's
// check (only ttft and queuewait take one). Errors quote s.
func Parse(s string) (value float64, duration bool, err error) {
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err == nil && (math.IsNaN(f) || math.IsInf(f, 0)):
		return 0, false, fmt.Errorf("%q is not a finite number", s)
	case err == nil:
		return f, false, nil
	case errors.Is(err, strconv.ErrRange):
		return 0, false, fmt.Errorf("%q is out of the range of a float64", s)
	}
	switch strings.ToLower(s) {
	case ".nan", ".inf", "+.inf", "-.inf": // YAML's spellings
		return 0, false, fmt.Errorf("%q is not a finite number", s)
	}
	if d, err := model.ParseDuration(s); err == nil {
		return float64(d) / 1e9, true, nil
	}
	// Go's form too: a fraction (0.5s) or microseconds, as simulate's
	// policy strings have always read them.
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, false, fmt.Errorf("invalid value %q", s)
	}
	return d.Seconds(), true, nil
}

// Fraction reads a fraction of one written as a number (0.75) or a
// percentage (75%): the kv and demand targets, tolerance, --kv. Errors are
// strconv's; callers say what they want.
func Fraction(s string) (float64, error) {
	num, pct := strings.CutSuffix(s, "%")
	f, err := strconv.ParseFloat(num, 64)
	if pct {
		f /= 100
	}
	return f, err
}
