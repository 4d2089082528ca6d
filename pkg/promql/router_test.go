package promql

import (
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
)

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

// TestEngineRouterServerMatcherKept: a selector that names the server
// label itself is the user's word that their engines' series carry it:
// it is kept as given (no server="" added), and reads those series.
func TestEngineRouterServerMatcherKept(t *testing.T) {
	api := newEngineAPI(t, `
  vllm:num_requests_running{namespace="llm",pod="chat-1",server="a"} 7x40
  vllm:num_requests_running{namespace="llm",pod="chat-2",server="a"} 5x40
  up{namespace="llm",pod="chat-1"} 1x40
  up{namespace="llm",pod="chat-2"} 1x40
`)
	r := evalOne(t, api, sel(t, `{namespace="llm",server="a"}`), Options{})
	if o := r.Values; !near(o[Running], 12) || o[Reporting] != 2 {
		t.Fatalf("running %v reporting %v; want 12 and 2 (errors %v)", o[Running], o[Reporting], r.Errors)
	}
}

// TestEngineEPPHeldHADuplicates: the EPP's flow-control queue (the
// requests it holds, Held: what wakes a pool at zero) read through an HA
// Prometheus pair queried without dedup (Thanos, Mimir, federation)
// comes back twice, replica="A" and "B". Each EPP replica's queue adds
// up (two flows here: 4 + 2), the copies of one do not: held 6, not 12.
// The arrivals of the same shape already dropped the replica labels.
func TestEngineEPPHeldHADuplicates(t *testing.T) {
	api := newEngineAPI(t, `
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="a",priority="0",replica="A"} 4x40
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="b",priority="0",replica="A"} 2x40
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="a",priority="0",replica="B"} 4x40
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="b",priority="0",replica="B"} 2x40
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="epp-1",replica="A"} 0x40
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="epp-1",replica="B"} 0x40
`)
	tg := sel(t, `{namespace="llm",service="chat-epp"}`)
	tg.Server, tg.FlowControlHeld = modelserver.EPP, true
	r := evalOne(t, api, tg, Options{})
	if v := r.Values[Held]; !near(v, 6) {
		t.Fatalf("held %v, want 6 (errors %v)", v, r.Errors)
	}
}
