package recommend

import "time"

// pruneOld drops the entries of s (oldest first) that a window starting at
// cutoff no longer counts, reusing the backing array: those at or before
// cutoff, as the HPA's stabilization windows count a recommendation only
// when its timestamp is after now - window (stabilizeRecommendationWithBehaviors);
// with keepCutoff, only those before cutoff, for the window that counts its
// start (the HPA without behavior, stabilizeRecommendation).
func pruneOld[T any](s []T, cutoff time.Time, at func(T) time.Time, keepCutoff bool) []T {
	i := 0
	for i < len(s) && (at(s[i]).Before(cutoff) || !keepCutoff && at(s[i]).Equal(cutoff)) {
		i++
	}
	if i == 0 {
		return s
	}
	return s[:copy(s, s[i:])]
}

func recAt(r TimedReplicas) time.Time   { return r.At }
func sampleAt(d DemandSample) time.Time { return d.At }
