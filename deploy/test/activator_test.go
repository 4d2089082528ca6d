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
// infscale is, proxies to the chat Service, serves its own /metrics and
// /healthz on a port of their own (--metrics-listen: clients of the proxy
// port read neither, and reach chat's), probes its own /healthz there (on
// the proxy port /healthz is chat's: at zero replicas the activator would
// be unready and hold nothing), holds for longer than the activation path
// plus a cold start, gets the grace period to drain, and is scraped on the
// metrics port through its Service.
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
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if !slices.Contains(c.Args, "--listen=0.0.0.0:8080") || !slices.Contains(c.Args, "--metrics-listen=0.0.0.0:9090") || ports["http"] != 8080 || ports["metrics"] != 9090 {
		t.Errorf("args %v, ports %v: want --listen=0.0.0.0:8080 (port http) and --metrics-listen=0.0.0.0:9090 (port metrics)", c.Args, ports)
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "metrics" {
			t.Errorf("probe %+v: want /healthz on port metrics (the activator's own, not the upstream's)", p)
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
	if svc == nil || sm == nil || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Fatalf("service %+v / monitor %+v: want one ServiceMonitor endpoint, /metrics", svc, sm)
	}
	// The ServiceMonitor scrapes the Service port that targets the
	// container's metrics port; clients are sent to the one that targets
	// http (the proxy).
	target := map[string]string{}
	for _, p := range svc.Spec.Ports {
		target[p.Name] = p.TargetPort.String()
	}
	if target[sm.Spec.Endpoints[0].Port] != "metrics" || target["http"] != "http" {
		t.Errorf("Service ports %v, ServiceMonitor port %q: want the ServiceMonitor on the port targeting metrics, and http targeting http", target, sm.Spec.Endpoints[0].Port)
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

// TestActivationPath: a request held at zero waits, on each path to zero
// (deploy/activator, deploy/zero), for four intervals, each up to in full:
// Prometheus scraping the held count (the activator's ServiceMonitor, the
// interceptor's PodMonitor), infscale's decision (its pollingInterval),
// Prometheus scraping that decision (infscale's ServiceMonitor: KEDA reads
// infscale_desired_replicas from Prometheus, not from infscale), and KEDA's
// poll (the ScaledObject's pollingInterval). 15 s each: up to 60 s (the
// sum once left out infscale's own scrape and said 45 s); with the
// reference cold start (91 s), 151 s, inside the 300 s hold timeout.
func TestActivationPath(t *testing.T) {
	scrape := func(name string, iv monitoringv1.Duration) time.Duration {
		d, err := time.ParseDuration(string(iv))
		if err != nil {
			t.Fatalf("%s interval %q: %v", name, iv, err)
		}
		return d
	}
	monitors := map[string]time.Duration{}
	for _, v := range objectsOf[*monitoringv1.ServiceMonitor](t) {
		monitors[v.Name] = scrape(v.Name, v.Spec.Endpoints[0].Interval)
	}
	for _, v := range objectsOf[*monitoringv1.PodMonitor](t) {
		monitors[v.Name] = scrape(v.Name, v.Spec.PodMetricsEndpoints[0].Interval)
	}
	holder := map[string]string{"activator": "activator-chat", "zero": "keda-http-interceptor"}
	seen := 0
	for _, b := range bundles(t) {
		mon, ok := holder[b.dir]
		if !ok {
			continue
		}
		seen++
		if len(b.scaled) != 1 || b.scaled[0].Spec.PollingInterval == nil || len(b.configs) != 1 {
			t.Fatalf("deploy/%s: %d ScaledObjects, %d infscale configs; want one each with a pollingInterval", b.dir, len(b.scaled), len(b.configs))
		}
		if monitors[mon] == 0 || monitors["infscale"] == 0 {
			t.Fatalf("deploy/%s: no scrape interval for %s or infscale", b.dir, mon)
		}
		path := monitors[mon] + b.configs[0].IntervalDuration() + monitors["infscale"] +
			time.Duration(*b.scaled[0].Spec.PollingInterval)*time.Second
		if path != 60*time.Second {
			t.Errorf("deploy/%s: activation path %v (held scrape + decision + infscale scrape + KEDA poll), want 60s", b.dir, path)
		}
		if path+91*time.Second >= 300*time.Second {
			t.Errorf("deploy/%s: activation path %v + 91 s cold start: not inside the 300 s hold timeout", b.dir, path)
		}
	}
	if seen != len(holder) {
		t.Fatalf("found %d of the %d paths to zero", seen, len(holder))
	}
	words := func(parts ...string) string {
		b, err := os.ReadFile(filepath.Join(parts...))
		if err != nil {
			t.Fatal(err)
		}
		var w []string // words, a YAML comment's # left out
		for _, f := range strings.Fields(string(b)) {
			if f != "#" {
				w = append(w, f)
			}
		}
		return strings.Join(w, " ")
	}
	for _, c := range []struct{ file, want string }{
		{filepath.Join(deployDir, "activator", "activator.yaml"), "activation path, up to 60 s, plus a cold start"},
		{filepath.Join(deployDir, "zero", "interceptorroute.yaml"), "KEDA poll 15 s = 60 s) plus the cold start (reference replica: 91 s) = 151 s"},
		{filepath.Join(deployDir, "..", "docs", "keda.md"), "up to 60 s before the pod is created"},
		{filepath.Join(deployDir, "..", "docs", "keda.md"), "60 + 91 = 151 s"},
		{filepath.Join(deployDir, "..", "docs", "keda.md"), "up to 60 s of scrape, decision, scrape and poll intervals, then the cold start (91 s for the reference replica): 151 s in all, inside the 300 s hold timeout"},
		{filepath.Join(deployDir, "..", "docs", "activator.md"), "in a cluster with 15 s intervals, up to 60 s plus the cold start"},
	} {
		if !strings.Contains(words(c.file), c.want) {
			t.Errorf("%s does not say %q", c.file, c.want)
		}
	}
}
