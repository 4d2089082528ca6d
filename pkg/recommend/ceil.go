package recommend

import "math"

// ceilEpsilon is the relative slack ceilReplicas allows for floating point:
// 2.1/0.7 computes to 3.0000000000000004, which must give 3 replicas, as the
// HPA's milli-unit integer arithmetic (2100m/700m) does.
const ceilEpsilon = 1e-9

// maxReplicas caps a recommendation as the HPA caps at math.MaxInt32.
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
