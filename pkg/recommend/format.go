package recommend

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// num formats a value for a step's text: integers without a point, others
// with up to 6 significant digits, NaN as "unknown".
func num(x float64) string {
	switch {
	case math.IsNaN(x):
		return "unknown"
	case math.IsInf(x, 0):
		return strconv.FormatFloat(x, 'f', -1, 64)
	case x == math.Trunc(x) && math.Abs(x) < 1e15:
		return strconv.FormatInt(int64(x), 10)
	}
	s := strconv.FormatFloat(x, 'g', 6, 64)
	if strings.ContainsAny(s, "e") {
		s = strconv.FormatFloat(x, 'f', -1, 64)
	}
	return s
}

// ratio formats a usage ratio with 4 significant digits.
func ratio(x float64) string {
	if math.IsNaN(x) {
		return "unknown"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

func itoa(i int) string { return strconv.Itoa(i) }

// secs formats a duration in Go syntax (90s, 5m0s).
func secs(d time.Duration) string { return d.String() }
