package trace

import (
	"strings"
	"testing"
)

// TestSyntheticKeyOnce: a synthetic trace's key given twice was read as
// the last one (synthetic:poisson,rate=2,rate=3 replayed 3 req/s), where a
// policy string, a Mooncake row and a calibration file refuse a key given
// twice. Field positions are 1-based and comma-separated: the process
// name is field 1, so rate=2 is field 2 and the second rate field 3.
func TestSyntheticKeyOnce(t *testing.T) {
	for spec, want := range map[string]string{
		"synthetic:poisson,rate=2,rate=3":           "synthetic field 3 rate: given twice (also field 2); give it once",
		"synthetic:onoff,gap=30,on=10,gap=300":      "synthetic field 4 gap: given twice (also field 2); give it once",
		"synthetic:step,low=1,high=9,low=2":         "synthetic field 4 low: given twice (also field 2); give it once",
		"synthetic:diurnal,duration=1h,duration=2h": "synthetic field 3 duration: given twice (also field 2); give it once",
	} {
		if _, err := Parse(spec, Options{Seed: 1}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
	if _, err := Parse("synthetic:poisson,rate=2,duration=60", Options{Seed: 1}); err != nil {
		t.Errorf("keys once each refused: %v", err)
	}
}
