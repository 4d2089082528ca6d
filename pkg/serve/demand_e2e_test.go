package serve

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/fleet"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/scrape"
)

// demandPage is a vLLM page whose counters grow linearly with wall time
// from large bases (so that rate()'s extrapolation never meets zero): per
// second 1.5 requests finish with "stop" and 0.5 with "length" (2 req/s),
// 400 prompt and 200 generation tokens; queue-time buckets le=0.1 +1/s,
// le=0.5 +2/s, +Inf +2/s; ITL buckets le=0.01 +50/s, le=0.05 +150/s, +Inf
// +200/s; the prefix cache looked up 400 prompt tokens/s and found 300.
func demandPage(t0 time.Time) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		s := time.Since(t0).Seconds()
		c := func(base, perSec float64) float64 { return base + perSec*s }
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, demandText(1, c(15000, 1.5), c(5000, 0.5), c(4e6, 400), c(2e6, 200),
			[3]float64{c(10000, 1), c(20000, 2), c(20000, 2)}, [3]float64{c(5e5, 50), c(15e5, 150), c(2e6, 200)}))
		fmt.Fprintf(w, "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{engine=\"0\"} %g\n"+
			"# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{engine=\"0\"} %g\n", c(4e6, 400), c(3e6, 300))
	}
}

// freshPage is a vLLM server before its first finished request: the
// counter and histogram families are declared without samples (case C09
// of the field cases), as vLLM's labelled families are.
const freshPage = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running 0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting 0
# TYPE vllm:request_success_total counter
# TYPE vllm:prompt_tokens_total counter
# TYPE vllm:generation_tokens_total counter
# TYPE vllm:request_queue_time_seconds histogram
# TYPE vllm:inter_token_latency_seconds histogram
`

// TestDemandSignalsPrometheus reads the demand signals through a real
// Prometheus scraping two static vLLM pages (demandPage, freshPage) every
// second, with a 10 s rate window. Worked by hand from the pages:
//
//   - arrival rate 1.5 + 0.5 = 2 req/s (both finished_reason series count);
//     prompt 400 tokens/s, generation 200 tokens/s;
//   - mean prompt 400/2 = 200 tokens, mean output 200/2 = 100 tokens;
//   - queue time p90: per second 2 requests, rank 0.9 x 2 = 1.8, past the
//     le=0.1 bucket's 1: 0.1 + (0.5-0.1) x (1.8-1)/(2-1) = 0.42 s;
//   - ITL median: rank 0.5 x 200 = 100, past le=0.01's 50: 0.01 +
//     (0.05-0.01) x (100-50)/(150-50) = 0.03 s;
//   - prefix-cache hit fraction 300/400 = 0.75;
//   - the fresh server: every demand signal absent (NaN), never 0, and
//     no hit fraction (its page has no prefix-cache counters).
//
// Then serve's loop runs on the same source and its /metrics must carry
// those values as the eight demand gauges for busy, none for fresh, and a
// demand recommendation for busy only. The pages follow wall time,
// Prometheus stamps a scrape when it starts: a few milliseconds of skew
// over a 10 s window, hence 1% tolerance.
func TestDemandSignalsPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	busy := httptest.NewServer(demandPage(time.Now()))
	defer busy.Close()
	fresh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, freshPage)
	}))
	defer fresh.Close()
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second, Targets: []promtest.Target{
		{URL: busy.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "busy-0"}},
		{URL: fresh.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "fresh-0"}},
	}})
	cfg, err := config.Parse([]byte(fmt.Sprintf(`prometheus: {url: %s}
interval: 1s
listen: 127.0.0.1:0
targets:
- name: busy
  server: vllm
  selector: '{namespace="llm", pod="busy-0"}'
  metrics: [{type: demand, target: 0.8}, {type: queuewait, target: 1s, quantile: 0.9, window: 1m}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  max: 8
- name: fresh
  server: vllm
  selector: '{namespace="llm", pod="fresh-0"}'
  metrics: [{type: demand, target: 0.8}, {type: queuewait, target: 1s}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  max: 8
`, prom.URL)), "demand.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewPrometheusSource(cfg.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	src.Evaluator.Options.DemandWindow = 10 * time.Second
	// The 10 s window full of 1 s scrapes: at least 12 s of samples.
	prom.WaitFor(t, `count_over_time(vllm:prompt_tokens_total{pod="busy-0"}[30s])`, 60*time.Second,
		func(v model.Vector) bool { return len(v) == 1 && v[0].Value >= 13 })
	rd := src.Read(t.Context(), []*config.Target{&cfg.Targets[0], &cfg.Targets[1]}, time.Now())
	o := rd[0].Obs
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"arrival rate", o.ArrivalRate, 2}, {"prompt tokens/s", o.PromptTokensRate, 400},
		{"generation tokens/s", o.GenerationTokensRate, 200}, {"mean prompt", o.MeanPrompt, 200},
		{"mean output", o.MeanOutput, 100}, {"queue time p90", o.QueueTime, 0.42}, {"ITL p50", o.ITL, 0.03},
		{"prefix-cache hit fraction", o.PrefixHit, 0.75},
	} {
		if !(math.Abs(c.got-c.want) <= 0.01*c.want) {
			t.Errorf("busy %s = %v, want %v (1%%)", c.name, c.got, c.want)
		}
	}
	if o.ArrivalWindow != 10*time.Second {
		t.Errorf("arrival window %v, want the 10 s rate() window (the demand trend's noise gate reads it)", o.ArrivalWindow)
	}
	sig := signalMap(signalsOf(o))
	if v := sig["arrival_rate"]; !(math.Abs(v-2) <= 0.02) {
		t.Errorf("exported arrival rate %v, want 2", v)
	}
	f := rd[1].Obs
	for name, v := range map[string]float64{"arrival rate": f.ArrivalRate, "prompt tokens/s": f.PromptTokensRate,
		"generation tokens/s": f.GenerationTokensRate, "mean prompt": f.MeanPrompt, "mean output": f.MeanOutput,
		"queue time": f.QueueTime, "ITL": f.ITL, "prefix-cache hit fraction": f.PrefixHit} {
		if !math.IsNaN(v) {
			t.Errorf("fresh %s = %v, want absent (NaN)", name, v)
		}
	}
	for _, k := range []string{"arrival_rate", "prompt_tokens_rate", "generation_tokens_rate", "mean_prompt", "mean_output", "queue_time", "itl"} {
		if v, ok := signalMap(signalsOf(f))[k]; ok {
			t.Errorf("fresh server exports %s %v, want no series", k, v)
		}
	}
	t.Logf("busy: %+v", o)

	// The same through serve's loop and its /metrics: the gauges in base
	// units, the fresh target's absent.
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Options{Source: src, NoRebuild: true, OnListen: func(a string) { addr <- a }})
	}()
	defer func() { cancel(); <-done }()
	base := "http://" + <-addr + "/metrics"
	var body string
	waitFor(t, "demand gauges exported", func() bool {
		_, body = get(t, base)
		return strings.Contains(body, `infscale_inter_token_latency_seconds{target="busy"}`)
	})
	for name, want := range map[string]float64{
		"infscale_arrival_rate_requests_per_second": 2, "infscale_prompt_tokens_per_second": 400,
		"infscale_generation_tokens_per_second": 200, "infscale_mean_prompt_tokens": 200,
		"infscale_mean_output_tokens": 100, "infscale_queue_time_seconds": 0.42, "infscale_inter_token_latency_seconds": 0.03,
		"infscale_prefix_cache_hit_ratio": 0.75,
	} {
		var got float64
		line := grep(body, name+`{target="busy"}`)
		if _, err := fmt.Sscanf(strings.TrimPrefix(line, name+`{target="busy"} `), "%g", &got); err != nil || !(math.Abs(got-want) <= 0.01*want) {
			t.Errorf("%s: %q, want %v (1%%)", name, line, want)
		}
		if l := grep(body, name+`{target="fresh"}`); l != "" {
			t.Errorf("fresh target exports %q, want no series", l)
		}
	}
	// demand decided on the busy target (its capacity from the replica
	// block) and abstained on the fresh one (unknown, not a low reading).
	if l := grep(body, `infscale_recommended_replicas{metric="demand",target="busy"}`); l == "" {
		t.Errorf("no demand recommendation for busy:\n%s", grep(body, "infscale_recommended_replicas"))
	}
	if l := grep(body, `infscale_recommended_replicas{metric="demand",target="fresh"}`); l != "" {
		t.Errorf("fresh target has a demand recommendation %q, want none", l)
	}
}

// TestFleetDemandFamilies: the simulated vLLM fleet's page, read as serve's
// embedded mode reads it, carries the demand families under the profile's
// names. 4 requests of 100 prompt and 20 output tokens on one replica: once
// all finished, 4 successes, 400 prompt and 80 generation tokens, and
// queue-time histogram of 4 requests.
func TestFleetDemandFamilies(t *testing.T) {
	f, err := fleet.Start(t.Context(), fleet.Config{Replicas: 1, Max: 1, PromptTokens: 100, OutputTokens: 20, Tick: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	f.Inject(4)
	var p *scrape.Page
	waitFor(t, "4 finished requests", func() bool {
		p, err = scrape.Load(t.Context(), http.DefaultClient, f.URLs()[0], nil, modelserver.VLLM)
		return err == nil && p.Requests == 4
	})
	if p.PromptTokens != 400 || p.GenerationTokens != 80 {
		t.Errorf("prompt %v generation %v tokens, want 400 80", p.PromptTokens, p.GenerationTokens)
	}
	if p.QueueTime == nil || p.QueueTime.Count != 4 {
		t.Errorf("queue-time histogram %+v, want 4 observations", p.QueueTime)
	}
	if p.ITL == nil || p.ITL.Family != "vllm:inter_token_latency_seconds" || p.ITL.Count == 0 {
		t.Errorf("ITL histogram %+v, want vllm:inter_token_latency_seconds with observations", p.ITL)
	}
}
