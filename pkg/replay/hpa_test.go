package replay

import (
	"strings"
	"testing"
)

// TestHPAOptionOnce: an hpa(...) option given twice is refused as the inner
// policy's are (the last would win silently), at the second's column
// naming the first's; policies (uppods=...) may repeat. Columns by hand:
// "hpa(queue:24)," is 14 characters, so the first option is at 15, and
// "behavior=none," 14 more puts the second at 29, the third at 29+14=43.
func TestHPAOptionOnce(t *testing.T) {
	for spec, want := range map[string]string{
		"hpa(queue:24),behavior=none,downwindow=60,downwindow=300": "at column 43: option downwindow given twice (also at column 29); give it once",
		"hpa(queue:24),behavior=none,behavior=none":                "at column 29: option behavior given twice (also at column 15); give it once",
		"hpa(queue:24),tolerance=0.1,tolerance=0.2":                "at column 29: option tolerance given twice (also at column 15); give it once",
	} {
		if _, err := ParsePolicy(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
	if _, err := ParsePolicy("hpa(queue:24),uppods=4,uppods=2"); err != nil {
		t.Errorf("two scale-up policies refused: %v", err)
	}
}

// TestHPAToleranceErrorOnce: tolerance= sets both directions' tolerance;
// a bad value is one problem, said once (it was said for up and down).
// Column 25: "hpa(queue:24)," 14 + "tolerance=" 10, the value next.
func TestHPAToleranceErrorOnce(t *testing.T) {
	for _, spec := range []string{"hpa(queue:24),tolerance=-0.1", "hpa(queue:24),tolerance=nan", "hpa(queue:24),tolerance=nan,behavior=none"} {
		_, err := ParsePolicy(spec)
		if err == nil || strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), "at column 25: tolerance: ") {
			t.Errorf("%s: %q, want one line at column 25", spec, err)
		}
	}
	// Column 20: "queue:24," 9 + "tolerance=" 10, +1.
	if _, err := ParsePolicy("queue:24,tolerance=-0.1"); err == nil || strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), "at column 20: tolerance: -0.1 must be a finite fraction >= 0") {
		t.Errorf("queue:24,tolerance=-0.1: %q, want one line at column 20", err)
	}
}
