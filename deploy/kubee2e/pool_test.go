package kubee2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/infscale/infscale/internal/epptest"
	"github.com/infscale/infscale/pkg/kube"
)

// installPoolCRD installs the InferencePool CRD of testdata (the Gateway
// API Inference Extension's own, at the commit its header names) and waits
// until the API server serves the resource.
func (c *cluster) installPoolCRD(t *testing.T) dynamic.Interface {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "inference.networking.k8s.io_inferencepools.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &crd.Object); err != nil {
		t.Fatal(err)
	}
	return c.installCRD(t, crd, kube.InferencePools)
}

// installCRD creates crd on the test API server and waits until it serves
// gvr, the CRD's resource; it returns a dynamic client of the server.
func (c *cluster) installCRD(t *testing.T, crd *unstructured.Unstructured, gvr schema.GroupVersionResource) dynamic.Interface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("install the %s CRD: %v", crd.GetName(), err)
	}
	eventually(t, gvr.Resource+" served", func() (bool, string) {
		_, err := dyn.Resource(gvr).Namespace(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		return err == nil, "list: " + errString(err)
	})
	return dyn
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// pool is an InferencePool of namespace default selecting matchLabels,
// its one target port port, its EPP the Service chat-epp on 9002.
func pool(name string, matchLabels map[string]any, port int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
		"metadata": map[string]any{"name": name, "namespace": metav1.NamespaceDefault},
		"spec": map[string]any{
			"selector":          map[string]any{"matchLabels": matchLabels},
			"targetPorts":       []any{map[string]any{"number": int64(port)}},
			"endpointPickerRef": map[string]any{"name": "chat-epp", "port": map[string]any{"number": int64(9002)}},
		},
	}}
}

// TestServeInferencePool: serve (bin/infscale, apply: true) finds a
// target's pages through a real InferencePool: the pool (the upstream
// CRD's schema, which refuses a pool without matchLabels) selects the
// Deployment's pods, whose pages are read at the pool's target port with
// no scrape: key. Two Ready pods at 16 + 4 = 20 each, spec.replicas 2:
// desired ceil(40 / 10) = 4, written. The pool deleted, the signals are
// unknown (a pool: not_found error) and spec.replicas stays 4 while the
// pages fall to 1 each, which read would have scaled it down to 1.
func TestServeInferencePool(t *testing.T) {
	c := startCluster(t)
	dyn := c.installPoolCRD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pools := dyn.Resource(kube.InferencePools).Namespace(metav1.NamespaceDefault)
	if _, err := pools.Create(ctx, pool("empty", map[string]any{}, 8000), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a pool without matchLabels: %v, want the CRD's validation to refuse it", err)
	}

	f, reps := c.busyPair(t)
	if _, err := pools.Create(ctx, pool("chat-pool", map[string]any{"app": "chat"}, f.Port), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(chatConfig(f.Port, "  apply: true\n"), "  scrape: {port: "+strconv.Itoa(f.Port)+", path: /metrics}\n", "  inferencePoolRef: {name: chat-pool}\n", 1)
	s := c.startServe(t, cfg)
	c.waitApplied(t, s, 4)
	if r := s.last(t); r.Signals.Queue == nil || *r.Signals.Queue != 40 || len(r.Errors) != 0 {
		t.Fatalf("decision %v errors %q, want queue 40 read from the pool's two pods, no errors", r, r.Errors)
	}

	if err := pools.Delete(ctx, "chat-pool", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pool's absence reported", func() (bool, string) {
		r := s.last(t)
		return r.Signals.Queue == nil && len(r.Errors) == 1 && strings.HasPrefix(r.Errors[0], "pool: not_found: InferencePool default/chat-pool: not found"), r.String() + " errors " + strings.Join(r.Errors, "; ")
	})
	for _, r := range reps {
		r.Set(1, 0)
	}
	time.Sleep(3 * time.Second) // three cycles
	if got := c.replicas(t, "chat"); got != 4 {
		t.Fatalf("spec.replicas %d with the pool gone, want 4 held; last decision %v %q", got, s.last(t), s.last(t).Errors)
	}
	if r := s.last(t); r.Signals.Queue != nil {
		t.Fatalf("decision %v with the pool gone: signals read", r)
	}
}

// lastOf is the newest record of target name.
func (s *server) lastOf(t *testing.T, name string) record {
	rs := s.records(t)
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Target == name {
			return rs[i]
		}
	}
	return record{}
}

// poolRules are docs/kubernetes.md's read-only rules with the
// InferencePool's: get on the pool (by name, as the chart grants it) and
// on its EPP Service.
var poolRules = append(append([]rbacv1.PolicyRule{}, readOnlyRules...),
	rbacv1.PolicyRule{APIGroups: []string{"inference.networking.k8s.io"}, Resources: []string{"inferencepools"}, ResourceNames: []string{"chat-pool"}, Verbs: []string{"get"}},
	rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get"}},
)

// TestServePoolRBAC: serve as a user holding only the documented Role of
// an InferencePool target reads the pool, its pods (target pool) and its
// Endpoint Picker's pod behind the Service chat-epp (target epp, an
// llm-d-router page with 2 fresh endpoints at 16 running and 4 waiting
// each, internal/epptest), and decides the same on both: queue 40 at
// spec.replicas 2, desired 4. Without get on Services the epp target is a
// read error epp: forbidden and its signals unknown.
func TestServePoolRBAC(t *testing.T) {
	c := startRBACCluster(t)
	c.installPoolCRD(t)
	c.grant(t, poolRules)
	f, _ := c.busyPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(c.config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(kube.InferencePools).Namespace(metav1.NamespaceDefault).Create(ctx, pool("chat-pool", map[string]any{"app": "chat"}, f.Port), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	page := epptest.Page(epptest.State{Pool: "chat-pool", Model: "m", Endpoints: []epptest.Endpoint{
		{Name: "chat-a", Fresh: true, Running: 16, Waiting: 4, KV: 0.1},
		{Name: "chat-b", Fresh: true, Running: 16, Waiting: 4, KV: 0.1},
	}})
	ip := "127.0.0.20"
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(f.Port)))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, page) }), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	c.createPod(t, "chat-epp", "chat-epp-0", f.Port, ip, true)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "chat-epp", Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "chat-epp"}, Ports: []corev1.ServicePort{{Name: "grpc-ext-proc", Port: 9002}}}}
	if _, err := c.client.CoreV1().Services(metav1.NamespaceDefault).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	s := c.startServe(t, fmt.Sprintf(`pollingInterval: 1s
namespace: default
targets:
- name: pool
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  inferencePoolRef: {name: chat-pool}
  metrics: [{type: queue, target: 10}]
  maxReplicaCount: 10
  guard: {off: true}
- name: epp
  server: epp
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  inferencePoolRef: {name: chat-pool}
  scrape: {port: http}
  metrics: [{type: queue, target: 10}]
  maxReplicaCount: 10
  guard: {off: true}
`))
	for _, name := range []string{"pool", "epp"} {
		eventually(t, name+" decides on the pool", func() (bool, string) {
			r := s.lastOf(t, name)
			return r.Desired == 4 && r.Signals.Queue != nil && *r.Signals.Queue == 40 && len(r.Errors) == 0, r.String() + " errors " + strings.Join(r.Errors, "; ")
		})
	}
	if strings.Contains(s.log(), "forbidden") {
		t.Fatalf("serve was refused something:\n%s", s.log())
	}

	role, err := c.client.RbacV1().Roles(metav1.NamespaceDefault).Get(ctx, "infscale", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role.Rules = role.Rules[:len(role.Rules)-1] // no get on Services
	if _, err := c.client.RbacV1().Roles(metav1.NamespaceDefault).Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the EPP Service forbidden", func() (bool, string) {
		r := s.lastOf(t, "epp")
		return r.Signals.Queue == nil && len(r.Errors) == 1 && strings.HasPrefix(r.Errors[0], "epp: forbidden: InferencePool default/chat-pool: its Endpoint Picker Service chat-epp:"), r.String() + " errors " + strings.Join(r.Errors, "; ")
	})
}
