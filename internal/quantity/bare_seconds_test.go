package quantity

import (
	"strings"
	"testing"
)

// TestCheckBareSecondsSuggestionsLoad: both values the refusal suggests
// are read back by Parse as durations. For 1000000 it wrote "1e+06ms",
// which Parse refuses.
func TestCheckBareSecondsSuggestionsLoad(t *testing.T) {
	for v, want := range map[float64][]string{
		2000:    {"2000ms", "2000s"},
		2500.5:  {"2500.5ms", "2500.5s"},
		1000000: {"1000000ms", "1000000s"},
	} {
		err := CheckBareSeconds(v, false)
		if err == nil {
			t.Fatalf("CheckBareSeconds(%v) = nil, want a refusal", v)
		}
		for _, s := range want {
			if !strings.Contains(err.Error(), "write "+s) && !strings.Contains(err.Error(), "or "+s) {
				t.Errorf("CheckBareSeconds(%v) = %q, want it to suggest %s", v, err, s)
			}
			if _, dur, perr := Parse(s); perr != nil || !dur {
				t.Errorf("the suggestion %s: Parse = %v, duration %v; want a duration", s, perr, dur)
			}
		}
	}
}
