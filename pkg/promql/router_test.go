package promql

import "testing"

// TestEngineRouterSeriesNotReplicas: the vLLM production-stack router
// exports its own view of each engine behind it under vLLM's names,
// vllm:num_requests_running{server="http://<engine>:8000"} (and waiting),
// from the router's pod (vllm-project/production-stack
// src/vllm_router/services/metrics_service). A selector of the namespace
// ({namespace="llm"}, as its KEDA and prometheus-adapter tutorials query)
// matches them too. Two engines run 7 and 5 with 4 and 1 waiting; the
// router says the same per server. By hand: running 12, waiting 5, 2
// replicas reporting; the router is no replica and its series are
// copies.
func TestEngineRouterSeriesNotReplicas(t *testing.T) {
	api := newEngineAPI(t, `
  vllm:num_requests_running{namespace="llm",pod="chat-1",model_name="m"} 7x40
  vllm:num_requests_running{namespace="llm",pod="chat-2",model_name="m"} 5x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-1",model_name="m"} 4x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-2",model_name="m"} 1x40
  vllm:kv_cache_usage_perc{namespace="llm",pod="chat-1",model_name="m"} 0.5x40
  vllm:kv_cache_usage_perc{namespace="llm",pod="chat-2",model_name="m"} 0.3x40
  vllm:num_requests_running{namespace="llm",pod="vllm-router-7d9",server="http://10.0.0.1:8000"} 7x40
  vllm:num_requests_running{namespace="llm",pod="vllm-router-7d9",server="http://10.0.0.2:8000"} 5x40
  vllm:num_requests_waiting{namespace="llm",pod="vllm-router-7d9",server="http://10.0.0.1:8000"} 4x40
  vllm:num_requests_waiting{namespace="llm",pod="vllm-router-7d9",server="http://10.0.0.2:8000"} 1x40
  up{namespace="llm",pod="chat-1"} 1x40
  up{namespace="llm",pod="chat-2"} 1x40
  up{namespace="llm",pod="vllm-router-7d9"} 1x40
`)
	r := evalOne(t, api, sel(t, `{namespace="llm"}`), Options{})
	o := r.Values
	if !near(o[Running], 12) || !near(o[Waiting], 5) || o[Reporting] != 2 || !near(o[KV], 0.4) {
		t.Fatalf("running %v waiting %v reporting %v kv %v; want 12 5 2 0.4 (errors %v)", o[Running], o[Waiting], o[Reporting], o[KV], r.Errors)
	}
}
