package serve

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

// TestLeaderUntilGatesWrites: Options.LeaderUntil reaches the writers of
// a kube target (the scale and the deletion costs). costLoop's pods
// (queue 46 / target 20: 3 from 4, a scale-down): with the leadership
// ended a second ago the decision is the same 3 and nothing is written
// (no cost, spec.replicas 4, no apply error counted), and the record says
// why (apply_skipped: not the leader); with it ending in a minute the
// costs (chat-b 12, chat-c 4, chat-d 30) and spec.replicas 3 are written
// (applied 3, nothing skipped).
func TestLeaderUntilGatesWrites(t *testing.T) {
	for _, c := range []struct {
		name  string
		until time.Duration
		costs map[string]string
		spec  int32
		skip  string
	}{
		{"ended", -time.Second, map[string]string{}, 4, "not the leader: another instance writes"},
		{"leading", time.Minute, map[string]string{"chat-b": "12", "chat-c": "4", "chat-d": "30"}, 3, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, p := range []struct{ name, running, waiting string }{
				{"chat-a", "0", "0"}, {"chat-b", "8", "4"}, {"chat-c", "3", "1"}, {"chat-d", "25", "5"},
			} {
				objs = append(objs, replicaPod(t, p.name, pageServer(t, p.running, p.waiting)))
			}
			cfg, err := config.Parse([]byte(costConfig), "kube.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cl, _, sc := kubefake.New("default", objs...)
			t.Cleanup(cl.Close)
			sc.Set("llm", kubefake.Deployments, "chat", 4, "app=chat")
			until := time.Now().Add(c.until)
			ss := &sources{o: &Options{Cluster: func() (*kube.Cluster, error) { return cl, nil }, LeaderUntil: func() time.Time { return until }}}
			src, err := ss.build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second})
			if err := l.SetConfig(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			l.Cycle(context.Background())
			rec := lastRecord(l, "chat")
			if rec.Desired != 3 || rec.ApplyError != "" || rec.ApplySkipped != c.skip || (rec.Applied != nil) != (c.skip == "") {
				t.Errorf("desired %d, apply error %q, skipped %q, applied %v; want 3, none, %q, applied %v", rec.Desired, rec.ApplyError, rec.ApplySkipped, rec.Applied, c.skip, c.skip == "")
			}
			if got := costs(t, cl); !reflect.DeepEqual(got, c.costs) || sc.Replicas("llm", kubefake.Deployments, "chat") != c.spec {
				t.Errorf("costs %v, spec.replicas %d; want %v, %d", got, sc.Replicas("llm", kubefake.Deployments, "chat"), c.costs, c.spec)
			}
		})
	}
}
