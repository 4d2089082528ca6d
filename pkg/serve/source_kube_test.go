package serve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

const kubeConfig = `namespace: llm
targets:
- name: chat
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  scrape: {port: http}
  apply: true
  metrics: [{type: queue, target: 10}]
  max: 8
`

// replicaPod is a pod of Deployment chat whose port "http" is srv's, so
// that http://<pod IP>:<port>/metrics is srv; srv nil: a pod still starting.
func replicaPod(t *testing.T, name string, srv *httptest.Server) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: name, Labels: map[string]string{"app": "chat"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 1}}}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	if srv != nil {
		host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
		n, _ := strconv.Atoi(port)
		p.Spec.Containers[0].Ports[0].ContainerPort = int32(n)
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: host, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	}
	return p
}

func pageServer(t *testing.T, running, waiting string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, vllmPage(running, waiting, "0.5"))
	}))
	t.Cleanup(s.Close)
	return s
}

// kubeLoop is a loop over kubeConfig on a fake cluster holding objects,
// Deployment chat at 3 replicas (selector app=chat).
func kubeLoop(t *testing.T, objects ...runtime.Object) (*Loop, *Metrics, *kube.Cluster, *kubefake.Scales) {
	t.Helper()
	return fakeClusterLoop(t, kubeConfig, 3, nil, objects...)
}

// TestKubeEmbeddedDiscoversAndApplies: the Ready pods of the workload are
// scraped (running 20 + 30, waiting 4 + 6: queue 60), the current replicas
// are spec.replicas (3, one pod still starting: unready), the decision is
// ceil(60 / 10) = 6 (the HPA's rule: the unready pod counted at 0 on a
// scale-up gives 60 / (10 × 3) = 2, × 3 = 6; the default scale-up policy
// allows max(3 + 4, 3 × 2) = 7) and it is written to the scale
// subresource. A pod then scaled away is no longer read and no error.
func TestKubeEmbeddedDiscoversAndApplies(t *testing.T) {
	a, b := pageServer(t, "20", "4"), pageServer(t, "30", "6")
	l, m, c, sc := kubeLoop(t, replicaPod(t, "chat-a", a), replicaPod(t, "chat-b", b), replicaPod(t, "chat-c", nil))
	l.Cycle(context.Background())
	rec := lastRecord(l, "chat")
	if rec.Desired != 6 || rec.Current != 3 || rec.Signals.Queue == nil || *rec.Signals.Queue != 60 || len(rec.Errors) != 0 {
		t.Fatalf("record %+v (queue %v), want desired 6 from current 3, queue 60, no errors", rec, rec.Signals.Queue)
	}
	if rec.Applied == nil || *rec.Applied != 6 || sc.Replicas("llm", kubefake.Deployments, "chat") != 6 || len(sc.Written) != 1 {
		t.Errorf("applied %v, spec.replicas %d, writes %v: want 6 written once", rec.Applied, sc.Replicas("llm", kubefake.Deployments, "chat"), sc.Written)
	}
	m.table.mu.Lock()
	writes := m.table.targets["chat"].applies.value
	m.table.mu.Unlock()
	if writes != 1 {
		t.Errorf("infscale_replica_writes_total %v, want 1", writes)
	}

	// chat-b is scaled away; the next cycle reads chat-a alone, silently.
	if err := c.Client.CoreV1().Pods("llm").Delete(context.Background(), "chat-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		pods, _ := c.Pods(context.Background(), "llm", labels.SelectorFromSet(labels.Set{"app": "chat"}))
		if len(pods) == 2 {
			break
		}
		if i == 200 {
			t.Fatal("the informer never saw chat-b go")
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.Cycle(context.Background())
	rec = lastRecord(l, "chat")
	if rec.Signals.Queue == nil || *rec.Signals.Queue != 24 || len(rec.Errors) != 0 || rec.Current != 6 {
		t.Errorf("after chat-b went: queue %v errors %v current %d; want 24 (chat-a's 20 + 4), none, 6 (spec.replicas)", rec.Signals.Queue, rec.Errors, rec.Current)
	}
	// chat-b's baseline is forgotten (memory bounded under pod churn).
	ss := l.source.(*KubeSource).Inner.(*ScrapeSource)
	ss.mu.Lock()
	_, kept := ss.last[b.URL+"/metrics"]
	n := len(ss.last)
	ss.mu.Unlock()
	if kept || n != 1 {
		t.Errorf("%d baselines (chat-b's kept: %v), want chat-a's alone", n, kept)
	}
}

// TestKubeApplyRefusedUnderHPA: a KEDA ScaledObject's HPA scales the
// workload; the decision is exported, nothing is written, the refusal is
// counted and said.
func TestKubeApplyRefusedUnderHPA(t *testing.T) {
	a := pageServer(t, "50", "10")
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: "keda-hpa-chat", Labels: map[string]string{"scaledobject.keda.sh/name": "chat"}},
		Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "chat"}, MaxReplicas: 8},
	}
	l, m, _, sc := kubeLoop(t, replicaPod(t, "chat-a", a), h)
	l.Cycle(context.Background())
	rec := lastRecord(l, "chat")
	if rec.Desired != 6 || rec.Applied != nil || !strings.Contains(rec.ApplyError, "ScaledObject chat") {
		t.Errorf("record desired %d applied %v error %q; want 6 decided, nothing applied, the ScaledObject named", rec.Desired, rec.Applied, rec.ApplyError)
	}
	if sc.Updates != 0 || sc.Replicas("llm", kubefake.Deployments, "chat") != 3 {
		t.Errorf("%d updates, spec.replicas %d: want none, 3", sc.Updates, sc.Replicas("llm", kubefake.Deployments, "chat"))
	}
	// The HPA stores a scale event only after its update succeeded
	// (reconcileAutoscaler): the 3 -> 6 not written counts in no rate
	// limit's period.
	if st := l.targets[0].run.State; len(st.ScaleUpEvents)+len(st.ScaleDownEvents) != 0 {
		t.Errorf("scale events %v / %v after a refused write, want none", st.ScaleUpEvents, st.ScaleDownEvents)
	}
	m.table.mu.Lock()
	errs := m.table.targets["chat"].applyErrors
	m.table.mu.Unlock()
	if len(errs) != 1 || errs[0].label.GetValue() != "scaled_by_scaledobject" || errs[0].value != 1 {
		t.Errorf("apply errors %+v, want scaled_by_scaledobject 1", errs)
	}
}

// TestPrometheusModeNoCluster: without a scaleTargetRef no Kubernetes
// client is made; with one it is made once, across reloads.
func TestPrometheusModeNoCluster(t *testing.T) {
	calls := 0
	ss := &sources{o: &Options{Cluster: func() (*kube.Cluster, error) {
		calls++
		c, _, _ := kubefake.New("default")
		return c, nil
	}}}
	prom, err := config.Parse([]byte("prometheus: {url: http://127.0.0.1:9}\ntargets:\n- {name: chat, selector: '{pod=~\"chat-.*\"}', metrics: [{type: queue, target: 4}], max: 4}\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := ss.build(prom)
	if _, ok := src.(*PrometheusSource); !ok || err != nil || calls != 0 || writerOf(src) != nil {
		t.Fatalf("source %T err %v, %d clients made; want a bare PrometheusSource and none", src, err, calls)
	}
	prom.Targets[0].ScaleTargetRef = &autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "chat"}
	for range 2 {
		if src, err = ss.wrap(prom, src); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := src.(*KubeSource); !ok || calls != 1 {
		t.Errorf("source %T, %d clients made; want a KubeSource and one", src, calls)
	}
	if _, ok := prometheusOf(src); !ok {
		t.Error("the Prometheus source inside the KubeSource not found (the rebuild needs it)")
	}
	prom.Targets[0].ScaleTargetRef = nil
	if src, _ = ss.wrap(prom, src); src.Name() != "prometheus" || writerOf(src) != nil {
		t.Errorf("after the reload dropped scaleTargetRef: %T", src)
	}
}

// TestKubeApplyNotOnNoData: after a write of 6, the pods' pages go dark and
// someone scales the Deployment to 2 by hand; the decision holds 6 on no
// data and is not written (the HPA does not scale without metrics).
func TestKubeApplyNotOnNoData(t *testing.T) {
	a := pageServer(t, "50", "10")
	l, _, _, sc := kubeLoop(t, replicaPod(t, "chat-a", a))
	l.Cycle(context.Background())
	// Written: the 3 -> 6 is a scale event (+3), as the HPA stores one.
	if up := l.targets[0].run.State.ScaleUpEvents; len(up) != 1 || up[0].Change != 3 {
		t.Errorf("scale-up events %v after writing 3 -> 6, want one of +3", up)
	}
	if r := sc.Replicas("llm", kubefake.Deployments, "chat"); r != 6 {
		t.Fatalf("spec.replicas %d after the first cycle, want 6", r)
	}
	a.Close()
	sc.Set("llm", kubefake.Deployments, "chat", 2, "")
	l.Cycle(context.Background())
	rec := lastRecord(l, "chat")
	if !rec.Held || rec.Desired != 6 || rec.Applied != nil || rec.ApplyError != "" || sc.Replicas("llm", kubefake.Deployments, "chat") != 2 || len(sc.Written) != 1 {
		t.Errorf("record held %v desired %d applied %v error %q, spec.replicas %d, writes %v; want held 6, nothing written (2 stays)",
			rec.Held, rec.Desired, rec.Applied, rec.ApplyError, sc.Replicas("llm", kubefake.Deployments, "chat"), sc.Written)
	}
}
