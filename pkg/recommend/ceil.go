package recommend

import "math"

// ceilEpsilon is the relative slack ceilReplicas allows for floating point:
// 2.1/0.7 computes to 3.0000000000000004, which must give 3 replicas, as the
// HPA's milli-unit integer arithmetic (2100m/700m) does.
const ceilEpsilon = 1e-9

// maxReplicas caps a recommendation as the HPA caps at math.MaxInt32: a
// larger ceil (a queue of 1e300 requests) is recommended as 2147483647 and
// explained as capped (countText).
const maxReplicas = math.MaxInt32

// ceilReplicas is ceil(x) for a replica count, guarded against
// floating-point noise and capped at maxReplicas; x must be >= 0 and not NaN.
func ceilReplicas(x float64) int {
	if x <= 0 {
		return 0
	}
	c := math.Ceil(x - ceilEpsilon*math.Max(1, x))
	if c >= maxReplicas {
		return maxReplicas
	}
	return int(c)
}

// countText is ceilReplicas(x) for a step's text; above the cap it says so,
// e.g. "2.5e+09, capped at 2147483647", never a saturated count alone.
func countText(x float64) string {
	n := ceilReplicas(x)
	if n == maxReplicas && x > maxReplicas {
		return num(x) + ", capped at " + itoa(maxReplicas) + " (max int32)"
	}
	return itoa(n)
}
