package replay

import (
	"testing"
)

// TestTTFTBandsShortReplay: a replay of fewer periods than plotBins (20
// periods of 15 s over 300 s) put each period's TTFT p95 in a bin of
// 300/96 = 3.125 s with empty bins between them, so the median line broke
// at every gap and the panel drew nothing: the TTFT panel of a 300 s step
// replay with 20% misses was blank. A bin is at least one period wide, so
// the 20 periods make 20 adjacent bins and one line of 20 points, each the
// period's own value.
func TestTTFTBandsShortReplay(t *testing.T) {
	var tl []Sample
	for i := 1; i <= 20; i++ {
		tl = append(tl, Sample{T: 15 * float64(i), TTFTP95: 0.1 * float64(i)})
	}
	med, bands := ttftBands(tl, 300, func(x float64) float64 { return x })
	runs := splitRuns(med)
	if len(runs) != 1 || len(runs[0]) != 20 {
		lens := []int{}
		for _, r := range runs {
			lens = append(lens, len(r))
		}
		t.Fatalf("median line in runs of %v points, want one run of 20", lens)
	}
	for i, p := range runs[0] {
		// the bins are the periods: 0.1 x (i+1) is the period's own p95
		// (the sketch's quantile of one value, within its 0.2%).
		if want := 0.1 * float64(i+1); p.Y < want*0.99 || p.Y > want*1.01 {
			t.Errorf("point %d: %g, want %g", i, p.Y, want)
		}
	}
	if len(bands) != 1 {
		t.Errorf("%d bands, want one", len(bands))
	}
}
