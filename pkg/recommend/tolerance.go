package recommend

// within reports whether a usage ratio is inside the tolerance band, with
// the Kubernetes >= 1.33 inclusive range check of the HPA's
// Tolerances.isWithin: (1-down) <= ratio <= (1+up). The range check, not
// |1-ratio| <= tolerance, is pinned because the boundary is float-sensitive:
// 44/(4×10) computes to 1.1000000000000000888 and so does 1.0+0.1, so a
// total of 44 on 10 replicas at target 4 keeps 10 (case C11 row 3).
func (t Tolerance) within(r float64) bool {
	return (1.0-t.Down) <= r && r <= (1.0+t.Up)
}

// band formats the band for a step's text, e.g. "[0.9, 1.1]".
func (t Tolerance) band() string {
	return "[" + num(1.0-t.Down) + ", " + num(1.0+t.Up) + "]"
}
