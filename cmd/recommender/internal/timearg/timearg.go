// Package timearg is the one reader of a time given on the command line
// (decide --now, backtest and profile --start/--end): unix seconds, RFC3339
// and, where a front end allows it, "now" or a span relative to now.
package timearg

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/infscale/infscale/pkg/trace"
)

// Bounds are the earliest and latest times a front end accepts (inclusive).
type Bounds struct{ Min, Max time.Time }

var (
	// To9999 is 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z (unix
	// 253402300799), every time RFC3339 can write: decide's --now.
	To9999 = Bounds{time.Unix(0, 0).UTC(), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)}
	// To2262 is 1970 to the last second a time.Duration of nanoseconds
	// since 1970 reaches (unix 9223372036, year 2262): ranges whose spans
	// must fit a time.Duration (backtest, profile).
	To2262 = Bounds{time.Unix(0, 0).UTC(), time.Unix(math.MaxInt64/int64(time.Second), 0).UTC()}
)

// maxRelative is the longest relative span, in seconds: 100 years.
const maxRelative = 100 * 365.25 * 86400

// Parse reads s (surrounding spaces ignored): unix seconds, possibly
// fractional (1700000000, 1700000000.5); RFC3339, fractions allowed
// (2026-01-05T00:00:00Z); and, when relative is set, "now" or a signed span
// from now in trace.ParseSeconds's units ("-7d", "-36h", "+90m"; at most
// 100 years). The result is UTC and within b. Errors say what is allowed;
// they do not repeat s, which the caller prefixes with its flag.
func Parse(s string, now time.Time, relative bool, b Bounds) (time.Time, error) {
	s = strings.TrimSpace(s)
	syntax := "want unix seconds (1700000000) or RFC3339 (2026-01-05T00:00:00Z)"
	if relative {
		syntax = "want unix seconds (1700000000), RFC3339 (2026-01-05T00:00:00Z) or a relative time (-7d, now)"
	}
	var t time.Time
	switch {
	case relative && s == "now":
		t = now
	case relative && (strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+")):
		d, err := trace.ParseSeconds(s[1:])
		if err != nil || d < 0 || d > maxRelative {
			return time.Time{}, errors.New("want a relative time like -7d, -36h, now (at most 100 years)")
		}
		if s[0] == '-' {
			d = -d
		}
		t = now.Add(time.Duration(d * float64(time.Second)))
	default:
		if f, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			if math.IsNaN(f) {
				return time.Time{}, errors.New(syntax)
			}
			if !(f >= float64(b.Min.Unix()) && f <= float64(b.Max.Unix())) { // also ±Inf and overflow
				return time.Time{}, b.outOfRange()
			}
			sec, frac := math.Modf(f)
			return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
		}
		var err error
		if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return time.Time{}, errors.New(syntax)
		}
	}
	if t.Before(b.Min) || t.After(b.Max) {
		return time.Time{}, b.outOfRange()
	}
	return t.UTC(), nil
}

func (b Bounds) outOfRange() error {
	return fmt.Errorf("out of range: want unix seconds from %d to %d, or RFC3339 from %s to %s (years %d..%d)",
		b.Min.Unix(), b.Max.Unix(), b.Min.Format(time.RFC3339), b.Max.Format(time.RFC3339), b.Min.Year(), b.Max.Year())
}
