package deploytest

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestActivatorDeployment: deploy/activator's activator is hardened as
// infscale is, proxies to the chat Service, probes its own /healthz, holds
// for longer than the activation path plus a cold start, gets the grace
// period to drain, and is scraped on the port its Service names.
func TestActivatorDeployment(t *testing.T) {
	var d *appsv1.Deployment
	for _, v := range objectsOf[*appsv1.Deployment](t) {
		if v.Name == "activator-chat" {
			d = v
		}
	}
	if d == nil {
		t.Fatal("no activator-chat Deployment under deploy/")
	}
	ps := d.Spec.Template.Spec
	c := ps.Containers[0]
	sc := c.SecurityContext
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken || ps.SecurityContext == nil || !*ps.SecurityContext.RunAsNonRoot ||
		sc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Error("activator: want no token, non-root, read-only root, no privilege escalation, capabilities dropped")
	}
	if len(c.Args) == 0 || c.Args[0] != "activator" || !slices.Contains(c.Args, "--upstream=http://chat.llm.svc:8000") || !slices.Contains(c.Args, "--hold-timeout=300s") {
		t.Errorf("args %v: want activator --upstream=http://chat.llm.svc:8000 --hold-timeout=300s", c.Args)
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
			t.Errorf("probe %+v: want /healthz (the activator's own, not the upstream's)", p)
		}
	}
	if ps.TerminationGracePeriodSeconds == nil || *ps.TerminationGracePeriodSeconds < 300 {
		t.Errorf("terminationGracePeriodSeconds %v: want >= the 300 s hold timeout (SIGTERM drains held requests)", ps.TerminationGracePeriodSeconds)
	}
	var svc *corev1.Service
	for _, v := range objectsOf[*corev1.Service](t) {
		if v.Name == "activator-chat" {
			svc = v
		}
	}
	var sm *monitoringv1.ServiceMonitor
	for _, v := range objectsOf[*monitoringv1.ServiceMonitor](t) {
		if v.Name == "activator-chat" {
			sm = v
		}
	}
	if svc == nil || sm == nil || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Fatalf("service %+v / monitor %+v: want the ServiceMonitor on the Service's port, /metrics", svc, sm)
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("Service activator-chat selects %s=%s, which the pod template lacks", k, v)
		}
	}
	for _, cm := range objectsOf[*corev1.ConfigMap](t) {
		if y := cm.Data["infscale.yaml"]; strings.Contains(y, "infscale_activator_held_requests") && !strings.Contains(y, `service="activator-chat"`) {
			t.Error("zero.held must select the activator's Service (the ServiceMonitor's service label)")
		}
	}
}
