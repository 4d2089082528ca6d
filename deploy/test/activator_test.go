package deploytest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
	// A deleted pod stays in the Service's endpoints until kube-proxy
	// (and any ingress) sees the deletion; a listener closed at SIGTERM
	// refuses the connections sent to it meanwhile. The preStop sleep
	// keeps it accepting; the grace period, which counts the sleep too,
	// must still hold the drain: a request held on the sleep's last
	// second waits up to the hold timeout (300 s), and the drain gives
	// 5 s more. 5 + 300 + 5 = 310.
	var sleep int64
	if l := c.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		sleep = l.PreStop.Sleep.Seconds
	}
	if sleep < 5 {
		t.Errorf("preStop sleep %d s: want >= 5 s, so that connections sent while the Service drops the pod are not refused", sleep)
	}
	if ps.TerminationGracePeriodSeconds == nil || *ps.TerminationGracePeriodSeconds < sleep+300+5 {
		t.Errorf("terminationGracePeriodSeconds %v: want >= the preStop sleep (%d s) + the 300 s hold timeout + 5 s (SIGTERM drains held requests)", ps.TerminationGracePeriodSeconds, sleep)
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

// TestActivatorActivationPath: a request held at zero waits for the
// activator's scrape (its ServiceMonitor's interval, 15 s), infscale's
// decision (its pollingInterval, 15 s) and KEDA's poll (the ScaledObject's
// pollingInterval, 15 s): up to 15 + 15 + 15 = 45 s, as docs/keda.md says
// and deploy/activator/activator.yaml's header now says too (it said about
// 60 s); with the reference cold start (91 s), 136 s, inside the 300 s
// hold timeout.
func TestActivatorActivationPath(t *testing.T) {
	var path time.Duration
	for _, b := range bundles(t) {
		if b.dir != "activator" {
			continue
		}
		if len(b.scaled) != 1 || b.scaled[0].Spec.PollingInterval == nil || len(b.configs) != 1 {
			t.Fatalf("deploy/activator: %d ScaledObjects, %d infscale configs; want one each with a pollingInterval", len(b.scaled), len(b.configs))
		}
		path += time.Duration(*b.scaled[0].Spec.PollingInterval)*time.Second + b.configs[0].IntervalDuration()
	}
	sm := objectsOf[*monitoringv1.ServiceMonitor](t)
	var scrape time.Duration
	for _, v := range sm {
		if v.Name == "activator-chat" {
			d, err := time.ParseDuration(string(v.Spec.Endpoints[0].Interval))
			if err != nil {
				t.Fatal(err)
			}
			scrape = d
		}
	}
	path += scrape
	if path != 45*time.Second {
		t.Errorf("activation path %v (scrape %v + decision + KEDA poll), want 45s", path, scrape)
	}
	if path+91*time.Second >= 300*time.Second {
		t.Errorf("activation path %v + 91 s cold start: not inside the 300 s hold timeout", path)
	}
	b, err := os.ReadFile(filepath.Join(deployDir, "activator", "activator.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "activation path, up to 45 s, plus a cold start") {
		t.Error("deploy/activator/activator.yaml's header does not give the activation path as up to 45 s")
	}
	// docs/keda.md's sum: 45 s, then the 91 s cold start, 136 s in all (it
	// read as a cold start of 136 s).
	k, err := os.ReadFile(filepath.Join(deployDir, "..", "docs", "keda.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(k)), " "), "up to 45 s of scrape, decision and poll intervals, then the cold start (91 s for the reference replica): 136 s in all, inside the 300 s hold timeout") {
		t.Error("docs/keda.md does not give the activator's activation as 45 s + the 91 s cold start = 136 s")
	}
}
