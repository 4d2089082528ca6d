package serve

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

const costConfig = `namespace: llm
targets:
- name: chat
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  scrape: {port: http}
  apply: true
  pod_deletion_cost: true
  metrics: [{type: queue, target: 20}]
  behavior: {scaleDown: {stabilizationWindowSeconds: 0}}
  guard: {off: true}
  max: 8
`

// costLoop is a loop over costConfig on a fake cluster where Deployment
// chat runs 4 replicas, its pods' pages answering running and waiting:
//
//	pod     running+waiting  cost
//	chat-a  0 + 0 = 0        0 (no annotation needed)
//	chat-b  8 + 4 = 12       12
//	chat-c  3 + 1 = 4        4
//	chat-d  25 + 5 = 30      30
//
// queue 46 / target 20 = 2.3: 3 replicas, a scale-down from 4 (ratio
// 46 / (20 × 4) = 0.575, outside the tolerance).
func costLoop(t *testing.T, isLeader func() bool) (*Loop, *kube.Cluster, *kubefake.Scales) {
	t.Helper()
	var objs []runtime.Object
	for _, p := range []struct{ name, running, waiting string }{
		{"chat-a", "0", "0"}, {"chat-b", "8", "4"}, {"chat-c", "3", "1"}, {"chat-d", "25", "5"},
	} {
		objs = append(objs, replicaPod(t, p.name, pageServer(t, p.running, p.waiting)))
	}
	l, _, c, sc := fakeClusterLoop(t, costConfig, 4, isLeader, objs...)
	return l, c, sc
}

// fakeClusterLoop is a loop over the config text on a fake cluster holding
// objects, Deployment chat at replicas (selector app=chat); isLeader gates
// the writes (nil: always).
func fakeClusterLoop(t *testing.T, text string, replicas int32, isLeader func() bool, objects ...runtime.Object) (*Loop, *Metrics, *kube.Cluster, *kubefake.Scales) {
	t.Helper()
	cfg, err := config.Parse([]byte(text), "kube.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, _, sc := kubefake.New("default", objects...)
	t.Cleanup(c.Close)
	sc.Set("llm", kubefake.Deployments, "chat", replicas, "app=chat")
	ss := &sources{o: &Options{Cluster: func() (*kube.Cluster, error) { return c, nil }, IsLeader: isLeader}}
	src, err := ss.build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(prometheus.NewRegistry(), "test")
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return l, m, c, sc
}

func costs(t *testing.T, c *kube.Cluster) map[string]string {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods("llm").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if v, ok := p.Annotations[corev1.PodDeletionCost]; ok {
			out[p.Name] = v
		}
	}
	return out
}

// TestScaleDownSetsDeletionCosts: the decision 4 -> 3 sets the pods'
// costs to their outstanding requests (chat-a, idle, keeps none: 0), so
// the ReplicaSet removing one pod removes chat-a; spec.replicas is then
// written. Off the Lease the decision is the same and nothing is written.
func TestScaleDownSetsDeletionCosts(t *testing.T) {
	l, c, sc := costLoop(t, nil)
	l.Cycle(context.Background())
	rec := lastRecord(l, "chat")
	if rec.Desired != 3 || rec.Current != 4 {
		t.Fatalf("desired %d from %d (%s, errors %v), want 3 from 4", rec.Desired, rec.Current, rec.Reason, rec.Errors)
	}
	want := map[string]string{"chat-b": "12", "chat-c": "4", "chat-d": "30"}
	if got := costs(t, c); !reflect.DeepEqual(got, want) {
		t.Errorf("costs %v, want %v", got, want)
	}
	if sc.Replicas("llm", kubefake.Deployments, "chat") != 3 {
		t.Errorf("spec.replicas %d, want 3", sc.Replicas("llm", kubefake.Deployments, "chat"))
	}

	l, c, sc = costLoop(t, func() bool { return false })
	l.Cycle(context.Background())
	if rec := lastRecord(l, "chat"); rec.Desired != 3 {
		t.Errorf("off the Lease: desired %d, want the same 3", rec.Desired)
	}
	if got := costs(t, c); len(got) != 0 || sc.Replicas("llm", kubefake.Deployments, "chat") != 4 {
		t.Errorf("off the Lease: costs %v, spec.replicas %d; want none written, 4", got, sc.Replicas("llm", kubefake.Deployments, "chat"))
	}
}

// TestNoCostsWithoutScaleDown: a scale-up (queue 46 / 10 = 5 > 4) writes
// no annotation: costs are set only before a scale-down (updating them
// with the load every cycle is the annotation's documented anti-pattern).
func TestNoCostsWithoutScaleDown(t *testing.T) {
	l, c, _ := costLoop(t, nil)
	cfg, err := config.Parse([]byte(strings.Replace(costConfig, "target: 20", "target: 10", 1)), "cost.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	l.Cycle(context.Background())
	if rec := lastRecord(l, "chat"); rec.Desired != 5 {
		t.Fatalf("desired %d, want ceil(46 / 10) = 5", rec.Desired)
	}
	if got := costs(t, c); len(got) != 0 {
		t.Errorf("costs %v on a scale-up, want none", got)
	}
}

// peekingCosts is a CostWriter that, as it is called, reads what /metrics
// exports for infscale_desired_replicas then (the value KEDA or the HPA
// could read while the costs are being written), then sets the costs.
type peekingCosts struct {
	inner  CostWriter
	m      *Metrics
	seen   []string
	called int
}

func (p *peekingCosts) SetDeletionCosts(ctx context.Context, t *config.Target, outstanding map[string]float64) (int, int, error) {
	p.called++
	p.seen = append(p.seen, exportedDesired(p.m))
	return p.inner.SetDeletionCosts(ctx, t, outstanding)
}

// exportedDesired is chat's infscale_desired_replicas as exported ("" when absent).
func exportedDesired(m *Metrics) string {
	fams, _ := m.table.Gather()
	for _, f := range fams {
		if f.GetName() == "infscale_desired_replicas" {
			for _, s := range f.GetMetric() {
				return strconv.FormatFloat(s.GetGauge().GetValue(), 'g', -1, 64)
			}
		}
	}
	return ""
}

// TestScaleDownExportedAfterCosts: in KEDA's mode (no apply) the decision
// 4 -> 3 of costLoop's pods is exported only once the pods' deletion costs
// are written: while they are being written /metrics still says the
// previous 4 (a scale-up cycle before), so KEDA or the HPA never acts on 3
// with the pods' costs unset (the ReplicaSet would remove the youngest pod,
// not the idle chat-a); after the cycle it says 3.
func TestScaleDownExportedAfterCosts(t *testing.T) {
	var objs []runtime.Object
	for _, p := range []struct{ name, running, waiting string }{
		{"chat-a", "0", "0"}, {"chat-b", "8", "4"}, {"chat-c", "3", "1"}, {"chat-d", "25", "5"},
	} {
		objs = append(objs, replicaPod(t, p.name, pageServer(t, p.running, p.waiting)))
	}
	text := strings.Replace(costConfig, "  apply: true\n", "", 1)
	l, m, c, _ := fakeClusterLoop(t, strings.Replace(text, "target: 20", "target: 10", 1), 4, nil, objs...)
	// queue 46 at target 10: ceil(4.6) = 5 from 4, a scale-up (no costs).
	l.Cycle(context.Background())
	if got := exportedDesired(m); got != "5" {
		t.Fatalf("first cycle exports desired %q, want 5", got)
	}
	cfg, err := config.Parse([]byte(text), "cost.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	p := &peekingCosts{inner: l.costs, m: m}
	l.costs = p
	// queue 46 at target 20 on spec.replicas 4: 3, a scale-down.
	l.Cycle(context.Background())
	if p.called != 1 {
		t.Fatalf("costs written %d times, want once before the scale-down", p.called)
	}
	if p.seen[0] != "5" {
		t.Errorf("while the costs were written /metrics said desired %q, want the previous 5 (not yet the 3 they prepare)", p.seen[0])
	}
	if got := exportedDesired(m); got != "3" {
		t.Errorf("after the cycle desired %q, want 3", got)
	}
	if got := costs(t, c); got["chat-b"] != "12" {
		t.Errorf("costs %v, want chat-b 12", got)
	}
}
