package replay

import (
	"math"
	"strconv"
)

// FormatPct prints a percentage (0..100) for a table: one decimal
// ("2.3%"), except that a share which is not zero never prints as 0.0% and
// one below 100 never prints as 100.0%: below 0.1 it keeps two significant
// digits ("0.026%", then "<0.001%"), and from 99.95 up to 100 it prints
// ">99.9%". NaN and ±Inf print "-".
func FormatPct(p float64) string {
	switch {
	case math.IsNaN(p) || math.IsInf(p, 0):
		return "-"
	case p > 0 && p < 0.001:
		return "<0.001%"
	case p > 0 && p < 0.095:
		// Two significant digits: 0.0255 -> 0.026, 0.0012 -> 0.0012.
		digits := 1 - int(math.Floor(math.Log10(p)))
		return strconv.FormatFloat(p, 'f', digits, 64) + "%"
	case p >= 99.95 && p < 100:
		return ">99.9%"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + "%"
}
