package serve

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/infscale/infscale/internal/epptest"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

// poolPort listens on 127.0.0.2:0 and returns the port, free on the other
// loopback addresses too in practice: the pool's one targetPort for every
// pod, each pod on its own 127.0.0.N as on a cluster.
func poolPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 loopback: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// serveAt serves body at ip:port until the test ends.
func serveAt(t *testing.T, ip string, port int, body func() string) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		t.Skipf("listen %s:%d: %v", ip, port, err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body()) }))
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
}

// labelledPod is a pod of namespace llm with labels, Ready at ip ("" for
// one still starting), declaring the container ports given by name.
func labelledPod(name, ip string, lbls map[string]string, ports map[string]int32) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: name, Labels: lbls},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	c := corev1.Container{Name: "main"}
	for n, port := range ports {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: n, ContainerPort: port})
	}
	p.Spec.Containers = []corev1.Container{c}
	if ip != "" {
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	}
	return p
}

// chatPool is eppBusyPool as the EPP of InferencePool chat-pool reports
// it (its gauges' name label is the pool's name).
func chatPool() epptest.State {
	s := eppBusyPool()
	s.Pool = "chat-pool"
	return s
}

const poolConfig = `namespace: llm
targets:
- name: chat
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  inferencePoolRef: {name: chat-pool}
  metrics: [{type: queue, target: 10}]
  max: 8
`

func createPool(t *testing.T, c *kube.Cluster, u *unstructured.Unstructured) {
	t.Helper()
	if _, err := c.Dynamic.Resource(kube.InferencePools).Namespace(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestPoolPods: a target naming an InferencePool reads the pool's Ready
// pods of the workload at the pool's one targetPort, with no scrape: key.
// The pool (matchLabels model=llama) also selects a canary pod of another
// Deployment (app=canary), which is not the workload's and is not read:
// running 20 + 30, waiting 4 + 6, queue 60 at spec.replicas 3 with one pod
// starting: the HPA counts the unready pod at 0 on a scale-up, 60 / (10 x
// 3) = 2, desired 3 x 2 = 6 (the default scale-up allows max(3 + 4, 2 x
// 3) = 7).
func TestPoolPods(t *testing.T) {
	port := poolPort(t)
	serveAt(t, "127.0.0.2", port, func() string { return vllmPage("20", "4", "0.5") })
	serveAt(t, "127.0.0.3", port, func() string { return vllmPage("30", "6", "0.5") })
	serveAt(t, "127.0.0.4", port, func() string { return vllmPage("100", "100", "0.9") })
	chat := map[string]string{"app": "chat", "model": "llama"}
	l, _, c, _ := fakeClusterLoop(t, poolConfig, 3, nil,
		labelledPod("chat-a", "127.0.0.2", chat, map[string]int32{"http": int32(port), "grpc": 9000}),
		labelledPod("chat-b", "127.0.0.3", chat, map[string]int32{"http": int32(port), "grpc": 9000}),
		labelledPod("chat-c", "", chat, nil),
		labelledPod("canary-a", "127.0.0.4", map[string]string{"app": "canary", "model": "llama"}, map[string]int32{"http": int32(port)}),
	)
	createPool(t, c, kubefake.Pool("llm", "chat-pool", map[string]string{"model": "llama"}, []int64{int64(port)}, ""))
	l.Cycle(context.Background())
	rec := lastRecord(l, "chat")
	if rec.Desired != 6 || rec.Current != 3 || rec.Signals.Queue == nil || *rec.Signals.Queue != 60 || len(rec.Errors) != 0 {
		t.Fatalf("record %+v (queue %v), want desired 6 from current 3, queue 60, no errors", rec, ptrVal(rec.Signals.Queue))
	}
}

// TestPoolEPP: with server: epp the pages read are those of the Ready pods
// behind the pool's endpointPickerRef Service, at their container port
// named metrics (the Service itself exposes only the ext-proc port 9002,
// as the Gateway API Inference Extension's conformance EPP does). The EPP
// reports 3 fresh endpoints with 31 running and 7 waiting (averages 10.33
// and 2.33, x 3): queue 38 at spec.replicas 3, 38 / 30 = 1.27 past the
// tolerance, desired ceil(3 x 1.27) = 4.
func TestPoolEPP(t *testing.T) {
	epp := epptest.Serve(chatPool())
	defer epp.Close()
	host, p, _ := net.SplitHostPort(strings.TrimPrefix(epp.URL, "http://"))
	eport, _ := strconv.Atoi(p)
	chat := map[string]string{"app": "chat"}
	l, _, c, _ := fakeClusterLoop(t, strings.Replace(poolConfig, "  metrics:", "  server: epp\n  metrics:", 1), 3, nil,
		labelledPod("chat-a", "10.0.0.1", chat, map[string]int32{"http": 8000}),
		labelledPod("chat-b", "10.0.0.2", chat, map[string]int32{"http": 8000}),
		labelledPod("chat-c", "10.0.0.3", chat, map[string]int32{"http": 8000}),
		labelledPod("chat-epp-0", host, map[string]string{"app": "chat-epp"}, map[string]int32{"grpc-ext-proc": 9002, "grpc-health": 9003, "metrics": int32(eport)}),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: "chat-epp"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "chat-epp"}, Ports: []corev1.ServicePort{{Name: "grpc-ext-proc", Port: 9002}}}},
	)
	createPool(t, c, kubefake.Pool("llm", "chat-pool", chat, []int64{8000}, "chat-epp"))
	l.Cycle(context.Background())
	rec := lastRecord(l, "chat")
	if rec.Desired != 4 || rec.Current != 3 || ptrVal(rec.Signals.Running) != 31 || ptrVal(rec.Signals.Waiting) != 7 || len(rec.Errors) != 0 {
		t.Fatalf("record %+v (running %v, waiting %v), want desired 4 from current 3, running 31, waiting 7, no errors", rec, ptrVal(rec.Signals.Running), ptrVal(rec.Signals.Waiting))
	}
}

// TestPoolEPPOfAnotherPool: the Pods behind chat-pool's endpointPickerRef
// serve the EPP of pool chat (its gauges' name label), not chat-pool's:
// an epp not_in_pool error naming both, every signal unknown and
// spec.replicas 3 kept (no-data). It was decided on the other pool's load
// (31 running + 7 waiting: desired 4).
func TestPoolEPPOfAnotherPool(t *testing.T) {
	epp := epptest.Serve(eppBusyPool())
	defer epp.Close()
	host, p, _ := net.SplitHostPort(strings.TrimPrefix(epp.URL, "http://"))
	eport, _ := strconv.Atoi(p)
	chat := map[string]string{"app": "chat"}
	l, _, c, _ := fakeClusterLoop(t, strings.Replace(poolConfig, "  metrics:", "  server: epp\n  metrics:", 1), 3, nil,
		labelledPod("chat-a", "10.0.0.1", chat, map[string]int32{"http": 8000}),
		labelledPod("chat-epp-0", host, map[string]string{"app": "chat-epp"}, map[string]int32{"metrics": int32(eport)}),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: "chat-epp"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "chat-epp"}, Ports: []corev1.ServicePort{{Name: "grpc-ext-proc", Port: 9002}}}},
	)
	createPool(t, c, kubefake.Pool("llm", "chat-pool", chat, []int64{8000}, "chat-epp"))
	l.Cycle(context.Background())
	rec := lastRecord(l, "chat")
	want := fmt.Sprintf(`epp: not_in_pool: %s/metrics is the Endpoint Picker of InferencePool "chat", not of "chat-pool" (inferencePoolRef)`, epp.URL)
	if len(rec.Errors) != 1 || !strings.HasPrefix(rec.Errors[0], want) {
		t.Errorf("errors %q, want one starting %q", rec.Errors, want)
	}
	if rec.Signals.Running != nil || rec.Signals.Queue != nil || rec.Current != 3 || rec.Desired != 3 || rec.Reason != "no-data" {
		t.Errorf("record %+v: want every signal unknown, current 3 kept (no-data)", rec)
	}
}

// TestPoolFaults: a pool that cannot be followed is a read error naming
// it, every signal unknown and spec.replicas (3) kept (no-data): never the
// decision of an idle pool (a page at 20 + 4 is there to be misread). A pool its Gateway does not accept
// is reported (not_accepted) and read as usual.
func TestPoolFaults(t *testing.T) {
	port := poolPort(t)
	serveAt(t, "127.0.0.2", port, func() string { return vllmPage("20", "4", "0.5") })
	chat := map[string]string{"app": "chat"}
	pod := func() *corev1.Pod {
		return labelledPod("chat-a", "127.0.0.2", chat, map[string]int32{"http": int32(port)})
	}
	notAccepted := kubefake.Pool("llm", "chat-pool", chat, []int64{int64(port)}, "")
	_ = unstructured.SetNestedSlice(notAccepted.Object, []any{map[string]any{
		"parentRef":  map[string]any{"name": "gw"},
		"conditions": []any{map[string]any{"type": "Accepted", "status": "False", "reason": "NotSupportedByParent", "message": "no", "lastTransitionTime": "2026-01-01T00:00:00Z"}},
	}}, "status", "parents")
	for _, c := range []struct {
		name   string
		config string
		pool   *unstructured.Unstructured
		extra  []*corev1.Pod
		want   string // the one error, "signal: reason: ..." prefix
		queue  float64
	}{
		{"missing", poolConfig, nil, nil, "pool: not_found: InferencePool llm/chat-pool: not found", -1},
		{"empty selector", poolConfig, kubefake.Pool("llm", "chat-pool", nil, []int64{int64(port)}, ""), nil, "pool: no_selector: InferencePool llm/chat-pool: spec.selector.matchLabels is empty", -1},
		{"two ports", poolConfig, kubefake.Pool("llm", "chat-pool", chat, []int64{8001, 8000}, ""), nil, "pods: port: InferencePool llm/chat-pool has 2 spec.targetPorts [8000 8001]: give scrape: {port: N}", -1},
		{"not in pool", poolConfig, kubefake.Pool("llm", "chat-pool", map[string]string{"app": "other"}, []int64{int64(port)}, ""), nil, "pods: not_in_pool: none of Deployment llm/chat's 1 pods (app=chat) is in InferencePool llm/chat-pool", -1},
		{"no EPP", strings.Replace(poolConfig, "  metrics:", "  server: epp\n  metrics:", 1), kubefake.Pool("llm", "chat-pool", chat, []int64{int64(port)}, ""), nil, "epp: no_epp: InferencePool llm/chat-pool: no Endpoint Picker to read: it has no spec.endpointPickerRef", -1},
		{"EPP Service missing", strings.Replace(poolConfig, "  metrics:", "  server: epp\n  metrics:", 1), kubefake.Pool("llm", "chat-pool", chat, []int64{int64(port)}, "chat-epp"), nil, "epp: not_found: InferencePool llm/chat-pool: its Endpoint Picker Service chat-epp:", -1},
		{"not accepted", poolConfig, notAccepted, nil, "pool: not_accepted: InferencePool llm/chat-pool: Gateway gw: Accepted=False (NotSupportedByParent: no)", 24},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, _, cl, _ := fakeClusterLoop(t, c.config, 3, nil, pod())
			if c.pool != nil {
				createPool(t, cl, c.pool)
			}
			l.Cycle(context.Background())
			rec := lastRecord(l, "chat")
			if len(rec.Errors) != 1 || !strings.HasPrefix(rec.Errors[0], c.want) {
				t.Errorf("errors %q, want one starting %q", rec.Errors, c.want)
			}
			if c.queue < 0 {
				if rec.Signals.Queue != nil || rec.Signals.Running != nil || rec.Signals.Held != nil || rec.Current != 3 || rec.Desired != 3 || rec.Reason != "no-data" {
					t.Errorf("record %+v: want every signal unknown, current 3 kept (no-data)", rec)
				}
			} else if ptrVal(rec.Signals.Queue) != c.queue {
				t.Errorf("queue %v, want %v", ptrVal(rec.Signals.Queue), c.queue)
			}
		})
	}
}

// ptrVal is *p, NaN for nil (unknown).
func ptrVal(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// TestPoolEPPFromZero: an EPP target named by its pool at spec.replicas 0
// (no model-server pod) activates on the EPP's flow-control queue: the
// EPP reports no ready endpoint and 4 requests held, so the decision is 1
// (activate), and no pool error (a workload with no pods is not "not in
// the pool").
func TestPoolEPPFromZero(t *testing.T) {
	epp := epptest.Serve(epptest.State{Pool: "chat-pool", Model: "llama", Flows: []epptest.Flow{{FairnessID: "a", Priority: "0", Held: 4}}})
	defer epp.Close()
	host, p, _ := net.SplitHostPort(strings.TrimPrefix(epp.URL, "http://"))
	eport, _ := strconv.Atoi(p)
	cfg := strings.Replace(poolConfig, "  metrics:", "  server: epp\n  minReplicaCount: 0\n  zero: {flow_control: true}\n  metrics:", 1)
	l, _, c, _ := fakeClusterLoop(t, cfg, 0, nil,
		labelledPod("chat-epp-0", host, map[string]string{"app": "chat-epp"}, map[string]int32{"metrics": int32(eport)}),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: "chat-epp"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "chat-epp"}}},
	)
	createPool(t, c, kubefake.Pool("llm", "chat-pool", map[string]string{"app": "chat"}, []int64{8000}, "chat-epp"))
	l.Cycle(context.Background())
	rec := lastRecord(l, "chat")
	if rec.Desired != 1 || rec.Current != 0 || ptrVal(rec.Signals.Held) != 4 || rec.Reason != "activate" || len(rec.Errors) != 0 {
		t.Fatalf("record %+v (held %v), want desired 1 (activate) from 0 on 4 held, no errors", rec, ptrVal(rec.Signals.Held))
	}
}

// TestPoolEPPBearerToken: an EPP serving /metrics behind authentication
// (llm-d-router's default, --metrics-endpoint-auth) answers 401 without a
// token; with scrape.bearer_token_file the file's token goes to the EPP
// pods found through the pool, re-read at each scrape (a rotated token is
// used), and the pool is read: running 31, waiting 7 as in TestPoolEPP.
func TestPoolEPPBearerToken(t *testing.T) {
	page := epptest.Page(chatPool())
	var want atomic.Value
	want.Store("Bearer first")
	epp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want.Load().(string) {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, page)
	}))
	defer epp.Close()
	host, p, _ := net.SplitHostPort(strings.TrimPrefix(epp.URL, "http://"))
	eport, _ := strconv.Atoi(p)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	objects := func() []runtime.Object {
		return []runtime.Object{
			labelledPod("chat-epp-0", host, map[string]string{"app": "chat-epp"}, map[string]int32{"metrics": int32(eport)}),
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: "chat-epp"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "chat-epp"}}},
		}
	}
	for _, c := range []struct {
		name, scrape string
		running      float64
		err          string
	}{
		{"no token", "", math.NaN(), "HTTP status 401 Unauthorized"},
		{"token", "  scrape: {bearer_token_file: " + token + "}\n", 31, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := strings.Replace(poolConfig, "  metrics:", "  server: epp\n"+c.scrape+"  metrics:", 1)
			l, _, cl, _ := fakeClusterLoop(t, cfg, 3, nil, objects()...)
			createPool(t, cl, kubefake.Pool("llm", "chat-pool", map[string]string{"app": "chat"}, []int64{8000}, "chat-epp"))
			l.Cycle(context.Background())
			rec := lastRecord(l, "chat")
			got := ptrVal(rec.Signals.Running)
			if !(got == c.running || math.IsNaN(got) && math.IsNaN(c.running)) {
				t.Errorf("running %v, want %v (errors %q)", got, c.running, rec.Errors)
			}
			if c.err == "" && len(rec.Errors) != 0 || c.err != "" && (len(rec.Errors) == 0 || !strings.Contains(rec.Errors[0], c.err)) {
				t.Errorf("errors %q, want %q", rec.Errors, c.err)
			}
			if c.scrape == "" {
				return
			}
			// The token rotated: the next scrape sends the new one.
			want.Store("Bearer second")
			if err := os.WriteFile(token, []byte("second"), 0o600); err != nil {
				t.Fatal(err)
			}
			l.Cycle(context.Background())
			if rec := lastRecord(l, "chat"); ptrVal(rec.Signals.Running) != 31 || len(rec.Errors) != 0 {
				t.Errorf("after rotation: running %v errors %q", ptrVal(rec.Signals.Running), rec.Errors)
			}
		})
	}
}

// TestPoolHeldScrapeOfAnotherPool: a target naming InferencePool chat-pool
// whose zero.held_scrape is the EPP of pool "chat" (another pool's: its
// held requests are not this pool's) has held unknown with an error naming
// both pools, reason not_in_pool: it read chat's 4 held requests as its
// own and woke chat-pool from zero. Its own pool's EPP is read (4 held).
func TestPoolHeldScrapeOfAnotherPool(t *testing.T) {
	epp := epptest.Serve(epptest.State{Pool: "chat", Model: "llama", Flows: []epptest.Flow{{FairnessID: "a", Priority: "0", Held: 4}}})
	defer epp.Close()
	conf := strings.Replace(poolConfig, "  max: 8\n", fmt.Sprintf("  max: 8\n  min: 0\n  zero: {held_scrape: %s/metrics}\n", epp.URL), 1)
	chat := map[string]string{"app": "chat"}
	l, _, c, _ := fakeClusterLoop(t, conf, 0, nil)
	createPool(t, c, kubefake.Pool("llm", "chat-pool", chat, []int64{8000}, ""))
	l.Cycle(context.Background())
	rec := lastRecord(l, "chat")
	want := fmt.Sprintf(`held: not_in_pool: %s/metrics (zero.held_scrape) is the Endpoint Picker of InferencePool "chat", not of "chat-pool" (inferencePoolRef)`, epp.URL)
	found := false
	for _, e := range rec.Errors {
		found = found || strings.HasPrefix(e, want)
	}
	if !found || rec.Signals.Held != nil || rec.Desired != 0 {
		t.Errorf("errors %q held %v desired %d; want one starting %q, held unknown, desired 0 kept", rec.Errors, rec.Signals.Held, rec.Desired, want)
	}
	epp.Set(func(s *epptest.State) { s.Pool = "chat-pool" })
	l.Cycle(context.Background())
	if rec := lastRecord(l, "chat"); rec.Signals.Held == nil || *rec.Signals.Held != 4 {
		t.Errorf("own pool's EPP: held %v (errors %q), want 4", rec.Signals.Held, rec.Errors)
	}
}
