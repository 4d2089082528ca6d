package charttest

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestImagePullPolicy: image.pullPolicy left empty is what the API server
// defaults an unset one to (Kubernetes' SetDefaults_Container: Always when
// the image's tag is latest, IfNotPresent otherwise), written out in serve's
// Deployment, the config check's Job and the tune CronJob alike; a value
// given is used as is. The chart's appVersion is latest, and it rendered
// IfNotPresent, so a node that had pulled latest once kept running that
// build through every upgrade and restart.
func TestImagePullPolicy(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cases := []struct {
		values string
		want   corev1.PullPolicy
	}{
		{"", corev1.PullAlways}, // tag "": appVersion latest
		{`image: {tag: latest}`, corev1.PullAlways},
		{`image: {tag: "0.2.0"}`, corev1.PullIfNotPresent},
		{`image: {tag: "0.2.0@` + digest + `"}`, corev1.PullIfNotPresent},
		{`image: {tag: "latest@` + digest + `"}`, corev1.PullAlways}, // Kubernetes reads the tag, latest
		{`image: {tag: "0.2.0", pullPolicy: Always}`, corev1.PullAlways},
		{`image: {pullPolicy: IfNotPresent}`, corev1.PullIfNotPresent},
		{`image: {pullPolicy: Never}`, corev1.PullNever},
	}
	const tune = "\ntune: {enabled: true, results: {claimName: tune-results}}\n" + tunedTarget
	for _, c := range cases {
		objs, hooks, err := renderSplit("infscale", c.values+tune)
		if err != nil {
			t.Fatalf("%q: %v", c.values, err)
		}
		got := map[string]corev1.PullPolicy{
			"Deployment": only[*appsv1.Deployment](t, objs).Spec.Template.Spec.Containers[0].ImagePullPolicy,
			"CronJob":    only[*batchv1.CronJob](t, objs).Spec.JobTemplate.Spec.Template.Spec.Containers[0].ImagePullPolicy,
			"check Job":  only[*batchv1.Job](t, hooks).Spec.Template.Spec.Containers[0].ImagePullPolicy,
		}
		for k, p := range got {
			if p != c.want {
				t.Errorf("%q: %s imagePullPolicy %q, want %q", c.values, k, p, c.want)
			}
		}
	}
	if _, err := tryRender("image: {pullPolicy: Sometimes}\n"); err == nil || !strings.Contains(err.Error(), "pullPolicy") {
		t.Errorf("pullPolicy Sometimes: %v, want the schema to refuse it naming pullPolicy", err)
	}
}
