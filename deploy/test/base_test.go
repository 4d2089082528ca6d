package deploytest

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestInfscaleDeployment asserts the hardening and wiring of deploy/base:
// non-root, read-only root filesystem, no privilege escalation, resources,
// probes on /healthz and /readyz, no service-account token, the config
// mounted where --config points, and one port name shared by the
// container, the Service and the ServiceMonitor.
func TestInfscaleDeployment(t *testing.T) {
	var d *appsv1.Deployment
	for _, v := range objectsOf[*appsv1.Deployment](t) {
		if v.Name == "infscale" {
			if d != nil {
				t.Fatal("want one infscale Deployment under deploy/, have more")
			}
			d = v
		}
	}
	if d == nil {
		t.Fatal("no infscale Deployment under deploy/")
	}
	ps := d.Spec.Template.Spec
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken must be false: infscale never calls the Kubernetes API")
	}
	if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
		t.Error("pod securityContext.runAsNonRoot must be true")
	}
	if len(ps.Containers) != 1 {
		t.Fatalf("want one container, have %d", len(ps.Containers))
	}
	c := ps.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem must be true")
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation must be false")
	}
	if sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Error("capabilities must drop ALL")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v: want cpu and memory requests and a memory limit", c.Resources)
	}
	for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name {
			t.Errorf("want an HTTP probe on %s, have %+v", name, p)
		}
	}
	if len(c.Ports) != 1 {
		t.Fatalf("want one container port, have %d", len(c.Ports))
	}
	port := c.Ports[0].Name

	// --config=<dir>/<key>: the ConfigMap volume mounted at <dir> holds <key>.
	var cfg string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			cfg = v
		}
	}
	if cfg == "" {
		t.Fatal("no --config= argument")
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		key, ok := strings.CutPrefix(cfg, m.MountPath+"/")
		if !ok {
			continue
		}
		for _, v := range ps.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				for _, cm := range objectsOf[*corev1.ConfigMap](t) {
					if cm.Name == v.ConfigMap.Name && cm.Data[key] != "" {
						mounted = true
					}
				}
			}
		}
	}
	if !mounted {
		t.Errorf("--config=%s is not a key of a mounted ConfigMap", cfg)
	}

	for _, s := range objectsOf[*corev1.Service](t) {
		if s.Name != "infscale" {
			continue // the activator's (activator_test.go)
		}
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != port || s.Spec.Ports[0].TargetPort.StrVal != port {
			t.Errorf("Service %s ports %+v: want one port named %q targeting %q", s.Name, s.Spec.Ports, port, port)
		}
		for k, v := range s.Spec.Selector {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("Service %s selects %s=%s, which the pod template lacks", s.Name, k, v)
			}
		}
	}
	sms := objectsOf[*monitoringv1.ServiceMonitor](t)
	if len(sms) == 0 {
		t.Fatal("no ServiceMonitor for infscale")
	}
	for _, sm := range sms {
		if sm.Name != "infscale" {
			continue
		}
		if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != port {
			t.Errorf("ServiceMonitor %s endpoints %+v: want port %q", sm.Name, sm.Spec.Endpoints, port)
		}
	}
}
