package recommend

import (
	"math"
	"strconv"
)

// ceilEpsilon is the relative slack ceilReplicas allows for floating point:
// 2.1/0.7 computes to 3.0000000000000004, which must give 3 replicas, as the
// HPA's milli-unit integer arithmetic (2100m/700m) does. The slack is at
// most ceilSlackMax, a milli-replica (the HPA's resolution): relative
// alone it would exceed half a replica from 5e8 on and undercount
// (1e9 + 0.5 must give 1000000001).
const (
	ceilEpsilon  = 1e-9
	ceilSlackMax = 1e-3
)

// maxReplicas caps a recommendation as the HPA caps at math.MaxInt32: a
// larger ceil (a queue of 1e300 requests) is recommended as 2147483647 and
// explained as capped (countText). A count that overflows float64 from
// finite inputs (1.7e308 running + 1.7e308 waiting = +Inf, 10 / 1e-320) is
// the same case, never a negative or undefined integer conversion.
const maxReplicas = math.MaxInt32

// ceilReplicas is ceil(x) for a replica count, guarded against
// floating-point noise and capped at maxReplicas: x <= 0 gives 0; x at or
// above the cap, +Inf, and NaN (only reached from an overflow such as
// +Inf − +Inf, since callers pass known signals) give maxReplicas.
func ceilReplicas(x float64) int {
	if x <= 0 {
		return 0
	}
	if !(x < maxReplicas) {
		return maxReplicas
	}
	c := math.Ceil(x - min(ceilEpsilon*math.Max(1, x), ceilSlackMax))
	if c >= maxReplicas {
		return maxReplicas
	}
	return int(c)
}

// countText is ceilReplicas(x) for a step's text, with the rounding said
// whenever it rounds: "ceil(2.125) = 3", so the printed quotient recomputes
// by hand (8.5 / 4 = 2.125, not 3); a whole x (or one the float guard
// forgives, 3.0000000000000004) is the count alone, "3". Above the cap it
// says so, e.g. "2.5e+09, capped at 2147483647", and an overflow says it
// overflowed, "+Inf (float64 overflow), capped at 2147483647", never a
// saturated count alone.
func countText(x float64) string {
	n := ceilReplicas(x)
	switch {
	case n == maxReplicas && (math.IsInf(x, 1) || math.IsNaN(x)):
		return num(x) + " (float64 overflow), capped at " + itoa(maxReplicas) + " (max int32)"
	case n == maxReplicas && x > maxReplicas:
		return num(x) + ", capped at " + itoa(maxReplicas) + " (max int32)"
	}
	return ceilText(x, n)
}

// ceilText is "ceil(x) = n" when n = ceilReplicas(x) rounds x up, else "n".
// x is printed as num prints it, with all its digits when that would read
// as a whole number other than n (ceil(2.0000001) = 3, never ceil(2) = 3).
func ceilText(x float64, n int) string {
	s := itoa(n)
	if x <= 0 {
		return s
	}
	f := num(x)
	if f == s {
		return s
	}
	if _, err := strconv.Atoi(f); err == nil {
		f = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return "ceil(" + f + ") = " + s
}

// countOnly is countText without the rounding said, for a text that
// already writes the ceil out ("max(1, ceil(5 / 4)) = 2").
func countOnly(x float64) string {
	if n := ceilReplicas(x); n < maxReplicas {
		return itoa(n)
	}
	return countText(x)
}

// perReplica is v / (target × n), the HPA's usage ratio for a total v over
// n replicas. When target × n overflows to +Inf (a target near the float64
// maximum) it is v / target / n instead, which stays finite and keeps the
// ratio's meaning; otherwise the product form, whose rounding the tolerance
// boundary tests pin (44 / (4 × 10) = 1.1000000000000000888).
func perReplica(v, target float64, n int) float64 {
	d := target * float64(n)
	if math.IsInf(d, 0) {
		return v / target / float64(n)
	}
	return v / d
}
