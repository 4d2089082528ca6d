package promql

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/modelserver"
)

// TestRealPrometheusRequestCounts reads the vLLM profile's request count
// through a real Prometheus (1 s scrapes) on two pods. chat-1 is vLLM: its
// success counter has one series per finished_reason, 1/s "stop" and
// 0.5/s "length", with 150 prompt tokens/s. chat-2 is Triton with its
// vLLM backend: no request_success_total, its finished requests counted by
// vllm:e2e_request_latency_seconds (2/s), with 200 prompt tokens/s; chat-1
// counts its requests there too, and they count once. By
// hand: arrivals 1 + 0.5 + 2 = 3.5 req/s, and the history's prompt mean
// (150 + 200) / 3.5 = 100 tokens. The finished reasons are summed, not
// collapsed as copies of one series (max: 350 / 3 = 117), and the Triton
// pod's requests are counted (without them: 350 / 1.5 = 233).
func TestRealPrometheusRequestCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	vllm := counterPod(t, map[string]string{"vllm:request_success_total": "counter", "vllm:prompt_tokens_total": "counter", "vllm:e2e_request_latency_seconds": "histogram"}, map[string]float64{
		`vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"}`:   1,
		`vllm:request_success_total{engine="0",finished_reason="length",model_name="m"}`: 0.5,
		`vllm:prompt_tokens_total{engine="0",model_name="m"}`:                            150,
		// vLLM counts the same finished requests in its e2e histogram: not twice.
		`vllm:e2e_request_latency_seconds_bucket{engine="0",model_name="m",le="+Inf"}`: 1.5,
		`vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"}`:            1.5,
	})
	triton := counterPod(t, map[string]string{"vllm:e2e_request_latency_seconds": "histogram", "vllm:prompt_tokens_total": "counter"}, map[string]float64{
		`vllm:e2e_request_latency_seconds_bucket{model="vllm_model",version="1",le="+Inf"}`: 2,
		`vllm:e2e_request_latency_seconds_sum{model="vllm_model",version="1"}`:              10,
		`vllm:e2e_request_latency_seconds_count{model="vllm_model",version="1"}`:            2,
		`vllm:prompt_tokens_total{model="vllm_model",version="1"}`:                          200,
	})
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second, Targets: []promtest.Target{
		{URL: vllm.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "chat-1"}},
		{URL: triton.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "chat-2"}},
	}})
	prom.WaitFor(t, `min(count_over_time(vllm:prompt_tokens_total[30s])) and on () count(vllm:prompt_tokens_total) == 2`, 60*time.Second,
		func(v model.Vector) bool { return len(v) == 1 && v[0].Value >= 13 })
	c, err := NewClient(ClientConfig{URL: prom.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	chat := sel(t, `{namespace="llm", pod=~"chat-.*"}`)
	chat.Name, chat.Demand = "chat", true
	now := time.Now()
	ev := &Evaluator{API: c, Options: Options{DemandWindow: 10 * time.Second}}
	res, _ := ev.Evaluate(context.Background(), []Target{chat}, now)
	if got := res[0].Values[Arrivals]; !(math.Abs(got-3.5) <= 0.07) {
		t.Errorf("arrivals %v req/s (%v), want 3.5", got, res[0].Errors[Arrivals])
	}
	h, err := HistoryQueries(Target{Server: modelserver.VLLM, Selector: chat.Selector}, Options{}, 10*time.Second, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := c.Instant(context.Background(), h.Success, now); err != nil || len(v) != 3 {
		t.Errorf("success series %v (%v), want 3: chat-1's stop and length, chat-2's e2e count (%s)", v, err, h.Success)
	}
	v, _, err := c.Instant(context.Background(), h.PromptMean, now)
	if err != nil || len(v) != 1 {
		t.Fatalf("prompt mean: %v %v (%s)", v, err, h.PromptMean)
	}
	if got := float64(v[0].Value); !(math.Abs(got-100) <= 2) {
		t.Errorf("prompt mean %.1f tokens, want 100 (%s)", got, h.PromptMean)
	}
}
