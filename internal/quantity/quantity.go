// Package quantity reads a metric target: a number, a percentage or a
// duration. It is the one parser behind pkg/config's target: key
// (config.ParseQuantity), decide's --target and the replay's policy
// strings, kept apart so that the replay need not import pkg/config.
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
	f, err := Decimal(s)
	switch {
	case err == nil && (math.IsNaN(f) || math.IsInf(f, 0)):
		return 0, false, fmt.Errorf("%q is not a finite number", s)
	case err == nil:
		return f, false, nil
	case errors.Is(err, strconv.ErrRange):
		return 0, false, fmt.Errorf("%q is out of the range of a float64", s)
	case errors.Is(err, ErrNotDecimal):
		return 0, false, fmt.Errorf("%q is not a number in %w", s, ErrNotDecimal)
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

// ParseTarget reads s as Parse does, or a percentage (80%, 12.5%): value
// 80 with percent true. What a percentage means is the signal's (a
// fraction for kv and demand, percent for cpu, refused for the others:
// recommend.Signal.TargetValue). Errors quote s.
func ParseTarget(s string) (value float64, duration, percent bool, err error) {
	if num, pct := strings.CutSuffix(strings.TrimSpace(s), "%"); pct {
		f, err := Decimal(strings.TrimSpace(num))
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false, false, fmt.Errorf("%q is not a percentage (a finite number before %%)", s)
		}
		return f, false, true, nil
	}
	v, dur, err := Parse(s)
	return v, dur, false, err
}

// ErrNotDecimal is Decimal's error for Go's other number syntax.
var ErrNotDecimal = errors.New("decimal digits: 0x, p exponents and _ are not read")

// Decimal is strconv.ParseFloat on decimal syntax alone: what it would
// read in Go's hex floats (0x1p3 as 8) or with digit separators (1_0) is
// refused with ErrNotDecimal, as the trace readers refuse them; no flag, target or
// policy of infscale is written so. NaN and Inf are strconv's, for the
// caller's range check. Errors are strconv's otherwise.
func Decimal(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if (err == nil || errors.Is(err, strconv.ErrRange)) && strings.ContainsAny(s, "_xXpP") {
		return 0, &strconv.NumError{Func: "ParseFloat", Num: s, Err: ErrNotDecimal}
	}
	return f, err
}

// Fraction reads a fraction of one written as a number (0.75) or a
// percentage (75%): the kv and demand targets, tolerance, --kv. Errors are
// strconv's; callers say what they want.
func Fraction(s string) (float64, error) {
	num, pct := strings.CutSuffix(s, "%")
	f, err := Decimal(num)
	if pct {
		f /= 100
	}
	return f, err
}

// BareSecondsLimit is the least seconds target (ttft, queuewait) that must
// carry its unit: a minute.
const BareSecondsLimit = 60

// CheckBareSeconds refuses a seconds target Parse read as a bare number
// (duration false) of BareSecondsLimit or more: that is the milliseconds
// slip (load's --goodput, as vLLM's, reads a bare number as ms), and 2000
// read as seconds is a TTFT target nothing reaches. With a unit any value
// stands.
func CheckBareSeconds(v float64, duration bool) error {
	if duration || !(v >= BareSecondsLimit) {
		return nil
	}
	n := strconv.FormatFloat(v, 'f', -1, 64) // not 1e+06: Parse takes no exponent with a unit
	as := ""
	if v < 1e9 {
		as = " (" + model.Duration(time.Duration(v*float64(time.Second))).String() + ")"
	}
	return fmt.Errorf("%s has no unit and would read as seconds%s: write %sms for milliseconds, or %ss (a number alone is seconds below %d only)", n, as, n, n, BareSecondsLimit)
}

// PercentText writes a fraction x as a percentage (no sign) by moving the
// point of x's shortest decimal form two places: 1.1 is "110", where
// x*100 would be 110.00000000000001, and 1e308 "1e+310", where x*100
// overflows to +Inf.
func PercentText(x float64) string {
	mant, exp, _ := strings.Cut(strconv.FormatFloat(x, 'e', -1, 64), "e")
	e, _ := strconv.Atoi(exp)
	if p, err := strconv.ParseFloat(mant+"e"+strconv.Itoa(e+2), 64); err == nil {
		return strconv.FormatFloat(p, 'g', -1, 64)
	}
	return mant + "e+" + strconv.Itoa(e+2) // beyond float64
}
