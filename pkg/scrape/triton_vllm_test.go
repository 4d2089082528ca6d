package scrape

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
)

// tritonVLLM is the shape of a Triton page with its vLLM backend
// (triton-inference-server/vllm_backend, "Triton Metrics"): Triton's own
// counters and pending count beside vLLM's families labelled model and
// version, and no vllm:request_success_total. finished requests are in the
// e2e latency histogram's _count.
func tritonVLLM(finished int) string {
	return fmt.Sprintf(`# TYPE nv_inference_request_success counter
nv_inference_request_success{model="vllm_model",version="1"} %[1]d
# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="vllm_model",version="1"} 0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model="vllm_model",version="1"} 7
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model="vllm_model",version="1"} 3
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model="vllm_model",version="1"} 0.42
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{model="vllm_model",version="1",le="1"} 10
vllm:e2e_request_latency_seconds_bucket{model="vllm_model",version="1",le="+Inf"} %[1]d
vllm:e2e_request_latency_seconds_sum{model="vllm_model",version="1"} 300
vllm:e2e_request_latency_seconds_count{model="vllm_model",version="1"} %[1]d
`, finished)
}

// TestTritonVLLMBackend: auto reads the page as vllm (running 7, waiting 3,
// KV 0.42), its requests from the e2e histogram's count: 95 -> 125 over
// 10 s is 3 req/s. Read as triton it was a page of unknown running
// requests (no TensorRT-LLM batch metrics), now refused naming vllm.
func TestTritonVLLMBackend(t *testing.T) {
	t0 := time.Unix(1.7e9, 0)
	read := func(finished int, at time.Time, s modelserver.Server) (*Page, error) {
		p, err := Read(strings.NewReader(tritonVLLM(finished)), "text/plain", "triton.prom", s)
		if p != nil {
			p.Time = at
		}
		return p, err
	}
	prev, err := read(95, t0, modelserver.Unknown)
	if err != nil {
		t.Fatal(err)
	}
	if prev.Server != modelserver.VLLM || prev.Running != 7 || prev.Waiting != 3 || prev.KV != 0.42 || prev.Requests != 95 {
		t.Errorf("read as %s: running %v waiting %v kv %v requests %v, want vllm 7 3 0.42 95", prev.Server, prev.Running, prev.Waiting, prev.KV, prev.Requests)
	}
	cur, err := read(125, t0.Add(10*time.Second), modelserver.VLLM)
	if err != nil {
		t.Fatal(err)
	}
	if r := Rate(prev, cur); r.Requests != 3 {
		t.Errorf("request rate %v, want 3", r.Requests)
	}
	_, err = read(95, t0, modelserver.Triton)
	var other *OtherServerError
	if !errors.As(err, &other) || other.Page != modelserver.VLLM || !strings.Contains(err.Error(), "give the server as vllm") {
		t.Errorf("as triton: %v, want refused naming vllm", err)
	}
}

// TestSuccessCounterBeforeE2ECount: a vLLM page with both counts reads the
// success counter (summed over finished_reason: 60 + 40), not the e2e
// histogram's count (which a test page sets apart, 1). A gauge
// histogram's _gcount is no counter.
func TestSuccessCounterBeforeE2ECount(t *testing.T) {
	page := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running 1
# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="stop"} 60
vllm:request_success_total{finished_reason="length"} 40
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{le="+Inf"} 1
vllm:e2e_request_latency_seconds_sum 1
vllm:e2e_request_latency_seconds_count 1
`
	p, err := Read(strings.NewReader(page), "text/plain", "v.prom", modelserver.VLLM)
	if err != nil || p.Requests != 100 || p.Chosen.Requests != "vllm:request_success_total" {
		t.Errorf("requests %v from %q (%v), want 100 from vllm:request_success_total", p.Requests, p.Chosen.Requests, err)
	}
	raw, _, err := parsePage([]byte("# TYPE x gaugehistogram\nx_gcount 3\nx_gsum 1\nx_bucket{le=\"+Inf\"} 3\n# EOF\n"), ContentTypeOpenMetrics, "g")
	if err != nil {
		t.Fatal(err)
	}
	if raw.checkType("x_gcount", counterKind) == nil {
		t.Error("a gauge histogram's _gcount read as a counter")
	}
}
