package promql

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/modelserver"
)

// TestRealPrometheusGatewayWorkers reads an SGLang Model Gateway's page
// through a real Prometheus: one pod (the gateway) re-exports the series
// of its two gRPC workers, told apart by worker_addr (the labels of
// smg-project/smg PR #813's page: sglang_* names, model_name, ranks). Each
// worker is one replica, as its own pod would be. By hand: running 5 + 7
// = 12, waiting 0 + 3 = 3, reporting 2, KV (0.2 + 0.6) / 2 = 0.4, one
// worker with a queue. Read by pod alone the two workers' series are one
// pod's copies: deduplication would keep the larger (running 7, waiting
// 3) and count 1 replica.
func TestRealPrometheusGatewayWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	lbl := func(w string) string {
		return `{engine_type="unified",model_name="meta-llama/Llama-3.1-8B-Instruct",moe_ep_rank="0",pp_rank="0",tp_rank="0",worker_addr="` + w + `"}`
	}
	a, b := "grpc://10.0.0.7:8001", "grpc://10.0.0.8:8001"
	gw := fakePod(t, `# TYPE sglang_num_running_reqs gauge
sglang_num_running_reqs`+lbl(a)+` 5
sglang_num_running_reqs`+lbl(b)+` 7
# TYPE sglang_num_queue_reqs gauge
sglang_num_queue_reqs`+lbl(a)+` 0
sglang_num_queue_reqs`+lbl(b)+` 3
# TYPE sglang_token_usage gauge
sglang_token_usage`+lbl(a)+` 0.2
sglang_token_usage`+lbl(b)+` 0.6
`, false)
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second, Targets: []promtest.Target{
		{URL: gw.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "smg-0"}},
	}})
	prom.WaitFor(t, `count(sglang_num_running_reqs)`, 60*time.Second, func(v model.Vector) bool { return len(v) == 1 && v[0].Value == 2 })
	c, err := NewClient(ClientConfig{URL: prom.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tg := sel(t, `{namespace="llm", pod="smg-0"}`)
	tg.Server, tg.Demand, tg.Duplicates = modelserver.SGLang, true, true
	ev := &Evaluator{API: c}
	rs, _ := ev.Evaluate(context.Background(), []Target{tg}, time.Now())
	res := rs[0]
	want := map[Signal]float64{Running: 12, Waiting: 3, Reporting: 2, KV: 0.4, Queued: 1, Duplicated: 0}
	for sig, w := range want {
		if got := res.Values[sig]; !(got > w-1e-9 && got < w+1e-9) {
			t.Errorf("%s = %v (%v), want %v", sig, got, res.Errors[sig], w)
		}
	}
}
