package promql

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"

	"github.com/infscale/infscale/pkg/modelserver"
)

// engineAPI answers queries with Prometheus's own PromQL engine over series
// loaded in promqltest's series syntax (one sample per 15 s from time 0):
// the query shapes are evaluated exactly as a server would, without
// starting one. It counts queries.
type engineAPI struct {
	mu      sync.Mutex
	engine  *promql.Engine
	storage storage.Queryable
	queries int
}

func newEngineAPI(t *testing.T, load string) *engineAPI {
	t.Helper()
	ng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	t.Cleanup(func() { _ = ng.Close() })
	return &engineAPI{engine: ng, storage: loadSeries(t, 15*time.Second, load)}
}

func (e *engineAPI) Instant(ctx context.Context, q string, ts time.Time) (model.Vector, []string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queries++
	qry, err := e.engine.NewInstantQuery(ctx, e.storage, nil, q, ts)
	if err != nil {
		return nil, nil, &QueryError{Reason: ReasonBadData, Query: q, Err: err}
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		return nil, nil, &QueryError{Reason: ReasonBadData, Query: q, Err: res.Err}
	}
	warn, _ := res.Warnings.AsStrings(q, 10, 10)
	var out model.Vector
	switch v := res.Value.(type) {
	case promql.Vector:
		for _, s := range v {
			m := model.Metric{}
			s.Metric.Range(func(l labels.Label) { m[model.LabelName(l.Name)] = model.LabelValue(l.Value) })
			out = append(out, &model.Sample{Metric: m, Value: model.SampleValue(s.F), Timestamp: model.Time(s.T)})
		}
	case promql.Scalar:
		out = model.Vector{{Metric: model.Metric{}, Value: model.SampleValue(v.V), Timestamp: model.Time(v.T)}}
	}
	return out, warn, nil
}

func (e *engineAPI) Range(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, []string, error) {
	panic("not used")
}

// at is 10 minutes after promqltest's load start (time 0).
var at = time.Unix(600, 0)

func sel(t *testing.T, s string) Target {
	t.Helper()
	ms, err := ParseSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return Target{Name: s, Server: modelserver.VLLM, Selector: ms}
}

func evalOne(t *testing.T, api API, tg Target, opts Options) Result {
	t.Helper()
	ev := &Evaluator{API: api, Options: opts}
	res, _ := ev.Evaluate(context.Background(), []Target{tg}, at)
	return res[0]
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Case 06 (one pod, data parallel 2) plus a second one-engine pod, each
// scraped by both members of an HA pair without dedup (replica="A"/"B").
// By hand: running = (7+3) + 5 = 15; waiting = (4+0) + 1 = 5;
// kv = mean(max(0.91, 0.35), 0.5) = (0.91+0.5)/2 = 0.705; reporting 2.
// Doubling by the HA pair would give 30 / 10; summing engines' KV 1.26.
func TestEngineEnginesAndHADuplicates(t *testing.T) {
	api := newEngineAPI(t, `
  vllm:num_requests_running{namespace="llm",pod="chat-1",engine="0",replica="A"} 7x40
  vllm:num_requests_running{namespace="llm",pod="chat-1",engine="1",replica="A"} 3x40
  vllm:num_requests_running{namespace="llm",pod="chat-2",engine="0",replica="A"} 5x40
  vllm:num_requests_running{namespace="llm",pod="chat-1",engine="0",replica="B"} 7x40
  vllm:num_requests_running{namespace="llm",pod="chat-1",engine="1",replica="B"} 3x40
  vllm:num_requests_running{namespace="llm",pod="chat-2",engine="0",replica="B"} 5x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-1",engine="0",replica="A"} 4x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-1",engine="1",replica="A"} 0x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-2",engine="0",replica="A"} 1x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-1",engine="0",replica="B"} 4x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-1",engine="1",replica="B"} 0x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-2",engine="0",replica="B"} 1x40
  vllm:kv_cache_usage_perc{namespace="llm",pod="chat-1",engine="0",replica="A"} 0.91x40
  vllm:kv_cache_usage_perc{namespace="llm",pod="chat-1",engine="1",replica="A"} 0.35x40
  vllm:kv_cache_usage_perc{namespace="llm",pod="chat-2",engine="0",replica="A"} 0.5x40
  vllm:kv_cache_usage_perc{namespace="llm",pod="chat-1",engine="0",replica="B"} 0.91x40
  vllm:kv_cache_usage_perc{namespace="llm",pod="chat-2",engine="0",replica="B"} 0.5x40
  vllm:num_requests_running{namespace="other",pod="chat-9",engine="0"} 100x40
  up{namespace="llm",pod="chat-1",replica="A"} 1x40
  up{namespace="llm",pod="chat-2",replica="A"} 1x40
  up{namespace="llm",pod="chat-1",replica="B"} 1x40
  up{namespace="llm",pod="chat-2",replica="B"} 1x40
`)
	r := evalOne(t, api, sel(t, `{namespace="llm", pod=~"chat-.*"}`), Options{})
	o := r.Values
	if !near(o[Running], 15) || !near(o[Waiting], 5) || !near(o[KV], 0.705) || o[Reporting] != 2 || o[Current] != 2 {
		t.Fatalf("got running %v waiting %v kv %v reporting %v current %v; want 15 5 0.705 2 2 (errors %v)",
			o[Running], o[Waiting], o[KV], o[Reporting], o[Current], r.Errors)
	}
	if len(r.Errors) != 0 {
		t.Fatalf("errors: %v", r.Errors)
	}
	// The trap the shape avoids: without collapsing the replica label the
	// pair doubles every sum (15 -> 30, 5 -> 10).
	naive := evalOne(t, api, sel(t, `{namespace="llm", pod=~"chat-.*"}`), Options{ReplicaLabels: []string{}}).Values
	if !near(naive[Running], 30) || !near(naive[Waiting], 10) {
		t.Fatalf("without dedup: running %v waiting %v, want the doubled 30 and 10", naive[Running], naive[Waiting])
	}
}

// Case 13: a rollout replaced pods ccccc/ddddd at 5m; their last samples
// (11 and 9) are still inside the 5-minute lookback at 6m because no
// staleness marker was written for them, while their up series was marked
// stale. By hand: live running = 12 + 10 = 22 over 2 pods (not 42 over 4).
// With LiveStaleness (no join) the trap shows: 42 over 4. With LiveReady
// the kube-state-metrics series decide: 22 over 2.
func TestEngineStaleSeriesCase13(t *testing.T) {
	api := newEngineAPI(t, `
  vllm:num_requests_running{pod="vllm-7d9f-aaaaa",model_name="m"} 12x40
  vllm:num_requests_running{pod="vllm-7d9f-bbbbb",model_name="m"} 10x40
  vllm:num_requests_running{pod="vllm-5c2e-ccccc",model_name="m"} 11x20
  vllm:num_requests_running{pod="vllm-5c2e-ddddd",model_name="m"} 9x20
  up{pod="vllm-7d9f-aaaaa"} 1x40
  up{pod="vllm-7d9f-bbbbb"} 1x40
  up{pod="vllm-5c2e-ccccc"} 1x20 stale
  up{pod="vllm-5c2e-ddddd"} 1x20 stale
  kube_pod_status_ready{pod="vllm-7d9f-aaaaa",condition="true"} 1x40
  kube_pod_status_ready{pod="vllm-7d9f-bbbbb",condition="true"} 1x40
  kube_pod_status_ready{pod="vllm-5c2e-ccccc",condition="true"} 1x20 stale
  kube_pod_status_ready{pod="vllm-5c2e-ddddd",condition="true"} 1x20 stale
  kube_pod_status_ready{pod="vllm-7d9f-eeeee",condition="true"} 0x40
  kube_pod_status_ready{pod="vllm-7d9f-eeeee",condition="false"} 1x40
`)
	tg := sel(t, `{model_name="m"}`)
	at := time.Unix(360, 0) // 6m: one minute after the old pods stopped
	// A third new pod, eeeee, is still loading weights: kube-state-metrics
	// reports it not Ready and it exports nothing yet. Only LiveReady sees
	// it: Unready 1, Current (no replicas query) 2 + 1 = 3. Unready is
	// not asked for without LiveReady: NaN.
	nan := math.NaN()
	for _, tc := range []struct {
		live                                 Liveness
		running, reporting, unready, current float64
	}{
		{LiveUp, 22, 2, nan, 2},
		{LiveReady, 22, 2, 1, 3},
		{LiveStaleness, 42, 4, nan, 4},
	} {
		ev := &Evaluator{API: api, Options: Options{Liveness: tc.live}}
		res, _ := ev.Evaluate(context.Background(), []Target{tg}, at)
		o := res[0].Values
		if !near(o[Running], tc.running) || o[Reporting] != tc.reporting || o[Current] != tc.current ||
			!(o[Unready] == tc.unready || math.IsNaN(o[Unready]) && math.IsNaN(tc.unready)) {
			t.Errorf("%s: running %v over %v pods, unready %v, current %v; want %v over %v, %v, %v (errors %v)",
				tc.live, o[Running], o[Reporting], o[Unready], o[Current], tc.running, tc.reporting, tc.unready, tc.current, res[0].Errors)
		}
	}
}

// Case 08: three pods on three vLLM versions, each at 42% KV: 0.6 exports
// only gpu_cache_usage_perc, 0.9 both names, 0.12 only kv_cache_usage_perc.
// By hand: kv = mean(0.42, 0.42, 0.42) = 0.42; adding both names on the 0.9
// pod would give (0.42+0.84+0.42)/3 = 0.56.
func TestEngineKVRenameCase08(t *testing.T) {
	api := newEngineAPI(t, `
  vllm:gpu_cache_usage_perc{pod="v06",model_name="m"} 0.42x40
  vllm:gpu_cache_usage_perc{pod="v09",engine="0",model_name="m"} 0.42x40
  vllm:kv_cache_usage_perc{pod="v09",engine="0",model_name="m"} 0.42x40
  vllm:kv_cache_usage_perc{pod="v12",engine="0",model_name="m"} 0.42x40
  up{pod="v06"} 1x40
  up{pod="v09"} 1x40
  up{pod="v12"} 1x40
`)
	r := evalOne(t, api, sel(t, `{model_name="m"}`), Options{})
	if !near(r.Values[KV], 0.42) {
		t.Fatalf("kv %v, want 0.42", r.Values[KV])
	}
}

// TTFT p95 from buckets of two pods, every series duplicated by an HA pair.
// Per 15 s step the buckets grow by: pod a (0.5: 2, 1: 4, 2: 5, +Inf: 5),
// pod b (0.5: 3, 1: 5, 2: 5, +Inf: 5); summed 5, 9, 10, 10. By hand: rank
// 0.95*10 = 9.5 lies in (1, 2] between cumulative 9 and 10, so
// p95 = 1 + (2-1) * (9.5-9)/(10-9) = 1.5 s. Doubling every bucket (HA)
// leaves it at 1.5. After the counters stop growing, no request finished in
// the window: NaN, reported as ReasonNaN, never 0.
func TestEngineTTFT(t *testing.T) {
	load := ""
	for _, rep := range []string{"A", "B"} {
		for pod, incs := range map[string][4]int{"a": {2, 4, 5, 5}, "b": {3, 5, 5, 5}} {
			for i, le := range []string{"0.5", "1", "2", "+Inf"} {
				load += "  vllm:time_to_first_token_seconds_bucket{pod=\"" + pod + "\",le=\"" + le + "\",replica=\"" + rep + "\"} 0+" +
					itoa(incs[i]) + "x40 " + itoa(incs[i]*40) + "x40\n"
			}
		}
	}
	api := newEngineAPI(t, load)
	tg := sel(t, `{pod=~"a|b"}`)
	tg.TTFTQuantile, tg.TTFTWindow = 0.95, 3*time.Minute
	r := evalOne(t, api, tg, Options{})
	if !near(r.Values[TTFT], 1.5) {
		t.Fatalf("ttft %v, want 1.5 (errors %v)", r.Values[TTFT], r.Errors)
	}
	ev := &Evaluator{API: api}
	res, _ := ev.Evaluate(context.Background(), []Target{tg}, time.Unix(1200, 0)) // 10 min after the last increase
	if !math.IsNaN(res[0].Values[TTFT]) || ReasonOf(res[0].Errors[TTFT]) != ReasonNaN {
		t.Fatalf("idle window: ttft %v err %v, want NaN with reason nan", res[0].Values[TTFT], res[0].Errors[TTFT])
	}
}

// CPU: both sides aggregated by pod before dividing (case 16: a division of
// series with different label sets matches nothing). Pod a's CPU counter
// grows 3 s per 15 s = 0.2 cores, pod b's 9 s per 15 s = 0.6 cores; each
// requests 4 cores (two containers: 3.5 + 0.5). By hand: 0.2/4 = 5 %,
// 0.6/4 = 15 %, mean 10 %.
func TestEngineCPUCase16Shape(t *testing.T) {
	api := newEngineAPI(t, `
  process_cpu_seconds_total{pod="a",job="vllm",instance="10.0.0.1:8000"} 0+3x40
  process_cpu_seconds_total{pod="b",job="vllm",instance="10.0.0.2:8000"} 0+9x40
  kube_pod_container_resource_requests{pod="a",container="vllm",node="n1",resource="cpu",unit="core"} 3.5x40
  kube_pod_container_resource_requests{pod="a",container="sidecar",node="n1",resource="cpu",unit="core"} 0.5x40
  kube_pod_container_resource_requests{pod="b",container="vllm",node="n2",resource="cpu",unit="core"} 3.5x40
  kube_pod_container_resource_requests{pod="b",container="sidecar",node="n2",resource="cpu",unit="core"} 0.5x40
  up{pod="a"} 1x40
  up{pod="b"} 1x40
`)
	tg := sel(t, `{pod=~"a|b"}`)
	tg.CPU = true
	r := evalOne(t, api, tg, Options{})
	if !near(r.Values[CPU], 10) {
		t.Fatalf("cpu %v, want 10 (errors %v)", r.Values[CPU], r.Errors)
	}
}

func itoa(i int) string { return model.SampleValue(i).String() }

// Evaluate caches its plan by content: the same Evaluator with a changed
// selector reads the new pods (pod a runs 1, pod b runs 2).
func TestEvaluatePlanCacheFollowsTargets(t *testing.T) {
	api := newEngineAPI(t, `
  vllm:num_requests_running{pod="a"} 1x40
  vllm:num_requests_running{pod="b"} 2x40
  up{pod="a"} 1x40
  up{pod="b"} 1x40
`)
	ev := &Evaluator{API: api}
	for _, tc := range []struct {
		sel  string
		want float64
	}{{`{pod="a"}`, 1}, {`{pod="a"}`, 1}, {`{pod="b"}`, 2}, {`{pod=~"a|b"}`, 3}} {
		res, _ := ev.Evaluate(context.Background(), []Target{sel(t, tc.sel)}, at)
		if got := res[0].Values[Running]; got != tc.want {
			t.Errorf("%s: running %v, want %v", tc.sel, got, tc.want)
		}
	}
}

// SGLang under its two spellings: pod a exports colon names, pod b comes
// through the SMG gateway with underscore names (docs/design.md page 08), pod c is
// the 2024 pre-release (num_requests_running). By hand: running 3 + 4 + 5 =
// 12, waiting 1 + 0 + 2 = 3, kv mean(0.2, 0.6) = 0.4 (pod c has no
// token_usage), reporting 3.
func TestEngineSGLangSpellings(t *testing.T) {
	api := newEngineAPI(t, `
  sglang:num_running_reqs{pod="a",tp_rank="0"} 3x40
  sglang_num_running_reqs{pod="b",worker_addr="grpc://127.0.0.1:8001"} 4x40
  sglang:num_requests_running{pod="c",name="m"} 5x40
  sglang:num_queue_reqs{pod="a",tp_rank="0"} 1x40
  sglang_num_queue_reqs{pod="b",worker_addr="grpc://127.0.0.1:8001"} 0x40
  sglang:num_requests_waiting{pod="c",name="m"} 2x40
  sglang:token_usage{pod="a",tp_rank="0"} 0.2x40
  sglang_token_usage{pod="b",worker_addr="grpc://127.0.0.1:8001"} 0.6x40
  up{pod="a"} 1x40
  up{pod="b"} 1x40
  up{pod="c"} 1x40
`)
	tg := sel(t, `{pod=~"a|b|c"}`)
	tg.Server = modelserver.SGLang
	r := evalOne(t, api, tg, Options{})
	o := r.Values
	if !near(o[Running], 12) || !near(o[Waiting], 3) || !near(o[KV], 0.4) || o[Reporting] != 3 {
		t.Fatalf("running %v waiting %v kv %v reporting %v (errors %v); want 12 3 0.4 3", o[Running], o[Waiting], o[KV], o[Reporting], r.Errors)
	}
}

// llama.cpp: no KV family on a current build's page, so KV is unknown
// (empty), never 0. Triton: a pod of another backend has no running series
// (empty, not 0) and reports by its pending count; a pod of the
// TensorRT-LLM backend reads running and waiting from the request_type
// series of one family and KV from kv_cache_block_type="fraction". By
// hand, pods t (pending 4) and u (active 6, waiting 2, fraction 0.25; its
// max 64 and used 120 are not load): running 6, waiting 4 + 2 = 6, KV
// 0.25 (u alone reports it), reporting 2.
func TestEngineMissingFamilies(t *testing.T) {
	api := newEngineAPI(t, `
  llamacpp:requests_processing{pod="a"} 2x40
  llamacpp:requests_deferred{pod="a"} 1x40
  nv_inference_pending_request_count{pod="t",model="m",version="1"} 4x40
  nv_trt_llm_request_metrics{pod="u",model="tensorrt_llm",request_type="active",version="1"} 6x40
  nv_trt_llm_request_metrics{pod="u",model="tensorrt_llm",request_type="waiting",version="1"} 2x40
  nv_trt_llm_request_metrics{pod="u",model="tensorrt_llm",request_type="max",version="1"} 64x40
  nv_trt_llm_kv_cache_block_metrics{pod="u",model="tensorrt_llm",kv_cache_block_type="fraction",version="1"} 0.25x40
  nv_trt_llm_kv_cache_block_metrics{pod="u",model="tensorrt_llm",kv_cache_block_type="used",version="1"} 120x40
  up{pod="a"} 1x40
  up{pod="t"} 1x40
  up{pod="u"} 1x40
`)
	tg := sel(t, `{pod="a"}`)
	tg.Server = modelserver.LlamaCpp
	r := evalOne(t, api, tg, Options{})
	if r.Values[Running] != 2 || r.Values[Waiting] != 1 || !math.IsNaN(r.Values[KV]) || ReasonOf(r.Errors[KV]) != ReasonEmpty {
		t.Fatalf("llama.cpp: %+v %v", r.Values, r.Errors)
	}
	tg = sel(t, `{pod="t"}`)
	tg.Server = modelserver.Triton
	r = evalOne(t, api, tg, Options{})
	if r.Values[Waiting] != 4 || !math.IsNaN(r.Values[Running]) || ReasonOf(r.Errors[Running]) != ReasonEmpty || r.Values[Reporting] != 1 {
		t.Fatalf("triton: %+v %v", r.Values, r.Errors)
	}
	tg = sel(t, `{pod=~"t|u"}`)
	tg.Server = modelserver.Triton
	r = evalOne(t, api, tg, Options{})
	if o := r.Values; o[Running] != 6 || o[Waiting] != 6 || !near(o[KV], 0.25) || o[Reporting] != 2 {
		t.Fatalf("triton with the TensorRT-LLM backend: running %v waiting %v kv %v reporting %v (errors %v), want 6 6 0.25 2", o[Running], o[Waiting], o[KV], o[Reporting], r.Errors)
	}
}

// Issue 13 item 5: two scrape jobs on one pod. Each series of chat-1 is
// there twice, differing in job and instance (no HA replica label): the
// dedup keyed on the pod and engine folds them, so waiting is 5 (chat-1's
// 4 + chat-2's 1), not 9, and running 8 (3 + 5), not 11; the Duplicated
// signal says how many series were folded: chat-1's one running series
// had a copy, so 1.
func TestEngineTwoScrapeJobsOnOnePod(t *testing.T) {
	api := newEngineAPI(t, `
  vllm:num_requests_running{namespace="llm",pod="chat-1",engine="0",job="vllm",instance="10.0.0.1:8000"} 3x40
  vllm:num_requests_running{namespace="llm",pod="chat-1",engine="0",job="vllm-podmonitor",instance="10.0.0.1:8000"} 3x40
  vllm:num_requests_running{namespace="llm",pod="chat-2",engine="0",job="vllm",instance="10.0.0.2:8000"} 5x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-1",engine="0",job="vllm",instance="10.0.0.1:8000"} 4x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-1",engine="0",job="vllm-podmonitor",instance="10.0.0.1:8000"} 4x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-2",engine="0",job="vllm",instance="10.0.0.2:8000"} 1x40
  up{namespace="llm",pod="chat-1",job="vllm"} 1x40
  up{namespace="llm",pod="chat-1",job="vllm-podmonitor"} 1x40
  up{namespace="llm",pod="chat-2",job="vllm"} 1x40
`)
	tg := sel(t, `{namespace="llm", pod=~"chat-.*"}`)
	tg.Duplicates = true
	r := evalOne(t, api, tg, Options{})
	o := r.Values
	if !near(o[Running], 8) || !near(o[Waiting], 5) || o[Reporting] != 2 {
		t.Fatalf("running %v waiting %v reporting %v, want 8 5 2 (errors %v)", o[Running], o[Waiting], o[Reporting], r.Errors)
	}
	if r.Duplicated != 1 {
		t.Errorf("duplicated %v, want 1", r.Duplicated)
	}
}
