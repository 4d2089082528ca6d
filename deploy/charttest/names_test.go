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
// "<fullname>-check-config" was 76 and "<fullname>-tune" 68. No two
// objects of one kind share a namespace and name: the check's ConfigMap,
// cut to 63, was the release's ConfigMap's name, which the pre-upgrade
// hook then deleted (before-hook-creation) and replaced with the config
// being checked, a failed check's kept for the running pods to read.
func TestLongReleaseNames(t *testing.T) {
	release := strings.Repeat("r", 63)
	objs, hooks, err := renderSplit(release, "tune: {enabled: true, shards: 2, results: {claimName: tune-results}}\n"+tunedTarget)
	if err != nil {
		t.Fatal(err)
	}
	jobs := 0
	seen := map[string]string{}
	for _, o := range append(objs, hooks...) {
		m, _ := o.obj.(interface {
			GetName() string
			GetNamespace() string
		})
		if m != nil {
			key := o.meta.Kind + " " + m.GetNamespace() + "/" + m.GetName()
			if first, ok := seen[key]; ok {
				t.Errorf("%s and %s: both %s", first, o.source, key)
			}
			seen[key] = o.source
		}
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
