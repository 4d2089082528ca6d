package replay

import (
	"strings"
	"testing"
)

// TestBaselineBoundOnce: a baseline's min= or max= given twice was read
// as the last one (knative:16,min=1,min=2 ran with min 2), where an
// infscale policy refuses any option given twice. Columns by hand:
// "knative:16," is 11 characters, so min=1 is at 12 and the second min
// at 12+6 = 18; "oracle," 7, max=3 at 8, max=4 at 14; "llmd-queue," 11,
// the second min at 18.
func TestBaselineBoundOnce(t *testing.T) {
	for spec, want := range map[string]string{
		"knative:16,min=1,min=2": "at column 18: option min given twice (also at column 12); give it once",
		"oracle,max=3,max=4":     "at column 14: option max given twice (also at column 8); give it once",
		"llmd-queue,min=1,min=2": "at column 18: option min given twice (also at column 12); give it once",
	} {
		if _, err := ParsePolicy(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
	if _, err := ParsePolicy("knative:16,min=1,max=2"); err != nil {
		t.Errorf("min and max once each refused: %v", err)
	}
}
