package trace

import (
	"strings"
	"testing"
)

// TestGeneratedBound: a synthetic spec's rate and duration were bounded
// one by one (each below 1e9), not their product, so rate=1e6 for 7 days
// (6.048e11 requests) was accepted and ran for months (tune read its
// screening windows into memory). A spec expecting more than MaxGenerated
// requests (2^28 = 268,435,456) is refused at parse, before a draw, naming
// the spec, the count and what to lower. The counts are worked by hand:
// rate x duration, or each rate over its share of the duration.
func TestGeneratedBound(t *testing.T) {
	if MaxGenerated != 268_435_456 {
		t.Fatalf("MaxGenerated %d, want 2^28 = 268435456 (4 GiB / 16 bytes a row)", MaxGenerated)
	}
	for spec, want := range map[string]string{
		// 74,566 x 3,600 = 268,437,600: 2,144 past the bound.
		"synthetic:poisson,rate=74566,duration=1h": `trace "synthetic:poisson,rate=74566,duration=1h" draws about 2.68e+08 requests (its rate over its duration), more than the 268435456 a generated trace may draw (as many as a 4 GiB trace file holds at 16 bytes a row); lower rate= or duration=`,
		// 1e6 x 604,800 = 6.048e11.
		"synthetic:poisson,rate=1e6,duration=7d": "draws about 6.05e+11 requests",
		// 1e5 req/s throughout an hour (low and high alike): 3.6e8.
		"synthetic:step,low=1e5,high=1e5,duration=1h": "draws about 3.6e+08 requests (its rate over its duration), more than the 268435456 a generated trace may draw (as many as a 4 GiB trace file holds at 16 bytes a row); lower low=, high= (or for=) or duration=",
		// 1e4 req/s at trough and peak for two days: 1.728e9.
		"synthetic:diurnal,trough=1e4,peak=1e4,duration=2d": "draws about 1.73e+09 requests (its rate over its duration), more than the 268435456 a generated trace may draw (as many as a 4 GiB trace file holds at 16 bytes a row); lower trough=, peak= or duration=",
		// The mean rate 1e5 for an hour: 3.6e8 (its bursts within a spread,
		// 1e5 x 150/60 x 2 + 20 = 500,020, are within onoff's own bound).
		"synthetic:onoff,rate=1e5,duration=1h": "draws about 3.6e+08 requests (its rate over its duration), more than the 268435456 a generated trace may draw (as many as a 4 GiB trace file holds at 16 bytes a row); lower rate= or duration=",
	} {
		_, err := Parse(spec, Options{Seed: 1})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to contain %q", spec, err, want)
		}
	}
	// 74,565 x 3,600 = 268,434,000, within the bound; the step default
	// (3 -> 25 -> 3 req/s, ten minutes each: 18,600) and a day of the
	// diurnal default (the mean 16.5 req/s: about 1.43 million) too.
	for _, spec := range []string{"synthetic:poisson,rate=74565,duration=1h", "synthetic:step", "synthetic:diurnal", "synthetic:onoff,rate=1e5,duration=10m"} {
		if _, err := Parse(spec, Options{Seed: 1}); err != nil {
			t.Errorf("%s: %v, want it admitted", spec, err)
		}
	}
}
