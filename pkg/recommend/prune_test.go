package recommend

import (
	"slices"
	"testing"
	"time"
)

// TestPruneOld: recommendations at -10 s, -5 s, -3 s and 0 s, a window of
// 5 s. The HPA's behavior windows count timestamps after now - 5 s, so
// -10 s and -5 s go; the window without behavior counts its start, so only
// -10 s goes.
func TestPruneOld(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func() []TimedReplicas {
		var s []TimedReplicas
		for i, off := range []int{-10, -5, -3, 0} {
			s = append(s, TimedReplicas{At: now.Add(time.Duration(off) * time.Second), Replicas: i + 1})
		}
		return s
	}
	for _, c := range []struct {
		keepCutoff bool
		want       []int
	}{{false, []int{3, 4}}, {true, []int{2, 3, 4}}} {
		got := pruneOld(mk(), now.Add(-5*time.Second), recAt, c.keepCutoff)
		var reps []int
		for _, r := range got {
			reps = append(reps, r.Replicas)
		}
		if !slices.Equal(reps, c.want) {
			t.Errorf("keepCutoff %v: kept replicas %v, want %v", c.keepCutoff, reps, c.want)
		}
	}
	if got := pruneOld([]DemandSample(nil), now, sampleAt, false); len(got) != 0 {
		t.Errorf("empty: %v", got)
	}
}
