package recommend

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// num formats a value for a step's text: integers below 1e15 without a
// point, others with up to 6 significant digits (0.000015 in decimals; below
// 1e-6 and from 1e15 in exponent form, 1e+300, never hundreds of digits), NaN
// as "unknown".
func num(x float64) string {
	a := math.Abs(x)
	switch {
	case math.IsNaN(x):
		return "unknown"
	case math.IsInf(x, 0):
		return strconv.FormatFloat(x, 'f', -1, 64)
	case x == math.Trunc(x) && a < 1e15:
		return strconv.FormatInt(int64(x), 10)
	}
	s := strconv.FormatFloat(x, 'g', 6, 64)
	if strings.ContainsAny(s, "e") && a >= 1e-6 && a < 1e15 {
		s = strconv.FormatFloat(x, 'f', -1, 64)
	}
	return s
}

// appendNum appends x to b as num formats it, without a string per number
// (a list of samples in one buffer).
func appendNum(b []byte, x float64) []byte {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return strconv.AppendInt(b, int64(x), 10)
	}
	return append(b, num(x)...)
}

// ratio formats a usage ratio with 4 significant digits.
func ratio(x float64) string {
	if math.IsNaN(x) {
		return "unknown"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

func itoa(i int) string { return strconv.Itoa(i) }

// secs formats a duration in Go syntax (90s, 5m0s). Small enough to
// inline, so the string stays off the heap (the windows' texts are written
// at every decision).
func secs(d time.Duration) string { return d.String() }

// age formats a time measured between two instants (an idle time, how long
// replicas serve, how old a recommendation is) as secs does, cut to the
// millisecond: serve reads the wall clock, whose nanoseconds
// (5.064594029s) are noise to a reader. Truncated, not rounded, so a
// comparison the text shows stays true (idle 4m59.9996s reads 4m59.999s <
// cooldown 5m0s, never 5m0s < 5m0s); below a millisecond it is as is.
func age(d time.Duration) string {
	if d > time.Millisecond || d < -time.Millisecond {
		d -= d % time.Millisecond
	}
	return d.String()
}
