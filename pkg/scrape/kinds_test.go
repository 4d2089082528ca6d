package scrape

import (
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
)

// Kinds of page the field cases (shared/testdata/LOG.md) do not hold, each
// built from whole lines as the servers print them (the source beside
// each), with what a reader derives worked out by hand under LOG.md's
// conventions: running and waiting summed over series, KV the maximum,
// ABSENT (A) distinct from 0.
func TestFieldKinds(t *testing.T) {
	for name, tc := range map[string]struct {
		page, contentType    string
		server               modelserver.Server
		running, waiting, kv float64
		prompt               float64
		engines              int
		check                func(t *testing.T, p *Page)
	}{
		// vLLM V0 (0.4-0.6, vllm/engine/metrics.py): the families of the
		// Metrics class, label model_name only, cache_config an Info (text
		// format: a gauge _info at 1), swapped requests and the CPU cache
		// beside the GPU's (values illustrative). Running 5, not 5 + 1
		// swapped; waiting 2; KV the GPU cache's 0.93, not the CPU's 0.05;
		// the info gauge is not load.
		"vLLM V0 swapped and CPU cache": {page: `# HELP vllm:cache_config_info information of cache_config
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="False",gpu_memory_utilization="0.9",num_cpu_blocks="512",num_gpu_blocks="7413",num_gpu_blocks_override="None",sliding_window="None",swap_space_bytes="4294967296"} 1.0
# HELP vllm:num_requests_running Number of requests currently running on GPU.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="meta-llama/Llama-2-7b-chat-hf"} 5.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="meta-llama/Llama-2-7b-chat-hf"} 2.0
# HELP vllm:num_requests_swapped Number of requests swapped to CPU.
# TYPE vllm:num_requests_swapped gauge
vllm:num_requests_swapped{model_name="meta-llama/Llama-2-7b-chat-hf"} 1.0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="meta-llama/Llama-2-7b-chat-hf"} 0.93
# HELP vllm:cpu_cache_usage_perc CPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:cpu_cache_usage_perc gauge
vllm:cpu_cache_usage_perc{model_name="meta-llama/Llama-2-7b-chat-hf"} 0.05
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="meta-llama/Llama-2-7b-chat-hf"} 81920.0
`, server: modelserver.VLLM, running: 5, waiting: 2, kv: 0.93, prompt: 81920, engines: 1,
			check: func(t *testing.T, p *Page) { wantModels(t, p, "meta-llama/Llama-2-7b-chat-hf") }},

		// vLLM 0.10/0.11 with --api-server-count 8: vllm:kv_cache_usage_perc
		// lacked multiprocess_mode="mostrecent", so each API server process
		// wrote its own series (pid label), the stale ones 0.0 (lines from
		// vllm-project/vllm PR #28792). KV is the maximum, 0.6530455880475035;
		// the pid series are one engine, not eight.
		"vLLM api-server-count pid series": {page: `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-VL-8B-Instruct"} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-VL-8B-Instruct"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-VL-8B-Instruct",pid="277"} 0.0
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-VL-8B-Instruct",pid="275"} 0.0
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-VL-8B-Instruct",pid="273"} 0.6530455880475035
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-VL-8B-Instruct",pid="271"} 0.0
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-VL-8B-Instruct",pid="272"} 0.0
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-VL-8B-Instruct",pid="276"} 0.0
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-VL-8B-Instruct",pid="274"} 0.0
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-VL-8B-Instruct",pid="278"} 0.0
`, server: modelserver.VLLM, running: 3, waiting: 0, kv: 0.6530455880475035, prompt: A, engines: 1},

		// vLLM 2026 (PR #38435): vllm:num_requests_waiting_by_reason splits
		// the waiting count by reason; its sum equals num_requests_waiting.
		// Waiting is 3, not 3 + 3 + 0 = 6.
		"vLLM waiting_by_reason": {page: `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen3.8-27b"} 2.0
vllm:num_requests_waiting{engine="0",model_name="qwen3.8-27b"} 3.0
vllm:num_requests_waiting_by_reason{engine="0",model_name="qwen3.8-27b",reason="capacity"} 3.0
vllm:num_requests_waiting_by_reason{engine="0",model_name="qwen3.8-27b",reason="deferred"} 0.0
vllm:kv_cache_usage_perc{engine="0",model_name="qwen3.8-27b"} 0.4567
vllm:num_preemptions_total{engine="0",model_name="qwen3.8-27b"} 1.0
vllm:prompt_tokens_total{engine="0",model_name="qwen3.8-27b"} 5.052943e+06
`, server: modelserver.VLLM, running: 2, waiting: 3, kv: 0.4567, prompt: 5052943, engines: 1},

		// SGLang with --enable-metrics-for-all-schedulers and two DP ranks
		// (label layout of sgl-project/sglang PR #7597: dp_rank,
		// engine_type, model_name, pp_rank, tp_rank). Running 12 + 9 = 21,
		// waiting 3 + 0 = 3, KV max(0.41, 0.77) = 0.77, two engines; the
		// grammar queue (num_grammar_queue_reqs) is another family.
		"SGLang dp ranks": {page: `# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{dp_rank="1",engine_type="unified",model_name="/root/.cache/modelscope/hub/models/Qwen/Qwen3-0.6B",pp_rank="0",tp_rank="0"} 12.0
sglang:num_running_reqs{dp_rank="0",engine_type="unified",model_name="/root/.cache/modelscope/hub/models/Qwen/Qwen3-0.6B",pp_rank="0",tp_rank="0"} 9.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{dp_rank="1",engine_type="unified",model_name="/root/.cache/modelscope/hub/models/Qwen/Qwen3-0.6B",pp_rank="0",tp_rank="0"} 0.41
sglang:token_usage{dp_rank="0",engine_type="unified",model_name="/root/.cache/modelscope/hub/models/Qwen/Qwen3-0.6B",pp_rank="0",tp_rank="0"} 0.77
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{dp_rank="1",engine_type="unified",model_name="/root/.cache/modelscope/hub/models/Qwen/Qwen3-0.6B",pp_rank="0",tp_rank="0"} 3.0
sglang:num_queue_reqs{dp_rank="0",engine_type="unified",model_name="/root/.cache/modelscope/hub/models/Qwen/Qwen3-0.6B",pp_rank="0",tp_rank="0"} 0.0
# HELP sglang:num_grammar_queue_reqs The number of requests in the grammar waiting queue.
# TYPE sglang:num_grammar_queue_reqs gauge
sglang:num_grammar_queue_reqs{dp_rank="1",engine_type="unified",model_name="/root/.cache/modelscope/hub/models/Qwen/Qwen3-0.6B",pp_rank="0",tp_rank="0"} 5.0
`, server: modelserver.SGLang, running: 21, waiting: 3, kv: 0.77, prompt: A, engines: 2},

		// llama.cpp's --metrics page as tools/server writes it: "# HELP
		// llamacpp:NAME", "# TYPE", then the value through a std::stringstream
		// of a double (6 significant digits: 1234567 prompt tokens print
		// as 1.23457e+06), counters first. No labels, no process_* families,
		// no KV gauge in current builds: KV ABSENT.
		"llama.cpp current build": {page: `# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1.23457e+06
# HELP llamacpp:prompt_seconds_total Prompt process time
# TYPE llamacpp:prompt_seconds_total counter
llamacpp:prompt_seconds_total 812.345
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 39080
# HELP llamacpp:n_busy_slots_per_decode Average number of busy slots per llama_decode() call
# TYPE llamacpp:n_busy_slots_per_decode counter
llamacpp:n_busy_slots_per_decode 3.87
# HELP llamacpp:prompt_tokens_seconds Average prompt throughput in tokens/s.
# TYPE llamacpp:prompt_tokens_seconds gauge
llamacpp:prompt_tokens_seconds 0
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 4
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 46
`, server: modelserver.LlamaCpp, running: 4, waiting: 46, kv: A, prompt: 1234570, engines: 1,
			check: func(t *testing.T, p *Page) {
				checkFloat(t, "generation tokens", p.GenerationTokens, 39080)
				checkFloat(t, "process start", p.ProcessStart, A)
			}},

		// The OpenMetrics exposition of prometheus_client (what vLLM
		// answers to Accept: application/openmetrics-text): a counter
		// declared without _total, its _total and _created samples, a
		// histogram's _created, a # UNIT line, an exemplar (client_golang's
		// servers, llm-d-inference-sim), # EOF. Prompt tokens 100 (the
		// _created start time is never added); TTFT p50 from the buckets:
		// rank 2 of 4 in le 0.1, 0.1 * 2/2 = 0.1.
		"OpenMetrics": {contentType: "application/openmetrics-text; version=1.0.0; charset=utf-8", page: `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
# HELP vllm:prompt_tokens Number of prefill tokens processed.
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 100.0
vllm:prompt_tokens_created{engine="0",model_name="m"} 1.7537953269352946e+09
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
# UNIT vllm:time_to_first_token_seconds seconds
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 2.0 # {trace_id="abc"} 0.05 1.7537953269e+09
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="m"} 4.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 4.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 1.2
vllm:time_to_first_token_seconds_created{engine="0",model_name="m"} 1.7537953269352946e+09
# EOF
`, server: modelserver.VLLM, running: 3, waiting: 1, kv: A, prompt: 100, engines: 1,
			check: func(t *testing.T, p *Page) {
				checkFloat(t, "TTFT p50", p.TTFT.Quantile(0.5), 0.1)
				checkFloat(t, "TTFT count", p.TTFT.Count, 4)
			}},

		// Prometheus 3's UTF-8 names (client_golang under
		// escaping=allow-utf-8, text format 1.0.0): the metric name quoted
		// inside the braces. Running 3 + 4 = 7 over two engines.
		"Prometheus 3 quoted names": {contentType: "text/plain; version=1.0.0; charset=utf-8; escaping=allow-utf-8", page: `# HELP "vllm:num_requests_running" Number of requests in model execution batches.
# TYPE "vllm:num_requests_running" gauge
{"vllm:num_requests_running",engine="0"} 3
{"vllm:num_requests_running",engine="1"} 4
{"vllm:num_requests_waiting",engine="0"} 1
`, server: modelserver.VLLM, running: 7, waiting: 1, kv: A, prompt: A, engines: 2},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := Read(strings.NewReader(tc.page), tc.contentType, "kind.prom", modelserver.Unknown)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if p.Server != tc.server {
				t.Errorf("server %v, want %v", p.Server, tc.server)
			}
			checkFloat(t, "running", p.Running, tc.running)
			checkFloat(t, "waiting", p.Waiting, tc.waiting)
			checkFloat(t, "kv", p.KV, tc.kv)
			checkFloat(t, "prompt tokens", p.PromptTokens, tc.prompt)
			if p.Engines != tc.engines {
				t.Errorf("engines %d, want %d", p.Engines, tc.engines)
			}
			if len(p.Unknown) > 0 || len(p.WrongType) > 0 {
				t.Errorf("unknown %v, wrong types %v; want none", p.Unknown, p.WrongType)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// TestContentTypeErrorNamesNoLine: a Content-Type infscale does not read
// (python's http.server serves a .prom file as application/octet-stream) is
// the HTTP header's fault, not line 1's: the error names the source alone,
// what is allowed, and that Prometheus 3 refuses it too.
func TestContentTypeErrorNamesNoLine(t *testing.T) {
	page := "vllm:num_requests_running 2\nvllm:num_requests_waiting 10\n"
	for ct, want := range map[string]string{
		"application/octet-stream":                    `http://h/m: invalid metrics page: unsupported Content-Type "application/octet-stream" (allowed: text/plain, application/openmetrics-text; Prometheus 3 refuses it too, unless its scrape config sets fallback_scrape_protocol)`,
		"application/openmetrics-text; version=2.0.0": `http://h/m: invalid metrics page: unsupported OpenMetrics version "2.0.0"`,
		"text/plain; ==":                              `http://h/m: invalid metrics page: cannot parse Content-Type "text/plain; =="`,
	} {
		_, err := Read(strings.NewReader(page), ct, "http://h/m", modelserver.Unknown)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Content-Type %q: %v\nwant the prefix %q", ct, err, want)
		}
	}
	// A body's own fault still names its line.
	if _, err := Read(strings.NewReader("\n<html></html>\n"), "text/plain", "http://h/m", modelserver.Unknown); err == nil || !strings.HasPrefix(err.Error(), "http://h/m:2: invalid metrics page: body is HTML/XML") {
		t.Errorf("HTML body: %v, want it at line 2", err)
	}
}
