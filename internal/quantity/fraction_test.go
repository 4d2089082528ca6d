package quantity

import (
	"errors"
	"strings"
	"testing"
)

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

// TestDecimal: Go's hex floats and digit separators are refused wherever a
// number is read (strconv reads 0x1p3 as 8 and 1_0 as 10; 0x18, 2x and
// 1p3 it refuses itself, and keep its error),
// in a target, a fraction and a policy's duration-or-number alike; decimal
// syntax, exponents included, reads as strconv does.
func TestDecimal(t *testing.T) {
	for s, want := range map[string]float64{"8": 8, "0.5": 0.5, "1e3": 1000, "-2.5E-1": -0.25, "+3": 3} {
		if got, err := Decimal(s); err != nil || got != want {
			t.Errorf("Decimal(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"0x1p3", "1_0", "0X1P-1", "0x1p2000"} {
		if _, err := Decimal(s); !errors.Is(err, ErrNotDecimal) {
			t.Errorf("Decimal(%q): %v, want ErrNotDecimal", s, err)
		}
		if _, err := Fraction(s + "%"); err == nil {
			t.Errorf("Fraction(%q%%): no error", s)
		}
		if _, _, err := Parse(s); err == nil || !strings.Contains(err.Error(), "decimal digits") {
			t.Errorf("Parse(%q): %v, want an error naming decimal digits", s, err)
		}
	}
	for _, s := range []string{"0x18", "2x", "1p3"} {
		if _, err := Decimal(s); err == nil || errors.Is(err, ErrNotDecimal) {
			t.Errorf("Decimal(%q): %v, want strconv's syntax error", s, err)
		}
	}
}
