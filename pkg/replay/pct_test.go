package replay

import (
	"math"
	"testing"
)

// TestFormatPct: a non-zero share never reads 0.0% (2,552 misses of 10
// million requests is 0.02552%: two significant digits, 0.026%), a share
// below 100 never reads 100.0%, and the rest keeps one decimal.
func TestFormatPct(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want string
	}{
		{0, "0.0%"},
		{100 * 2552 / 10e6, "0.026%"},
		{100 * 1.0 / 15783, "0.0063%"}, // one miss in the reference trace
		{0.0955, "0.1%"},               // rounds to 0.1 at one decimal already
		{0.094, "0.094%"},              // would round to 0.1 but reads 0.094
		{100 * 1.0 / 1e9, "<0.001%"},   // 1e-7 %
		{2.33, "2.3%"},
		{77.8, "77.8%"},
		{99.96, ">99.9%"},
		{100, "100.0%"},
		{math.NaN(), "-"},
	} {
		if got := FormatPct(c.p); got != c.want {
			t.Errorf("FormatPct(%v) = %q, want %q", c.p, got, c.want)
		}
	}
}
