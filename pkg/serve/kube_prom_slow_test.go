package serve

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	fakescale "k8s.io/client-go/scale/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

// TestSlowScaleReadLeavesPrometheusItsPeriod: Prometheus mode, a target
// with a scaleTargetRef, the API server taking 600 ms to answer the scale
// read in a cycle of 300 ms. Prometheus answers at once: its signals are
// read (running 50 and waiting 10, no error), whatever the scale read
// does. Prometheus was asked only once the scale read had returned, with
// the period already over: every signal a timeout, the target blind to
// a healthy Prometheus while the API server was slow.
func TestSlowScaleReadLeavesPrometheusItsPeriod(t *testing.T) {
	c, _, sc := kubefake.New("llm")
	t.Cleanup(c.Close)
	sc.Set("llm", kubefake.Deployments, "chat", 2, "app=chat")
	c.Scales.(*fakescale.FakeScaleClient).PrependReactor("get", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		time.Sleep(600 * time.Millisecond) // the fake ignores the context: an API server slow to answer
		return false, nil, nil
	})
	srv := fakePrometheus(t, "")
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
prometheus: {url: %s, timeout: 1s}
targets:
- name: chat
  namespace: llm
  selector: '{app="chat"}'
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  metrics: [{type: queue, target: 24}]
  max: 8
`, srv.URL)), "slow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prom, err := NewPrometheusSourceFromRoundTripper(srv.URL, nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	src := NewKubeSource(prom, c, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	rd := src.Read(ctx, []*config.Target{&cfg.Targets[0]}, t0)[0]
	if rd.Obs.Running != 50 || rd.Obs.Waiting != 10 {
		t.Errorf("running %v waiting %v (errors %+v), want 50 and 10 read from Prometheus", rd.Obs.Running, rd.Obs.Waiting, rd.Errors)
	}
	for _, e := range rd.Errors {
		if e.Signal == "running" || e.Signal == "waiting" {
			t.Errorf("error %s: %v, want none from a Prometheus that answered", e.Signal, e.Err)
		}
	}
}
