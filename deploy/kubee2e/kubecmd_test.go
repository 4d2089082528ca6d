package kubee2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// kubeRun runs `bin/infscale kube` on the test API server with args and
// returns its exit code, stdout and stderr.
func (c *cluster) kubeRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(infscale(t), append([]string{"kube", "--kubeconfig", c.kubeconfig(t), "-n", metav1.NamespaceDefault}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// rollouts is the resource of the test's Rollout-like CRD.
var rollouts = schema.GroupVersionResource{Group: "e2e.infscale.dev", Version: "v1", Resource: "rollouts"}

// installRolloutCRD installs a CRD of kind Rollout (e2e.infscale.dev/v1)
// with a scale subresource, as Argo Rollouts and LeaderWorkerSet declare
// theirs: spec.replicas, status.replicas and, when withSelector, the
// status.selector the HPA reads to find the pods (labelSelectorPath).
func (c *cluster) installRolloutCRD(t *testing.T, kind, plural string, withSelector bool) dynamic.Interface {
	t.Helper()
	scale := map[string]any{"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}
	if withSelector {
		scale["labelSelectorPath"] = ".status.selector"
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".e2e.infscale.dev"},
		"spec": map[string]any{
			"group": "e2e.infscale.dev", "scope": "Namespaced",
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}, "scale": scale},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	return c.installCRD(t, crd, schema.GroupVersionResource{Group: "e2e.infscale.dev", Version: "v1", Resource: plural})
}

// createRollout creates name of the CRD (plural) at spec.replicas and, as
// its controller would, publishes status.selector app=app.
func createRollout(t *testing.T, dyn dynamic.Interface, kind, plural, name, app string, replicas int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gvr := schema.GroupVersionResource{Group: "e2e.infscale.dev", Version: "v1", Resource: plural}
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.infscale.dev/v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": metav1.NamespaceDefault},
		"spec":     map[string]any{"replicas": replicas},
	}}
	o, err := dyn.Resource(gvr).Namespace(metav1.NamespaceDefault).Create(ctx, o, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.Object["status"] = map[string]any{"replicas": replicas, "selector": "app=" + app}
	if _, err := dyn.Resource(gvr).Namespace(metav1.NamespaceDefault).UpdateStatus(ctx, o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func rolloutReplicas(t *testing.T, dyn dynamic.Interface, plural, name string) int64 {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "e2e.infscale.dev", Version: "v1", Resource: plural}
	o, err := dyn.Resource(gvr).Namespace(metav1.NamespaceDefault).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
	return n
}

// servedPair starts two fake replicas at 16 + 4 = 20 and creates their
// Ready pods name-a, name-b with label app=app.
func (c *cluster) servedPair(t *testing.T, f *fleet, app string) {
	t.Helper()
	for _, s := range []string{"a", "b"} {
		r := f.Start(t, 16, 4)
		c.createPod(t, app, app+"-"+s, f.Port, r.IP, true)
	}
}

// queue10 are the policy flags of every case: queue target 10 per replica,
// so two Ready pods at 20 each (sum 40) ask for ceil(40 / 10) = 4, which
// the default scale-up policy allows from 2 (max(2 + 4, 2 x 2) = 6).
var queue10 = []string{"--metric", "queue", "--target", "10", "--timeout", "20s"}

// TestKubeCommandApplies: `infscale kube --apply` on a Deployment, a
// StatefulSet and a custom resource with a scale subresource (a
// Rollout-like CRD whose controller publishes status.selector): each at
// spec.replicas 2 with two Ready pods at 20 is written 4 through its
// scale subresource.
func TestKubeCommandApplies(t *testing.T) {
	c := startCluster(t)
	f := newFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	c.createDeployment(t, "chat", 2)
	c.servedPair(t, f, "chat")
	// Under KEDA's HPA: refused, exit 1, naming the ScaledObject and what
	// to do; nothing written. Once it is gone, written.
	c.createHPA(t, "keda-hpa-chat", map[string]string{"scaledobject.keda.sh/name": "chat"})
	code, out, errs := c.kubeRun(t, append([]string{"--deployment", "chat", "--apply"}, queue10...)...)
	if code != 1 || !strings.Contains(errs, "not applied: Deployment default/chat is scaled by ScaledObject chat (through HorizontalPodAutoscaler keda-hpa-chat)") ||
		!strings.Contains(errs, "stop applying") || c.replicas(t, "chat") != 2 {
		t.Errorf("under a ScaledObject: exit %d, spec.replicas %d\n%s%s", code, c.replicas(t, "chat"), out, errs)
	}
	c.deleteHPA(t, "keda-hpa-chat")
	code, out, errs = c.kubeRun(t, append([]string{"--deployment", "chat", "--apply"}, queue10...)...)
	if code != 0 || !strings.Contains(out, "Deployment default/chat: spec.replicas 2, 2 Ready pod(s) scraped, 0 starting") ||
		!strings.Contains(out, "applied: spec.replicas 2 -> 4") || c.replicas(t, "chat") != 4 {
		t.Errorf("Deployment: exit %d, spec.replicas %d\n%s%s", code, c.replicas(t, "chat"), out, errs)
	}

	lbl := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: metav1.NamespaceDefault}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: lbl},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai"}}}},
	}}
	if _, err := c.client.AppsV1().StatefulSets(metav1.NamespaceDefault).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.servedPair(t, f, "db")
	code, out, errs = c.kubeRun(t, append([]string{"--name", "db", "--kind", "StatefulSet", "--apply"}, queue10...)...)
	got, err := c.client.AppsV1().StatefulSets(metav1.NamespaceDefault).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || !strings.Contains(out, "StatefulSet default/db: spec.replicas 2, 2 Ready pod(s) scraped") || *got.Spec.Replicas != 4 {
		t.Errorf("StatefulSet: exit %d, spec.replicas %d\n%s%s", code, *got.Spec.Replicas, out, errs)
	}

	dyn := c.installRolloutCRD(t, "Rollout", "rollouts", true)
	createRollout(t, dyn, "Rollout", "rollouts", "big", "big", 2)
	c.servedPair(t, f, "big")
	code, out, errs = c.kubeRun(t, append([]string{"--name", "big", "--kind", "Rollout", "--api-version", "e2e.infscale.dev/v1", "--apply"}, queue10...)...)
	if n := rolloutReplicas(t, dyn, "rollouts", "big"); code != 0 || !strings.Contains(out, "Rollout default/big: spec.replicas 2, 2 Ready pod(s) scraped") || n != 4 {
		t.Errorf("Rollout: exit %d, spec.replicas %d\n%s%s", code, n, out, errs)
	}
}

// midRollout creates Deployment roll mid-rollout: spec.replicas 2, the
// old ReplicaSet's two Ready pods at 16 + 4 (servedPair), the new one's
// surge pod Ready at 16 + 4, and an old pod terminating whose page says
// 90 + 10, which it returns.
func (c *cluster) midRollout(t *testing.T, f *fleet) *replica {
	t.Helper()
	c.createDeployment(t, "roll", 2)
	c.servedPair(t, f, "roll")
	surge := f.Start(t, 16, 4)
	c.createPod(t, "roll", "roll-c", f.Port, surge.IP, true)
	old := f.Start(t, 90, 10)
	c.terminatingPod(t, "roll", "roll-d", f.Port, old.IP)
	return old
}

// terminatingPod creates a Ready pod of app on ip that is being deleted (a
// finalizer holds it, as a kubelet's graceful shutdown would): its page
// must not be read.
func (c *cluster) terminatingPod(t *testing.T, app, name string, port int, ip string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.createPod(t, app, name, port, ip, true)
	p := mustPod(t, c, name)
	p.Finalizers = []string{"e2e.infscale.dev/hold"}
	if _, err := c.client.CoreV1().Pods(metav1.NamespaceDefault).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.client.CoreV1().Pods(metav1.NamespaceDefault).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestKubeCommandWorkloads: what `infscale kube` says of a workload that
// does not exist, has no selector, has no Ready pod, or is mid-rollout.
func TestKubeCommandWorkloads(t *testing.T) {
	c := startCluster(t)
	f := newFleet(t)

	// A Deployment that does not exist: exit 1 naming it.
	code, out, errs := c.kubeRun(t, append([]string{"--deployment", "nope"}, queue10...)...)
	if code != 1 || !strings.Contains(errs, "Deployment default/nope") || !strings.Contains(errs, "not found") ||
		!strings.Contains(errs, "no Deployment nope in namespace default: check the name and -n") {
		t.Errorf("missing Deployment: exit %d\n%s%s", code, out, errs)
	}
	// A kind the API server does not serve (a CRD not installed).
	code, out, errs = c.kubeRun(t, append([]string{"--name", "x", "--kind", "LeaderWorkerSet", "--api-version", "leaderworkerset.x-k8s.io/v1"}, queue10...)...)
	if code != 1 || !strings.Contains(errs, "LeaderWorkerSet default/x") {
		t.Errorf("kind not served: exit %d\n%s%s", code, out, errs)
	}

	// A custom resource whose scale subresource has no labelSelectorPath:
	// its pods cannot be found; the error names it and what to change.
	dyn := c.installRolloutCRD(t, "Blind", "blinds", false)
	createRollout(t, dyn, "Blind", "blinds", "blind", "blind", 2)
	code, out, errs = c.kubeRun(t, append([]string{"--name", "blind", "--kind", "Blind", "--api-version", "e2e.infscale.dev/v1", "--apply"}, queue10...)...)
	if code != 1 || !strings.Contains(errs, "Blind default/blind") || !strings.Contains(errs, "status.selector") || !strings.Contains(errs, "labelSelectorPath") {
		t.Errorf("no selector: exit %d\n%s%s", code, out, errs)
	}
	if n := rolloutReplicas(t, dyn, "blinds", "blind"); n != 2 {
		t.Errorf("no selector: spec.replicas %d, want 2 untouched", n)
	}

	// No Ready pod: both pods have an IP and are not Ready (starting).
	// Nothing is known: the decision holds spec.replicas, nothing written.
	c.createDeployment(t, "cold", 2)
	c.createPod(t, "cold", "cold-a", f.Port, "127.0.0.50", false)
	c.createPod(t, "cold", "cold-b", f.Port, "127.0.0.51", false)
	code, out, errs = c.kubeRun(t, append([]string{"--deployment", "cold", "--apply"}, queue10...)...)
	t.Logf("no Ready pod: exit %d\n%s%s", code, out, errs)
	if !strings.Contains(out, "Deployment default/cold: spec.replicas 2, 0 Ready pod(s) scraped, 2 starting") || c.replicas(t, "cold") != 2 {
		t.Errorf("no Ready pod: exit %d, spec.replicas %d\n%s%s", code, c.replicas(t, "cold"), out, errs)
	}

	// A Ready pod with two container ports and no --port: exit 2 naming
	// the pod, its ports and this command's flag (it said serve's
	// "scrape: {port: N}").
	c.createDeployment(t, "ports", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	two := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ports-a", Namespace: metav1.NamespaceDefault, Labels: map[string]string{"app": "ports"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}, {Name: "grpc", ContainerPort: 9000}}}}},
	}
	two, err := c.client.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, two, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.setPodStatus(t, two, "127.0.0.60", true)
	code, out, errs = c.kubeRun(t, append([]string{"--deployment", "ports"}, queue10...)...)
	if code != 2 || !strings.Contains(errs, "pod default/ports-a: give --port NAME|NUMBER: it declares 2 container ports [http:8000 grpc:9000]") {
		t.Errorf("two ports, no --port: exit %d\n%s%s", code, out, errs)
	}

	// Mid-rollout: spec.replicas 2, the old ReplicaSet's two Ready pods,
	// the new one's surge pod Ready, and an old pod terminating whose page
	// says 90 + 10 (not read). Three pages at 20: the HPA's desired is
	// ceil(20 / 10 x 3 Ready pods) = 6, which its scale-up limit from 2
	// (max(2 + 4, 2 x 2) = 6) allows.
	old := c.midRollout(t, f)
	code, out, errs = c.kubeRun(t, append([]string{"--deployment", "roll", "--apply"}, queue10...)...)
	if code != 0 || !strings.Contains(out, "Deployment default/roll: spec.replicas 2, 3 Ready pod(s) scraped, 0 starting") ||
		!strings.Contains(out, "applied: spec.replicas 2 -> 6") || c.replicas(t, "roll") != 6 {
		t.Errorf("mid-rollout: exit %d, spec.replicas %d\n%s%s", code, c.replicas(t, "roll"), out, errs)
	}
	if old.hits.Load() != 0 {
		t.Errorf("the terminating pod's page was read %d times", old.hits.Load())
	}
}

// TestKubeCommandForbidden: as a user missing a rule of docs/kubernetes.md's
// `infscale kube` row, the command fails (exit 1) naming the verb and
// resource to grant, at once: a 403 does not go away by waiting (the pods'
// informer waited the whole --timeout before). Each case grants one rule
// more; the last, with everything but update, leaves spec.replicas as it was.
func TestKubeCommandForbidden(t *testing.T) {
	c := startRBACCluster(t)
	rules := []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, ResourceNames: []string{"chat"}, Verbs: []string{"get"}}}
	c.grant(t, rules)
	c.createDeployment(t, "chat", 2)
	f := newFleet(t)
	c.servedPair(t, f, "chat")
	infscale(t) // built before the clock starts
	for _, tc := range []struct {
		what  string
		grant []rbacv1.PolicyRule
		args  []string
		says  string
	}{
		{"no get on another Deployment's scale", nil, []string{"--deployment", "other"}, `cannot get resource "deployments/scale" in API group "apps"`},
		{"no list on pods", nil, []string{"--deployment", "chat"}, `cannot list resource "pods" in API group ""`},
		{"--proxy, no get on pods/proxy", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}}},
			[]string{"--deployment", "chat", "--proxy"}, `cannot get resource "pods/proxy" in API group ""`},
		{"--apply, no list on HPAs", nil, []string{"--deployment", "chat", "--apply"}, `cannot list resource "horizontalpodautoscalers" in API group "autoscaling"`},
		{"--apply, no update on the scale", []rbacv1.PolicyRule{{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}, Verbs: []string{"list", "watch"}}},
			[]string{"--deployment", "chat", "--apply"}, `cannot update resource "deployments/scale" in API group "apps"`},
	} {
		if tc.grant != nil {
			rules = append(rules, tc.grant...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			r, err := c.client.RbacV1().Roles(metav1.NamespaceDefault).Get(ctx, "infscale", metav1.GetOptions{})
			if err == nil {
				r.Rules = rules
				_, err = c.client.RbacV1().Roles(metav1.NamespaceDefault).Update(ctx, r, metav1.UpdateOptions{})
			}
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		code, out, errs := c.kubeRun(t, append(append([]string{}, tc.args...), "--metric", "queue", "--target", "10", "--timeout", "8s")...)
		took := time.Since(start)
		if code != 1 || !strings.Contains(errs, tc.says) {
			t.Errorf("%s: exit %d; want 1 saying %q\n%s%s", tc.what, code, tc.says, out, errs)
		}
		if took > 4*time.Second {
			t.Errorf("%s: took %s of --timeout 8s: a 403 should fail at once\n%s", tc.what, took.Round(time.Millisecond), errs)
		}
	}
	if got := c.replicas(t, "chat"); got != 2 {
		t.Errorf("spec.replicas %d, want 2 untouched", got)
	}
}

// TestServeRolloutAndNoSelector: serve (bin/infscale, no apply) on a
// Deployment mid-rollout and on a custom resource whose scale subresource
// has no selector. The Deployment at spec.replicas 2 has its old
// ReplicaSet's two Ready pods, the new one's surge pod Ready, and an old
// pod terminating (its page says 90 + 10): the three Ready pages at 20 are
// read, the terminating one is not, queue 60 at target 10 per replica is
// desired 6 on observed 2 (the HPA's ceil(20 / 10 x 3 Ready pods), which
// its scale-up limit from 2, max(2 + 4, 2 x 2) = 6, allows). The custom
// resource's decision has no pods to read: a pods error saying no_selector
// and the labelSelectorPath to add, nothing decided from nothing.
func TestServeRolloutAndNoSelector(t *testing.T) {
	c := startCluster(t)
	f := newFleet(t)
	old := c.midRollout(t, f)
	dyn := c.installRolloutCRD(t, "Blind", "blinds", false)
	createRollout(t, dyn, "Blind", "blinds", "blind", "blind", 2)

	cfg := fmt.Sprintf(`pollingInterval: 1s
namespace: default
targets:
- name: roll
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: roll}
  scrape: {port: %d}
  metrics: [{type: queue, target: 10}]
  maxReplicaCount: 10
  guard: {off: true}
- name: blind
  scaleTargetRef: {apiVersion: e2e.infscale.dev/v1, kind: Blind, name: blind}
  scrape: {port: %d}
  metrics: [{type: queue, target: 10}]
  maxReplicaCount: 10
`, f.Port, f.Port)
	s := c.startServe(t, cfg)
	last := func(target string) record {
		rs := s.records(t)
		for i := len(rs) - 1; i >= 0; i-- {
			if rs[i].Target == target {
				return rs[i]
			}
		}
		return record{}
	}
	eventually(t, "roll: desired 6 on observed 2 from three pages", func() (bool, string) {
		r := last("roll")
		return r.Desired == 6 && r.Observed != nil && *r.Observed == 2 && r.Signals.Queue != nil && *r.Signals.Queue == 60, r.String()
	})
	if old.hits.Load() != 0 {
		t.Errorf("the terminating pod's page was read %d times", old.hits.Load())
	}
	eventually(t, "blind: a pods error no_selector", func() (bool, string) {
		r := last("blind")
		return strings.Contains(strings.Join(r.Errors, " "), "labelSelectorPath"), fmt.Sprintf("%v errors %v", r, r.Errors)
	})
	if !strings.Contains(s.log(), "no_selector") {
		t.Errorf("serve's log does not say no_selector:\n%s", s.log())
	}
}
