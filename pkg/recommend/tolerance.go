package recommend

import (
	"cmp"
	"strconv"
)

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

// ratioText formats a usage ratio the tolerance (or the direction, 1)
// is checked against: ratio's 4 significant digits, unless they read on
// the other side of, or on, an edge of the band or 1 than the ratio is
// (35.999 / 40 = 0.899975 is not "0.9 outside tolerance [0.9, 1.1]"):
// then every digit, so the text's comparison holds as printed.
func (t Tolerance) ratioText(r float64) string {
	s := ratio(r)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	for _, edge := range [...]float64{1.0 - t.Down, 1, 1.0 + t.Up} {
		if cmp.Compare(v, edge) != cmp.Compare(r, edge) {
			return strconv.FormatFloat(r, 'g', -1, 64)
		}
	}
	return s
}
