package modelserver

// The llm-d Endpoint Picker (EPP) is not a model server: its /metrics page
// describes a whole InferencePool (pool averages over the endpoints with
// fresh metrics, their count, the flow-control queue in front of them, the
// requests and tokens that went through it). Server EPP names it; its
// Families (for detection and `infscale parse`) are the pool averages, and
// EPPFamilies lists every family infscale reads from it with its
// deprecated twin.
//
// Source: llm-d/llm-d-router at commit ebab687927f5331c1b39defcb579a07951bce56c
// (2026-08-22): pkg/epp/metrics/metrics.go (the deprecated inference_pool_,
// inference_objective_ and inference_extension_ families),
// pkg/epp/metrics/llm_d_router_metrics.go (their llm_d_epp_ twins, dual
// emitted), pkg/epp/metrics/collectors/inference_pool.go (per-endpoint
// queue), pkg/epp/framework/plugins/requestcontrol/dataproducer/inflightload
// (in-flight requests and tokens), pkg/epp/datalayer/logger/logger.go (how
// the pool averages are computed) and docs/metrics.md.

// Twin is one EPP signal's family under its current llm_d_epp_ name and its
// deprecated name (the EPP writes both while the old prefixes are
// deprecated: dual emission). Readers take Current when the page (or
// Prometheus) has it, else Deprecated, never both: adding them would count
// every request twice. Deprecated is "" when the family has no twin.
type Twin struct {
	Current, Deprecated string
}

// Names returns the present names in preference order (Current first).
func (t Twin) Names() []string {
	if t.Deprecated == "" {
		return []string{t.Current}
	}
	return []string{t.Current, t.Deprecated}
}

// EPPSet is every family infscale reads from an EPP page, each a Twin, with
// its type and labels as the router defines them.
type EPPSet struct {
	// ReadyEndpoints is a gauge {name}: the pool's endpoints whose metrics
	// are fresh (the denominator of the averages). Twin inference_pool_ready_pods.
	ReadyEndpoints Twin
	// AvgQueue, AvgRunning and AvgKV are gauges {name}: the mean over the
	// ready endpoints of the model servers' waiting requests, running
	// requests and KV-cache usage (0..1), rounded to two decimals, and left
	// at their last value while the pool has no ready endpoint.
	AvgQueue, AvgRunning, AvgKV Twin
	// EndpointQueue is a gauge {name, model_server_endpoint} (the twin's
	// label is model_server_pod): one model server's waiting requests, for
	// every endpoint the EPP knows (stale ones too).
	EndpointQueue Twin
	// RequestRunning is a gauge {model_name, target_model_name,
	// fairness_id, priority}: requests in flight through the EPP (the twin
	// inference_objective_running_requests has model_name only).
	RequestRunning Twin
	// InflightRequests and InflightTokens are gauges {endpoint_name,
	// namespace, producer_name, fairness_id, priority} of the in-flight load
	// producer (present only when it is configured; no twin): requests
	// dispatched to an endpoint and not finished, and their uncached prompt
	// tokens (plus estimated output tokens when configured).
	InflightRequests, InflightTokens Twin
	// Requests is a counter of requests received {model_name,
	// target_model_name, fairness_id, priority}: the arrival rate.
	Requests Twin
	// InputTokens and OutputTokens are histograms of tokens per request
	// (their _sum is the token counter, _count the requests counted).
	InputTokens, OutputTokens Twin
	// TTFT and ITL are histograms in seconds (TTFT adds label streaming);
	// no twin.
	TTFT, ITL Twin
	// FlowQueue is a gauge {fairness_id, priority, inference_pool,
	// model_name, target_model_name}: requests held in the flow-control
	// queue (only with the flowControl feature gate).
	FlowQueue Twin
	// Saturation is a gauge {inference_pool, stage}: stage prefill, decode
	// or effective (max of the two, the one that gates dispatch); 1.0 is the
	// set point, above it oversubscription. An empty pool reads 1.0 and
	// endpoints with stale metrics score as saturated (fail-closed).
	Saturation Twin
	// StaleEndpoints is a gauge {detector}: candidate endpoints whose
	// metrics were missing or stale at the last saturation evaluation (no
	// twin).
	StaleEndpoints Twin
}

// EPPFamilies returns the EPP's families (llm-d-router at the commit cited
// above).
func EPPFamilies() EPPSet {
	return EPPSet{
		ReadyEndpoints:   Twin{"llm_d_epp_ready_endpoints", "inference_pool_ready_pods"},
		AvgQueue:         Twin{"llm_d_epp_average_queue_size", "inference_pool_average_queue_size"},
		AvgRunning:       Twin{"llm_d_epp_average_running_requests", "inference_pool_average_running_requests"},
		AvgKV:            Twin{"llm_d_epp_average_kv_cache_utilization", "inference_pool_average_kv_cache_utilization"},
		EndpointQueue:    Twin{"llm_d_epp_per_endpoint_queue_size", "inference_pool_per_pod_queue_size"},
		RequestRunning:   Twin{"llm_d_epp_request_running", "inference_objective_running_requests"},
		InflightRequests: Twin{Current: "llm_d_epp_inflight_requests"},
		InflightTokens:   Twin{Current: "llm_d_epp_inflight_tokens"},
		Requests:         Twin{"llm_d_epp_request_total", "inference_objective_request_total"},
		InputTokens:      Twin{"llm_d_epp_request_input_tokens", "inference_objective_input_tokens"},
		OutputTokens:     Twin{"llm_d_epp_request_output_tokens", "inference_objective_output_tokens"},
		TTFT:             Twin{Current: "llm_d_epp_request_ttft_seconds"},
		ITL:              Twin{Current: "llm_d_epp_request_streaming_itl_seconds"},
		FlowQueue:        Twin{"llm_d_epp_flow_control_queue_size", "inference_extension_flow_control_queue_size"},
		Saturation:       Twin{"llm_d_epp_flow_control_pool_saturation", "inference_extension_flow_control_pool_saturation"},
		StaleEndpoints:   Twin{Current: "llm_d_epp_flow_control_stale_endpoints"},
	}
}

// eppFamilies are EPP's per-signal Families: the pool averages stand for
// running, waiting and KV (readers of an EPP page multiply the first two by
// the ready endpoints: pkg/scrape's Pool), the request counter, TTFT and ITL.
func eppFamilies() Families {
	f := EPPFamilies()
	return Families{
		Running:  f.AvgRunning.Names(),
		Waiting:  f.AvgQueue.Names(),
		KV:       f.AvgKV.Names(),
		Requests: f.Requests.Names(),
		TTFT:     f.TTFT.Names(),
		ITL:      f.ITL.Names(),
		Prefixes: []string{"llm_d_epp_", "inference_pool_", "inference_objective_", "inference_extension_"},
	}
}
