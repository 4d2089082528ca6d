package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
	"github.com/infscale/infscale/pkg/statefile"
)

// servedPod is a Ready pod of Deployment chat (app=chat) whose container
// port "http" serves a vLLM page with running and waiting requests.
func servedPod(t *testing.T, name string, running, waiting int) *corev1.Pod {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} %d\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} %d\n", running, waiting)
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	n, _ := strconv.Atoi(port)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: name, Labels: map[string]string{"app": "chat"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(n)}}}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: host, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// fakeKube makes connectCluster return a fake cluster holding objects and
// Deployment llm/chat at 2 replicas; connected counts the connections.
func fakeKube(t *testing.T, objects ...runtime.Object) (*kubefake.Scales, *int) {
	c, _, sc := kubefake.New("llm", objects...)
	sc.Set("llm", kubefake.Deployments, "chat", 2, "app=chat")
	connected := 0
	prev := connectCluster
	// A Cluster per run (each run closes its informers) over the same fakes.
	connectCluster = func(string) (*kube.Cluster, error) {
		connected++
		return &kube.Cluster{Client: c.Client, Scales: c.Scales, Mapper: c.Mapper, Namespace: c.Namespace}, nil
	}
	t.Cleanup(func() { connectCluster = prev })
	return sc, &connected
}

func runKube(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"kube"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestKubeDecideAndApply: spec.replicas 2, two Ready pods with queues
// 20 + 4 and 30 + 6 = 60 over target 10: ratio 60 / (10 × 2) = 3, desired
// ceil(60 / 10) = 6 (the default scale-up policy allows max(2 + 4, 2 × 2) = 6).
func TestKubeDecideAndApply(t *testing.T) {
	sc, _ := fakeKube(t, servedPod(t, "chat-a", 20, 4), servedPod(t, "chat-b", 30, 6))
	code, out, errs := runKube("-n", "llm", "--deployment", "chat", "--port", "http", "--metric", "queue", "--target", "10")
	if code != exitOK || !strings.Contains(out, "Deployment llm/chat: spec.replicas 2, 2 Ready pod(s) scraped, 0 starting") || !strings.Contains(out, "desired 6 (reason DesiredWithinRange), current 2") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if sc.Updates != 0 {
		t.Errorf("%d updates without --apply", sc.Updates)
	}
	code, out, errs = runKube("-n", "llm", "--deployment", "chat", "--port", "http", "--metric", "queue", "--target", "10", "--apply")
	if code != exitOK || !strings.Contains(out, "applied: spec.replicas 2 -> 6") || sc.Replicas("llm", kubefake.Deployments, "chat") != 6 {
		t.Errorf("--apply: exit %d, spec.replicas %d\n%s%s", code, sc.Replicas("llm", kubefake.Deployments, "chat"), out, errs)
	}
	// JSON: stdout is decide's decision alone.
	code, out, _ = runKube("-n", "llm", "--deployment", "chat", "--port", "http", "--metric", "queue", "--target", "10", "--output", "json")
	if code != exitOK || !strings.HasPrefix(out, "{") || !strings.Contains(out, `"desired": 6`) {
		t.Errorf("--output json: exit %d\n%s", code, out)
	}
}

func TestKubeApplyRefused(t *testing.T) {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: "keda-hpa-chat",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject", Name: "chat", UID: "u"}}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "chat"}, MaxReplicas: 8},
	}
	sc, _ := fakeKube(t, servedPod(t, "chat-a", 50, 10), h)
	code, out, errs := runKube("-n", "llm", "--deployment", "chat", "--metric", "queue", "--target", "10", "--apply")
	if code != exitRuntime || !strings.Contains(out, "desired 6") || !strings.Contains(errs, "not applied: Deployment llm/chat is scaled by ScaledObject chat") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
	if sc.Updates != 0 {
		t.Errorf("%d updates under a ScaledObject", sc.Updates)
	}
}

// TestKubeFlags: bad flags are exit 2 before any cluster is contacted.
func TestKubeFlags(t *testing.T) {
	_, connected := fakeKube(t)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{}, "name the workload: --deployment NAME"},
		{[]string{"--deployment", "chat", "--name", "chat"}, "give one of them"},
		{[]string{"--name", "big", "--kind", "Rollout"}, "--kind Rollout: needs --api-version"},
		{[]string{"--name", "big"}, "needs --kind"},
		{[]string{"--deployment", "Chat_1"}, `--deployment "Chat_1": not a Kubernetes object name`},
		{[]string{"--name", "web", "--kind", "StatefulSet", "--api-version", "apps"}, `--api-version "apps": want group/version`},
		{[]string{"--name", "web", "--kind", "Statefulset", "--api-version", "apps/v1"}, `--kind "Statefulset": kinds are case-sensitive: StatefulSet`},
		{[]string{"--deployment", "chat", "-n", "LLM"}, `--namespace "LLM"`},
		{[]string{"--deployment", "chat", "--port", "70000"}, "--port 70000: a port is 1..65535"},
		{[]string{"--deployment", "chat", "--path", "metrics"}, `--path "metrics"`},
		{[]string{"--deployment", "chat", "--min", "5", "--max", "2"}, "--min: 5 must be <= max 2"},
	} {
		code, _, errs := runKube(c.args...)
		if code != exitInvalid || !strings.Contains(errs, c.says) {
			t.Errorf("%v: exit %d, want 2 saying %q:\n%s", c.args, code, c.says, errs)
		}
	}
	if *connected != 0 {
		t.Errorf("%d connections for invalid flags, want none", *connected)
	}
}

// A kubeconfig that is missing or not YAML is the user's input (exit 2,
// named); an API server that does not answer is a runtime failure (exit 1).
func TestKubeconfigErrorsAreInvalidInput(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/bad"
	if err := os.WriteFile(bad, []byte("garbage: ["), 0o600); err != nil {
		t.Fatal(err)
	}
	down := dir + "/down"
	if err := os.WriteFile(down, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := dir + "/serve.yaml"
	if err := os.WriteFile(cfg, []byte("targets:\n  - name: chat\n    scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}\n    metrics: [{type: queue, target: 8}]\n    max: 4\n    scrape: {port: 8000}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"kube", "-n", "llm", "--deployment", "chat", "--kubeconfig", dir + "/missing"}, 2, "kubeconfig " + dir + "/missing"},
		{[]string{"kube", "-n", "llm", "--deployment", "chat", "--kubeconfig", bad}, 2, "kubeconfig " + bad},
		{[]string{"serve", "--config", cfg, "--kubeconfig", bad, "--listen", "127.0.0.1:0"}, 2, "kubeconfig " + bad},
		{[]string{"kube", "-n", "llm", "--deployment", "chat", "--kubeconfig", down}, 1, "connection refused"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, strings.NewReader(""), &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

// An API server that accepts connections and never answers: --timeout
// bounds the whole command (exit 1, naming the flag), and a cancelled
// context (a signal) ends it at once.
func TestKubeSilentAPIServer(t *testing.T) {
	kc := t.TempDir() + "/kubeconfig"
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"" + kubefake.SilentServer(t) + "\"}}]\n" +
		"users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"kube", "--kubeconfig", kc, "-n", "llm", "--deployment", "chat", "--port", "8000"}
	var out, errb bytes.Buffer
	code := run(context.Background(), append(args, "--timeout", "300ms"), strings.NewReader(""), &out, &errb)
	if code != exitRuntime || !strings.Contains(errb.String(), "infscale: not done within --timeout 300ms: Deployment llm/chat:") {
		t.Errorf("exit %d, stderr %q; want 1 naming --timeout", code, errb.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errb.Reset()
	code = run(ctx, append(args, "--timeout", "1h"), strings.NewReader(""), &out, &errb)
	if code != exitInterrupted || errb.String() != "infscale: interrupted\n" {
		t.Errorf("cancelled: exit %d, stderr %q; want 130 and one line", code, errb.String())
	}
}

// TestKubeNegativeReplicas: an API server answering spec.replicas -3 gets no
// decision: exit 1 naming the count, nothing decided or printed as a
// decision (it printed "spec.replicas -3" and decided).
func TestKubeNegativeReplicas(t *testing.T) {
	sc, _ := fakeKube(t, servedPod(t, "chat-a", 20, 4))
	sc.Set("llm", kubefake.Deployments, "chat", -3, "app=chat")
	code, out, errs := runKube("-n", "llm", "--deployment", "chat", "--port", "http", "--metric", "queue", "--target", "10", "--apply")
	if code != exitRuntime || out != "" || !strings.Contains(errs, "spec.replicas -3, status.replicas -3: a replica count cannot be negative") || sc.Updates != 0 {
		t.Errorf("exit %d, %d updates, stdout %q, stderr %q; want 1, no write, nothing on stdout, the count named", code, sc.Updates, out, errs)
	}
}

// TestKubeApplyStateOnlyWhenApplied: with --apply, --state records the
// decision once it is written. Refused under the ScaledObject (queue
// 50 + 10 = 60 over target 10 at spec.replicas 2: desired 6), the state
// file is not created (it recorded a +4 scale-up that never happened,
// which the next run's rate limit and runaway guard counted), and the
// error says so. Applied (no scaler), it holds desired 6 from current 2
// and the +4 scale-up at --now.
func TestKubeApplyStateOnlyWhenApplied(t *testing.T) {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: "keda-hpa-chat",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject", Name: "chat", UID: "u"}}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "chat"}, MaxReplicas: 8},
	}
	st := filepath.Join(t.TempDir(), "st.json")
	fakeKube(t, servedPod(t, "chat-a", 50, 10), h)
	code, out, errs := runKube("-n", "llm", "--deployment", "chat", "--metric", "queue", "--target", "10", "--apply", "--state", st, "--now", "1000")
	if code != exitRuntime || !strings.Contains(out, "desired 6") || !strings.Contains(errs, "(--state "+st+" not updated: the decision was not applied)") {
		t.Errorf("refused: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(st); !os.IsNotExist(err) {
		t.Errorf("--state written for a refused apply (stat: %v)", err)
	}

	sc, _ := fakeKube(t, servedPod(t, "chat-a", 50, 10))
	code, out, errs = runKube("-n", "llm", "--deployment", "chat", "--metric", "queue", "--target", "10", "--apply", "--state", st, "--now", "1000")
	if code != exitOK || !strings.Contains(out, "applied: spec.replicas 2 -> 6") || sc.Replicas("llm", kubefake.Deployments, "chat") != 6 {
		t.Fatalf("applied: exit %d\n%s%s", code, out, errs)
	}
	f, err := statefile.Read(st)
	if err != nil {
		t.Fatal(err)
	}
	if f.Desired != 6 || f.Current != 2 || len(f.State.ScaleUpEvents) != 1 || f.State.ScaleUpEvents[0].Change != 4 || f.State.ScaleUpEvents[0].At.Unix() != 1000 {
		t.Errorf("state: desired %d, current %d, scale-ups %+v; want 6 from 2, one +4 at 1000", f.Desired, f.Current, f.State.ScaleUpEvents)
	}
}

// TestKubeRolloutBetweenServers: kube's pages are the workload's own Ready
// pods, one workload by construction, so pods of two servers (a rollout
// from SGLang to vLLM) are its replicas and are summed, where decide
// refuses such pages as two workloads'. vLLM's 20 + 4 and SGLang's 30 + 6
// are 60 over target 10 at 2 replicas: ceil(60 / 10) = 6.
func TestKubeRolloutBetweenServers(t *testing.T) {
	sg := servedPod(t, "chat-b", 0, 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"m\"} 30\n# TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs{model_name=\"m\"} 6\n")
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	n, _ := strconv.Atoi(port)
	sg.Status.PodIP, sg.Spec.Containers[0].Ports[0].ContainerPort = host, int32(n)
	fakeKube(t, servedPod(t, "chat-a", 20, 4), sg)
	code, out, errs := runKube("-n", "llm", "--deployment", "chat", "--port", "http", "--metric", "queue", "--target", "10")
	if code != exitOK || !strings.Contains(out, "desired 6 (reason DesiredWithinRange), current 2") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
}
