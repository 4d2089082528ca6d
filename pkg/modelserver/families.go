// Package modelserver names the /metrics families of each LLM model server
// (vLLM, llama.cpp, SGLang, TGI, TensorRT-LLM, Triton) that measure a
// replica's load, so that readers (pkg/scrape) and query builders
// (pkg/promql) share one table instead of string literals.
//
// Reading guide: Server is the typed enum (server.go); Families (this file)
// lists, per signal, the alternative family names in preference order. A
// reader takes the first alternative that is present on a page and never adds
// two alternatives together (vLLM's kv_cache_usage_perc and its deprecated
// gpu_cache_usage_perc describe the same cache).
//
// Sources: each server's metrics documentation (vLLM and SGLang "Production
// Metrics", llama.cpp's server README, TGI and Triton "Metrics",
// trtllm-serve) and the real pages listed in docs/design.md ("Field cases").
package modelserver

// GatewayWorkerLabel names the model server a gateway re-exports a series
// of: the SGLang Model Gateway's worker_addr, e.g.
// worker_addr="grpc://10.0.0.7:8001" (smg-project/smg PR #813).
const GatewayWorkerLabel = "worker_addr"

// VLLMRouterServerLabel names the vLLM engine a vLLM production-stack
// router's /metrics re-exports a gauge of: its vllm:num_requests_running
// and vllm:num_requests_waiting carry server="http://10.0.0.7:8000", one
// series per engine behind the router (vllm-project/production-stack
// src/vllm_router/services/metrics_service and routers/metrics_router.py).
// A page with two values of it covers two replicas. No vLLM engine's own
// page carries the label.
const VLLMRouterServerLabel = "server"

// Families are the metric names one server exports for each signal. Every
// field is a list of alternatives in preference order: the first name that is
// present with a finite sample wins, the others are ignored (never summed).
// Names are exact sample names as written on a page and in PromQL (counters
// carry their _total suffix where the server writes one); a name that merely
// starts with another (`…_created`) is another family. A gauge or counter
// alternative may be a PromQL selector, name{label="value"}, for a family
// that carries several signals told apart by a label (Series); histogram
// families (TTFT, QueueTime, ITL) are plain names, read by their samples'
// suffixed names.
type Families struct {
	// Worker is the label a gateway puts on the series it re-exports for
	// each model server behind it (GatewayWorkerLabel for SGLang, whose
	// Model Gateway serves gRPC workers that have no /metrics of their
	// own); "" when the server has no such gateway. Each value is one
	// replica, as a pod is.
	Worker string
	// Running is requests being decoded (in the running batch), a gauge in
	// requests; summed over engines/ranks of a replica.
	Running []string
	// Waiting is requests queued in the server, a gauge in requests; summed
	// over engines/ranks of a replica.
	Waiting []string
	// KV is KV-cache usage, a gauge fraction 0..1; the maximum over engines.
	KV []string
	// PromptTokens and GenerationTokens are counters in tokens.
	PromptTokens, GenerationTokens []string
	// Requests is a counter of requests finished successfully.
	Requests []string
	// PrefixHits and PrefixQueries are counters in tokens: prompt tokens
	// found in the prefix cache, and prompt tokens looked up in it. The
	// rate of the first over the second is the prefix-cache hit fraction
	// (recommend.HitFraction) that the demand signal leaves out of the
	// prefill. Absent: no hit known, every prompt token prefilled.
	PrefixHits, PrefixQueries []string
	// TTFT is a classic histogram of time to first token in seconds, named by
	// its family (samples are <name>_bucket{le}, <name>_sum, <name>_count).
	TTFT []string
	// QueueTime is a classic histogram of the time a request waited in the
	// server's queue before it was first scheduled, in seconds (named by
	// family, as TTFT).
	QueueTime []string
	// ITL is a classic histogram of inter-token latency in seconds (named
	// by family, as TTFT).
	ITL []string
	// MaxRunning is a static capacity gauge: the most requests the server
	// batches at once (summed over engines). Capacity, never load.
	MaxRunning []string
	// Prefixes are the name prefixes of the server's own namespace, used by
	// auto-detection as a last resort when none of the families above is on
	// a page (e.g. an excerpt with only cache statistics).
	Prefixes []string
}

// Common families every server exports through its Prometheus client library
// (process collector), in base units.
const (
	// CPUSecondsFamily is the process CPU counter, seconds of user+system time.
	CPUSecondsFamily = "process_cpu_seconds_total"
	// StartTimeFamily is the process start time, unix seconds; a change means
	// the process restarted and every counter was reset.
	StartTimeFamily = "process_start_time_seconds"
)

// Info-style families: gauges whose value is 1 or a timestamp and whose
// information is in labels. They are never load.
const (
	// VLLMCacheConfigInfo is vLLM's cache configuration (value 1, labels
	// num_gpu_blocks, block_size, …; no model_name label). docs/design.md page 01.
	VLLMCacheConfigInfo = "vllm:cache_config_info"
	// VLLMLoRARequestsInfo is vLLM's LoRA state: one series per state seen,
	// value = unix time the state was last set; the current
	// state is the series with the largest value, never a sum. docs/design.md page 14.
	VLLMLoRARequestsInfo = "vllm:lora_requests_info"
)

// Families returns the family names s exports. Unknown returns the zero
// Families (no names).
func (s Server) Families() Families {
	switch s {
	case VLLM:
		// vLLM docs "Production Metrics"; V1 renamed gpu_cache_usage_perc to
		// kv_cache_usage_perc (0.9/0.10 export both, 0.12 only the new one:
		// case C08 of docs/design.md). Underscore spellings (vllm_num_requests_running)
		// are not vLLM's names and are not accepted.
		// llm-d-inference-sim exports the same names (docs/design.md page 18).
		return Families{
			Running:          []string{"vllm:num_requests_running"},
			Waiting:          []string{"vllm:num_requests_waiting"},
			KV:               []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
			PromptTokens:     []string{"vllm:prompt_tokens_total"},
			GenerationTokens: []string{"vllm:generation_tokens_total"},
			// The end-to-end latency histogram is observed once per finished
			// request, so its _count is the same count: Triton's vLLM
			// backend (vllm_backend src/utils/metrics.py) exports vLLM's
			// families (labels model, version) but no request_success_total.
			Requests: []string{"vllm:request_success_total", "vllm:e2e_request_latency_seconds_count"},
			// vLLM V1 vllm/v1/metrics/loggers.py: prefix_cache_queries and
			// prefix_cache_hits, counters in tokens ("Prefix cache queries,
			// in terms of number of queried tokens"; prefix caching is on by
			// default in V1); 0.7-0.10 also export them as
			// gpu_prefix_cache_* (deprecated, the same counts: docs/design.md
			// page 03). llm-d-inference-sim writes the counter without
			// _total (page 18).
			PrefixHits:    []string{"vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits_total"},
			PrefixQueries: []string{"vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries_total"},
			TTFT:          []string{"vllm:time_to_first_token_seconds"},
			// Verified in vllm-project/vllm vllm/v1/metrics/loggers.py
			// (PrometheusStatLogger): request_queue_time_seconds ("time spent
			// in WAITING phase", observed once per finished request) and
			// inter_token_latency_seconds (one observation per generated
			// token after the first), both histograms with labels
			// model_name and engine; time_per_output_token_seconds is the
			// same histogram under its old name ("Deprecated in 0.11 -
			// Renamed as vllm:inter_token_latency_seconds"; 0.11 exports
			// both, older V1 builds only it). The per-request mean TPOT
			// histogram of newer builds (request_time_per_output_token_seconds)
			// is another quantity and not read.
			QueueTime: []string{"vllm:request_queue_time_seconds"},
			ITL:       []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"},
			Prefixes:  []string{"vllm:"},
		}
	case LlamaCpp:
		// llama.cpp server README (`--metrics`), docs/design.md page 11. Older builds
		// exported llamacpp:kv_cache_usage_ratio; current builds have no KV gauge.
		// It has no histogram: no queue-time or ITL quantile (its
		// tokens_predicted_seconds_total / tokens_predicted_total is a mean
		// decode time per token, not a quantile, and is not read).
		return Families{
			Running:          []string{"llamacpp:requests_processing"},
			Waiting:          []string{"llamacpp:requests_deferred"},
			KV:               []string{"llamacpp:kv_cache_usage_ratio"},
			PromptTokens:     []string{"llamacpp:prompt_tokens_total"},
			GenerationTokens: []string{"llamacpp:tokens_predicted_total"},
			Prefixes:         []string{"llamacpp:"},
		}
	case SGLang:
		// SGLang docs "Production Metrics" (colon names); SMG gateway
		// re-exports them with underscores (docs/design.md page 08); the Sept 2024
		// pre-release used num_requests_running/num_requests_waiting (page 16).
		return Families{
			Worker:           GatewayWorkerLabel,
			Running:          []string{"sglang:num_running_reqs", "sglang_num_running_reqs", "sglang:num_requests_running"},
			Waiting:          []string{"sglang:num_queue_reqs", "sglang_num_queue_reqs", "sglang:num_requests_waiting"},
			KV:               []string{"sglang:token_usage", "sglang_token_usage"},
			PromptTokens:     []string{"sglang:prompt_tokens_total", "sglang_prompt_tokens_total"},
			GenerationTokens: []string{"sglang:generation_tokens_total", "sglang_generation_tokens_total"},
			Requests:         []string{"sglang:num_requests_total", "sglang_num_requests_total"},
			// sgl-project/sglang python/sglang/srt/metrics/collector.py
			// (TokenizerMetricsCollector): cached_tokens_total ("Number of
			// cached prompt tokens") and prompt_tokens_total (every prompt
			// token of a finished request, cached or not), both counters
			// in tokens (docs/design.md page 06). The cache_hit_rate gauge is
			// not read: it is the last prefill batch's fraction (0..1, reset
			// to 0 when a decode batch is logged), not a window's, and the
			// 2024 pre-release exported it in percent (page 16: 87.6).
			PrefixHits:    []string{"sglang:cached_tokens_total", "sglang_cached_tokens_total"},
			PrefixQueries: []string{"sglang:prompt_tokens_total", "sglang_prompt_tokens_total"},
			TTFT:          []string{"sglang:time_to_first_token_seconds", "sglang_time_to_first_token_seconds"},
			// Histograms of sgl-project/sglang
			// python/sglang/srt/metrics/collector.py: queue_time_seconds
			// ("queueing time", waiting queue to the forward batch) and
			// inter_token_latency_seconds, labelled as the other families.
			QueueTime:  []string{"sglang:queue_time_seconds", "sglang_queue_time_seconds"},
			ITL:        []string{"sglang:inter_token_latency_seconds", "sglang_inter_token_latency_seconds"},
			MaxRunning: []string{"sglang:max_running_requests", "sglang_max_running_requests"},
			Prefixes:   []string{"sglang:", "sglang_"},
		}
	case TGI:
		// TGI router metrics (text-generation-inference docs "Metrics"); the
		// vLLM TGIS adapter exports the same two gauges (docs/design.md page 12).
		// Its router's histogram tgi_request_queue_duration ("Time spent
		// in the queue per request", seconds; TGI docs "Metrics") is the
		// queue time; tgi_request_mean_time_per_token_duration is one mean
		// per request, not an inter-token latency, and is not read. The
		// counter carries no _total suffix.
		return Families{
			Running:   []string{"tgi_batch_current_size"},
			Waiting:   []string{"tgi_queue_size"},
			Requests:  []string{"tgi_request_success"},
			QueueTime: []string{"tgi_request_queue_duration"},
			Prefixes:  []string{"tgi_"},
		}
	case TRTLLM:
		// trtllm-serve's Prometheus text at /prometheus/metrics. Current
		// builds name the families `trtllm_` (NVIDIA/TensorRT-LLM
		// tensorrt_llm/metrics/collector.py, MetricsCollector, metric_prefix
		// "trtllm_"; its test_metrics_endpoint asserts the prefix): running
		// is the iteration's numActiveRequests, waiting numQueuedRequests,
		// kv_cache_utilization usedNumBlocks/maxNumBlocks (0..1),
		// max_num_active_requests the capacity (maxNumActiveRequests), the
		// request_queue_time_seconds histogram "time spent in WAITING
		// phase". The 2025 pre-release wrote vLLM-like names under
		// `pytrtllm:` (docs/design.md page 15). Dynamo's TensorRT-LLM worker
		// re-exported the 1.1 collector's unprefixed request families under
		// `trtllm:` before it moved to `trtllm_` (ai-dynamo/dynamo
		// register_engine_metrics_callback add_prefix; PR #3676): success,
		// TTFT and queue time only. A page carries one naming; each signal
		// reads the first alternative that has a sample. The
		// time_per_output_token_seconds histogram is one mean per request,
		// not an inter-token latency, and is not read.
		return Families{
			Running:          []string{"trtllm_num_requests_running", "pytrtllm:num_requests_running"},
			Waiting:          []string{"trtllm_num_requests_waiting", "pytrtllm:num_requests_waiting"},
			KV:               []string{"trtllm_kv_cache_utilization", "pytrtllm:kv_cache_usage_perc"},
			PromptTokens:     []string{"trtllm_prompt_tokens_total", "pytrtllm:prompt_tokens_total"},
			GenerationTokens: []string{"trtllm_generation_tokens_total", "pytrtllm:generation_tokens_total"},
			Requests:         []string{"trtllm_request_success_total", "trtllm:request_success_total", "pytrtllm:request_success_total", "pytrtllm:request_completed_total"},
			// collector.py: prompt_cached_tokens_total "prompt tokens
			// served from KV cache" and prompt_tokens_total every input
			// token of a finished request, both counters in tokens.
			PrefixHits:    []string{"trtllm_prompt_cached_tokens_total"},
			PrefixQueries: []string{"trtllm_prompt_tokens_total"},
			TTFT:          []string{"trtllm_time_to_first_token_seconds", "trtllm:time_to_first_token_seconds", "pytrtllm:time_to_first_token_seconds"},
			QueueTime:     []string{"trtllm_request_queue_time_seconds", "trtllm:request_queue_time_seconds"},
			MaxRunning:    []string{"trtllm_max_num_active_requests"},
			Prefixes:      []string{"trtllm_", "trtllm:", "pytrtllm:"},
		}
	case Triton:
		// Triton docs "Metrics": pending requests per model (absent before
		// 23.x builds: docs/design.md page 09, waiting stays ABSENT); counters carry no
		// _total suffix. Its TensorRT-LLM backend (tensorrtllm_backend
		// README "Triton Metrics", Triton 23.11 and later) exports the
		// batch manager's statistics as one gauge family per kind, told
		// apart by a label: nv_trt_llm_request_metrics request_type
		// "active" (requests in flight, the executor's numActiveRequests),
		// "waiting" (queued in the engine, numQueuedRequests) and "max"
		// (capacity); nv_trt_llm_kv_cache_block_metrics kv_cache_block_type
		// "fraction" (used KV blocks over all, 0..1). The engine's queue
		// comes before Triton's pending count, which the backend empties
		// as soon as it takes a request.
		return Families{
			Running:    []string{`nv_trt_llm_request_metrics{request_type="active"}`},
			Waiting:    []string{`nv_trt_llm_request_metrics{request_type="waiting"}`, "nv_inference_pending_request_count"},
			KV:         []string{`nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"}`},
			Requests:   []string{"nv_inference_request_success"},
			MaxRunning: []string{`nv_trt_llm_request_metrics{request_type="max"}`},
			Prefixes:   []string{"nv_inference_", "nv_trt_llm_"},
		}
	case EPP:
		return eppFamilies()
	}
	return Families{}
}

// Queue returns the running and waiting alternatives, the families whose
// presence identifies a server first during auto-detection.
func (f Families) Queue() []string {
	return concat(f.Running, f.Waiting)
}

// All returns every family name of f (not the prefixes), in field order,
// each once (SGLang's PrefixQueries are its PromptTokens).
func (f Families) All() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range concat(f.Running, f.Waiting, f.KV, f.PromptTokens, f.GenerationTokens, f.Requests, f.PrefixHits, f.PrefixQueries, f.TTFT, f.QueueTime, f.ITL, f.MaxRunning) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
