package charttest

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestScrapeJobIsInfscale: whatever the release is named, the job label
// prometheus-operator gives infscale's series (the value of the Service
// label the ServiceMonitor's jobLabel names, else the Service's name) is
// "infscale", which rules/ alert on (InfscaleDown: up{job="infscale"} by
// namespace and Service, or none at all) and the dashboard's "up" reads. Under a release "prod" it was
// "prod-infscale": InfscaleDown paged for as long as the release ran.
// nameOverride and fullnameOverride rename the objects, not the job: with
// nameOverride "llmscale" the job was "llmscale" (jobLabel read the
// Service's app.kubernetes.io/name), and InfscaleDown paged as well.
func TestScrapeJobIsInfscale(t *testing.T) {
	for _, c := range []struct{ release, values string }{
		{"infscale", ""},
		{"prod", ""},
		{"infscale-prod", ""},
		{"infscale", "nameOverride: llmscale"},
		{"prod", "nameOverride: llmscale"},
		{"prod", "fullnameOverride: autoscaler"},
	} {
		release := c.release + " " + c.values
		objs, err := tryRenderRelease(c.release, c.values)
		if err != nil {
			t.Fatalf("release %s: %v", release, err)
		}
		sm := only[*monitoringv1.ServiceMonitor](t, objs)
		svc := only[*corev1.Service](t, objs)
		job := svc.Name
		if v, ok := svc.Labels[sm.Spec.JobLabel]; sm.Spec.JobLabel != "" && ok {
			job = v
		}
		if job != "infscale" {
			t.Errorf("release %s: scrape job %q (Service %s, jobLabel %q), want infscale", release, job, svc.Name, sm.Spec.JobLabel)
		}
	}
}
