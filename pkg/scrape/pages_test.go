package scrape

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
)

// pageWant is what shared/testdata/LOG.md says a correct reader derives from
// one page of metrics/ ("Derive:" lines); A means ABSENT.
type pageWant struct {
	server                    modelserver.Server
	running, waiting, kv      float64
	cpu, prompt, gen, success float64
	engines                   int
	check                     func(t *testing.T, p *Page)
}

var pageWants = map[string]pageWant{
	// idle V0 replica; kv from gpu_cache_usage_perc; cache_config_info (value
	// 1) is not load and has no model_name: the only model is "qwenvl".
	"01-vllm-v0-0.6-qwenvl-cache-config.prom": {server: modelserver.VLLM, running: 0, waiting: 0, kv: 0, cpu: A, prompt: A, gen: A, success: A, engines: 1,
		check: func(t *testing.T, p *Page) {
			wantModels(t, p, "qwenvl")
			if p.Chosen.KV != "vllm:gpu_cache_usage_perc" {
				t.Errorf("kv read from %q, want vllm:gpu_cache_usage_perc", p.Chosen.KV)
			}
		}},
	// cpu_seconds=439.71999999999997 exactly as written; no engine label.
	"02-vllm-0.7-v1-gpu_cache_usage-process-cpu.prom": {server: modelserver.VLLM, running: 0, waiting: 0, kv: 0, cpu: 439.71999999999997, prompt: A, gen: A, success: A, engines: 1},
	// kv 9.75010481363281e-06 (not 9.75); running/waiting ABSENT; _created
	// gauges are their own families, never counters.
	"03-vllm-0.10.0-created-series-engine-label.prom": {server: modelserver.VLLM, running: A, waiting: A, kv: 9.75010481363281e-06, cpu: A, prompt: A, gen: A, success: A, engines: 1,
		check: func(t *testing.T, p *Page) {
			if got := p.Samples("vllm:prefix_cache_queries_total"); len(got) != 1 || got[0].Value != 32 {
				t.Errorf("prefix_cache_queries_total = %v, want one sample 32", got)
			}
			if !slices.Contains(p.Families, "vllm:gpu_prefix_cache_queries_created") {
				t.Errorf("families %v lack the _created gauge family", p.Families)
			}
		}},
	// running = 0 + 0 over engines 0 and 1; two engines, not "newest wins".
	"04-vllm-v1-dp2-engine-label-deepseek.prom": {server: modelserver.VLLM, running: 0, waiting: A, kv: A, cpu: A, prompt: A, gen: A, success: A, engines: 2},
	// running 0, waiting ABSENT in the excerpt, kv (token_usage) 0;
	// sglang:num_requests_total 217 is the request counter.
	"06-sglang-0.4.9-engine_type-label-mismatch.prom": {server: modelserver.SGLang, running: 0, waiting: A, kv: 0, cpu: A, prompt: A, gen: A, success: 217, engines: 1},
	// gateway underscore names: SGLang by prefix, no running/waiting/kv in the
	// excerpt; cache_hit_rate = 0 read as written.
	"08-sglang-via-smg-gateway-underscore-names.prom": {server: modelserver.SGLang, running: A, waiting: A, kv: A, cpu: A, prompt: A, gen: A, success: A, engines: 0,
		check: func(t *testing.T, p *Page) {
			if got := p.SumBy("sglang_cache_hit_rate", "worker_addr"); got["grpc://127.0.0.1:8001"] != 0 || len(got) != 1 {
				t.Errorf("sglang_cache_hit_rate by worker_addr = %v, want {grpc://127.0.0.1:8001: 0}", got)
			}
		}},
	// no pending-count family: waiting ABSENT (unknown, not 0); success
	// 101 (gnn) + 101 (embed) + 101 (filter) = 303 over 7 models.
	"09-triton-2x-no-pending-count.prom": {server: modelserver.Triton, running: A, waiting: A, kv: A, cpu: A, prompt: A, gen: A, success: 303, engines: 0,
		check: func(t *testing.T, p *Page) {
			// 7 declared families have no samples (nv_cache_num_entries …).
			for _, f := range []string{"nv_cache_num_entries", "nv_cache_util"} {
				if !slices.Contains(p.Declared, f) || slices.Contains(p.Families, f) {
					t.Errorf("%s should be declared without samples", f)
				}
			}
		}},
	// success 2, failures 0+0+0+0 over reasons; waiting ABSENT.
	"10-triton-2.5x-reason-label.prom": {server: modelserver.Triton, running: A, waiting: A, kv: A, cpu: A, prompt: A, gen: A, success: 2, engines: 0,
		check: func(t *testing.T, p *Page) {
			if got := p.SumBy("nv_inference_request_failure", "model"); len(got) != 1 || got["resnet_50"] != 0 {
				t.Errorf("failures = %v, want resnet_50: 0", got)
			}
		}},
	// requests_processing 0 = running, requests_deferred 0 = waiting; no KV.
	"11-llamacpp-b4600-requests-processing-deferred.prom": {server: modelserver.LlamaCpp, running: 0, waiting: 0, kv: A, cpu: A, prompt: A, gen: A, success: A, engines: 1},
	// tgi_queue_size 0 = waiting, tgi_batch_current_size 0 = running; the
	// method label round-trips as the literal {'method': 'prefill'}.
	"12-vllm-tgis-adapter-tgi-names-quoted-label.prom": {server: modelserver.TGI, running: 0, waiting: 0, kv: A, cpu: A, prompt: A, gen: A, success: A, engines: 1,
		check: func(t *testing.T, p *Page) {
			got := p.SumBy("tgi_batch_inference_duration_bucket", "method")
			if _, ok := got["{'method': 'prefill'}"]; !ok || len(got) != 1 {
				t.Errorf("method label values = %v, want only {'method': 'prefill'}", got)
			}
		}},
	// lora_requests_info values are timestamps: latest = max value
	// 1.7395575723949368e+09 (running test-lora, waiting none); no load.
	"14-vllm-0.7-lora_requests_info-timestamp-values.prom": {server: modelserver.VLLM, running: A, waiting: A, kv: A, cpu: A, prompt: A, gen: A, success: A, engines: 0,
		check: func(t *testing.T, p *Page) { wantLoRA(t, p, []string{"test-lora"}, nil, 1.7395575723949368e+09) }},
	// pytrtllm: running 1, waiting 0, prompt 201121, generation 81896; the
	// success counter was cut, so requests fall back to completed 707.
	"15-trtllm-serve-pytrtllm-prefix.prom": {server: modelserver.TRTLLM, running: 1, waiting: 0, kv: A, cpu: A, prompt: 201121, gen: 81896, success: 707, engines: 1},
	// old names num_requests_running/num_requests_waiting 0, token_usage 0.
	"16-sglang-wip-2024-09-old-names-name-label.prom": {server: modelserver.SGLang, running: 0, waiting: 0, kv: 0, cpu: A, prompt: A, gen: A, success: A, engines: 1,
		check: func(t *testing.T, p *Page) { wantModels(t, p, "google/gemma-2-9b-it") }},
	// capacity gauges only (max_running_requests 2231 is not load);
	// prompt_tokens_total 230794; running/waiting ABSENT.
	"17-sglang-0.3.5-name-label-model-path.prom": {server: modelserver.SGLang, running: A, waiting: A, kv: A, cpu: A, prompt: 230794, gen: A, success: A, engines: 0,
		check: func(t *testing.T, p *Page) { checkFloat(t, "max running (capacity)", p.MaxRunning, 2231) }},
	// simulator: running 0, waiting 0, no KV; counter without _total kept as
	// its own family (8).
	"18-llm-d-inference-sim-counter-without-total.prom": {server: modelserver.VLLM, running: 0, waiting: 0, kv: A, cpu: A, prompt: A, gen: A, success: A, engines: 1,
		check: func(t *testing.T, p *Page) {
			if got := p.Samples("vllm:prefix_cache_hits"); len(got) != 1 || got[0].Value != 8 {
				t.Errorf("vllm:prefix_cache_hits = %v, want 8", got)
			}
			// The excerpt starts mid-histogram, its TYPE line cut: untyped
			// samples are families of their own names.
			if !slices.Contains(p.Families, "vllm:max_num_generation_tokens_bucket") {
				t.Errorf("families %v: histogram samples before their TYPE count under their own names", p.Families)
			}
		}},
	// HELP/TYPE only: everything ABSENT, no error, 0 families with samples.
	"19-vllm-v0-0.5.4-families-without-samples.prom": {server: modelserver.VLLM, running: A, waiting: A, kv: A, cpu: A, prompt: A, gen: A, success: A, engines: 0,
		check: func(t *testing.T, p *Page) {
			if len(p.Families) != 0 || len(p.Declared) != 7 || p.Reporting() {
				t.Errorf("families %v declared %v reporting %v, want 0, 7, false", p.Families, p.Declared, p.Reporting())
			}
		}},
}

func wantModels(t *testing.T, p *Page, models ...string) {
	t.Helper()
	if !slices.Equal(p.Models, models) {
		t.Errorf("models = %q, want %q", p.Models, models)
	}
}

func wantLoRA(t *testing.T, p *Page, running, waiting []string, since float64) {
	t.Helper()
	if p.LoRA == nil {
		t.Fatalf("LoRA = nil, want running %v", running)
	}
	if !slices.Equal(p.LoRA.Running, running) || !slices.Equal(p.LoRA.Waiting, waiting) || p.LoRA.Since != since {
		t.Errorf("LoRA = %+v, want running %v waiting %v since %v", *p.LoRA, running, waiting, since)
	}
}

func checkPage(t *testing.T, p *Page, w pageWant) {
	t.Helper()
	if p.Server != w.server {
		t.Errorf("server = %v, want %v", p.Server, w.server)
	}
	checkFloat(t, "running", p.Running, w.running)
	checkFloat(t, "waiting", p.Waiting, w.waiting)
	checkFloat(t, "kv", p.KV, w.kv)
	checkFloat(t, "cpu_seconds", p.CPUSeconds, w.cpu)
	checkFloat(t, "prompt_tokens", p.PromptTokens, w.prompt)
	checkFloat(t, "generation_tokens", p.GenerationTokens, w.gen)
	checkFloat(t, "requests", p.Requests, w.success)
	if p.Engines != w.engines {
		t.Errorf("engines = %d, want %d", p.Engines, w.engines)
	}
	if p.Suspect != "" {
		t.Errorf("suspect = %q, want none", p.Suspect)
	}
	if w.check != nil {
		w.check(t, p)
	}
}

// TestMetricsPages reads every page of shared/testdata/metrics with
// auto-detection and checks the derivations of the data's LOG.md.
func TestMetricsPages(t *testing.T) {
	dir := sharedDir(t, "metrics")
	files, err := filepath.Glob(filepath.Join(dir, "*.prom"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			w, ok := pageWants[name]
			if !ok {
				t.Fatalf("page %s has no expectation: add one from the data's LOG.md", name)
			}
			p, err := readFile(t, path, modelserver.Unknown)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			checkPage(t, p, w)
		})
	}
	for name := range pageWants {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("expected page %s missing: %v", name, err)
		}
	}
}

// TestMetricsPagesForcedServer: giving the server that auto-detection finds
// yields the same page.
func TestMetricsPagesForcedServer(t *testing.T) {
	dir := sharedDir(t, "metrics")
	for name, w := range pageWants {
		p, err := readFile(t, filepath.Join(dir, name), w.server)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Run(name, func(t *testing.T) { checkPage(t, p, w) })
	}
}
