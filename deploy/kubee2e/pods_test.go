package kubee2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// vllmPage is a minimal vLLM /metrics page with the given running and
// waiting requests.
func vllmPage(running, waiting int) string {
	return fmt.Sprintf(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} %d
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} %d
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} 0.1
`, running, waiting)
}

// replica is a fake vLLM server on its own loopback address (127.0.0.N,
// a pod IP) at the port every replica of a test shares (the container
// port of the pod template). Its page can change.
type replica struct {
	IP   string
	page atomic.Value // string
	hits atomic.Int64
}

// Set makes the page say running and waiting.
func (r *replica) Set(running, waiting int) { r.page.Store(vllmPage(running, waiting)) }

// fleet is a set of fake replicas on one port.
type fleet struct {
	Port int
	next int
}

// newFleet picks a port free on 127.0.0.2 (the replicas' addresses start
// there; each later bind on 127.0.0.N to the same port is retried on a
// fresh port by the caller if it fails, which on loopback it does not).
func newFleet(t *testing.T) *fleet {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return &fleet{Port: port, next: 2}
}

// Start serves a new replica on the next loopback address.
func (f *fleet) Start(t *testing.T, running, waiting int) *replica {
	t.Helper()
	r := &replica{IP: "127.0.0." + strconv.Itoa(f.next)}
	f.next++
	r.Set(running, waiting)
	l, err := net.Listen("tcp", net.JoinHostPort(r.IP, strconv.Itoa(f.Port)))
	if err != nil {
		t.Fatalf("replica %s: %v", r.IP, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/metrics" {
			http.NotFound(w, req)
			return
		}
		r.hits.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, r.page.Load().(string))
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

// createPod creates the pod a ReplicaSet of Deployment app would (its
// labels, one container with the metrics port) and, when ip is not "",
// marks it Running on ip with Ready = ready. No kubelet runs: the status is
// written through the pods/status subresource as a kubelet would.
func (c *cluster) createPod(t *testing.T, app, name string, port int, ip string, ready bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "vllm", Image: "vllm/vllm-openai",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}},
		}}},
	}
	p, err := c.client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	if ip == "" {
		return p
	}
	return c.setPodStatus(t, p, ip, ready)
}

// setPodStatus writes p's status: Running on ip, condition Ready = ready.
func (c *cluster) setPodStatus(t *testing.T, p *corev1.Pod, ip string, ready bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := c.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: cond, LastTransitionTime: metav1.Now()}}
	p, err = c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("pod %s status: %v", p.Name, err)
	}
	return p
}

// deletePod deletes a pod at once (no kubelet would confirm a graceful
// deletion).
func (c *cluster) deletePod(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.client.CoreV1().Pods(metav1.NamespaceDefault).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatalf("delete pod %s: %v", name, err)
	}
}

// eventually polls cond every 100 ms for up to 30 s.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not after 30 s (last: %s)", what, last)
}

// busyPair creates Deployment chat (spec.replicas 2) and its two Ready
// pods chat-a and chat-b, each page at running 16 + waiting 4 = 20: with
// chatConfig's queue target 10, desired ceil(40/10) = 4.
func (c *cluster) busyPair(t *testing.T) (*fleet, []*replica) {
	t.Helper()
	c.createDeployment(t, "chat", 2)
	f := newFleet(t)
	reps := []*replica{f.Start(t, 16, 4), f.Start(t, 16, 4)}
	c.createPod(t, "chat", "chat-a", f.Port, reps[0].IP, true)
	c.createPod(t, "chat", "chat-b", f.Port, reps[1].IP, true)
	return f, reps
}

// idleTrio creates Deployment chat (spec.replicas 3) and its three Ready
// pods: chat-a at 4 + 1 = 5, chat-b at 1 + 0 = 1, chat-c at 2 + 1 = 3; sum
// 9, so at queue target 10 desired ceil(9/10) = 1, a scale-down.
func (c *cluster) idleTrio(t *testing.T) *fleet {
	t.Helper()
	c.createDeployment(t, "chat", 3)
	f := newFleet(t)
	pages := map[string][2]int{"chat-a": {4, 1}, "chat-b": {1, 0}, "chat-c": {2, 1}}
	for _, name := range []string{"chat-a", "chat-b", "chat-c"} {
		r := f.Start(t, pages[name][0], pages[name][1])
		c.createPod(t, "chat", name, f.Port, r.IP, true)
	}
	return f
}
