package charttest

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

// TestLongReleaseNames: a release name at Kubernetes' 63-character limit
// (the fullname cut to 63) still gives objects the API server accepts: a
// Job's name at most 63 characters (its pods carry it as the job-name
// label value) and a CronJob's at most 52 (it appends 11 for its Jobs).
// "<fullname>-check-config" was 76 and "<fullname>-tune" 68.
func TestLongReleaseNames(t *testing.T) {
	release := strings.Repeat("r", 63)
	objs, hooks, err := renderSplit(release, "tune: {enabled: true, shards: 2, results: {claimName: tune-results}}\n"+tunedTarget)
	if err != nil {
		t.Fatal(err)
	}
	jobs := 0
	for _, o := range append(objs, hooks...) {
		switch x := o.obj.(type) {
		case *batchv1.Job:
			jobs++
			if n := len(x.Name); n > 63 || strings.HasSuffix(x.Name, "-") {
				t.Errorf("%s: Job %q: %d characters, want at most 63, not ending in -", o.source, x.Name, n)
			}
		case *batchv1.CronJob:
			jobs++
			if n := len(x.Name); n > 52 || strings.HasSuffix(x.Name, "-") {
				t.Errorf("%s: CronJob %q: %d characters, want at most 52, not ending in -", o.source, x.Name, n)
			}
		}
	}
	if jobs != 2 {
		t.Errorf("%d Jobs and CronJobs rendered, want the config check's Job and the tune CronJob", jobs)
	}
}
