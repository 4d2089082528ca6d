package serve

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

// TestOnlyTheLeaseHolderApplies: two serve loops over one cluster (one
// fake clientset holding the Lease and the pods), each gated by its own
// kube.Elector. Both decide 6 (queue 20 + 4 + 30 + 6 = 60, target 10, as
// TestKubeEmbeddedDiscoversAndApplies); only the holder writes. When the
// holder's election ends (SIGTERM: the Lease released), the other takes
// over and its next decision is written.
func TestOnlyTheLeaseHolderApplies(t *testing.T) {
	c, fc, sc := kubefake.New("default", replicaPod(t, "chat-a", pageServer(t, "20", "4")), replicaPod(t, "chat-b", pageServer(t, "30", "6")))
	t.Cleanup(c.Close)
	sc.Set("llm", kubefake.Deployments, "chat", 3, "app=chat")
	lease := func(id string) *kube.Elector {
		e, err := kube.NewElector(fc, kube.LeaseConfig{Name: "infscale", Namespace: "llm", Identity: id,
			// Long enough that a starved machine (a cycle taking seconds)
			// does not hand the Lease over mid-test; the handover below is
			// a release (ReleaseOnCancel), taken at b's next 100 ms retry.
			LeaseDuration: 20 * time.Second, RenewDeadline: 15 * time.Second, RetryPeriod: 100 * time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	loop := func(e *kube.Elector) *Loop {
		cfg, err := config.Parse([]byte(kubeConfig), "kube.yaml")
		if err != nil {
			t.Fatal(err)
		}
		ss := &sources{o: &Options{Cluster: func() (*kube.Cluster, error) { return c, nil }, IsLeader: e.IsLeader}}
		src, err := ss.build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(prometheus.NewRegistry(), "test"), Interval: 15 * time.Second})
		if err := l.SetConfig(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		return l
	}
	run := func(e *kube.Elector) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = e.Run(ctx) }()
		stop = func() { cancel(); <-done }
		t.Cleanup(stop)
		return stop
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: not within 5s", what)
			}
		}
	}
	ea, eb := lease("serve-a"), lease("serve-b")
	la, lb := loop(ea), loop(eb)
	stopA := run(ea)
	wait("serve-a leads", ea.IsLeader)
	run(eb)
	time.Sleep(300 * time.Millisecond) // three of b's retries: the Lease is a's

	lb.Cycle(context.Background())
	if rec := lastRecord(lb, "chat"); rec.Desired != 6 || rec.Applied != nil || rec.ApplyError != "" {
		t.Fatalf("serve-b (not leading): desired %d applied %v error %q; want 6, nothing written, no error", rec.Desired, rec.Applied, rec.ApplyError)
	}
	if len(sc.Written) != 0 {
		t.Fatalf("serve-b wrote %v without the Lease", sc.Written)
	}
	la.Cycle(context.Background())
	if rec := lastRecord(la, "chat"); rec.Desired != 6 || rec.Applied == nil || *rec.Applied != 6 {
		t.Fatalf("serve-a (leading): desired %d applied %v; want 6 written", rec.Desired, rec.Applied)
	}

	stopA()
	wait("serve-b takes over", eb.IsLeader)
	sc.Set("llm", kubefake.Deployments, "chat", 3, "app=chat") // someone scaled it back
	lb.Cycle(context.Background())
	la.Cycle(context.Background())
	if !reflect.DeepEqual(sc.Written, []int32{6, 6}) {
		t.Errorf("writes %v, want [6 6]: serve-a's, then serve-b's after the handover, and none from serve-a after it", sc.Written)
	}
}
