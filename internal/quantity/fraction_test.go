package quantity

import "testing"

// TestFraction: a number is itself, a percentage a hundredth of it.
func TestFraction(t *testing.T) {
	for s, want := range map[string]float64{"0.75": 0.75, "75%": 0.75, "10%": 0.1, "1": 1, "150%": 1.5} {
		if got, err := Fraction(s); err != nil || got != want {
			t.Errorf("Fraction(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "%", "75%%", "x", "0.5 "} {
		if _, err := Fraction(s); err == nil {
			t.Errorf("Fraction(%q): no error", s)
		}
	}
}
