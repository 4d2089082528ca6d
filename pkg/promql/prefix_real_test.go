package promql

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
)

// counterPod serves counters that grow linearly with wall time from large
// bases (rate()'s extrapolation never meets zero): each line of lines is
// "name{labels}" and its increase per second.
func counterPod(t *testing.T, types map[string]string, lines map[string]float64) *httptest.Server {
	t.Helper()
	t0 := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s := time.Since(t0).Seconds()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		for fam, typ := range types {
			fmt.Fprintf(w, "# TYPE %s %s\n", fam, typ)
		}
		for series, perSec := range lines {
			fmt.Fprintf(w, "%s %g\n", series, 1e6+perSec*s)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRealPrometheusPrefixHit reads the PrefixHit signal through a real
// Prometheus (1 s scrapes, a 10 s demand window). By hand, tokens per
// second: chat-1 (vLLM) hits 300 of 400 queried; chat-2 exports hits
// (1000/s) but no queries counter, so it is left out (counted, the ratio
// would be 1300/800 > 1); chat-3 (llm-d-inference-sim's spelling without
// _total) hits 100 of 400. The fraction is (300 + 100) / (400 + 400) =
// 0.5. A target whose pods have no such counters reads no fraction
// (unknown), and that is not an error of a needed signal.
func TestRealPrometheusPrefixHit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	vllm := map[string]string{"vllm:prefix_cache_hits_total": "counter", "vllm:prefix_cache_queries_total": "counter"}
	pod1 := counterPod(t, vllm, map[string]float64{
		`vllm:prefix_cache_hits_total{engine="0",model_name="m"}`: 300, `vllm:prefix_cache_queries_total{engine="0",model_name="m"}`: 400})
	pod2 := counterPod(t, vllm, map[string]float64{`vllm:prefix_cache_hits_total{engine="0",model_name="m"}`: 1000})
	pod3 := counterPod(t, map[string]string{"vllm:prefix_cache_hits": "counter", "vllm:prefix_cache_queries": "counter"}, map[string]float64{
		`vllm:prefix_cache_hits{model_name="m"}`: 100, `vllm:prefix_cache_queries{model_name="m"}`: 400})
	bare := counterPod(t, map[string]string{"vllm:prompt_tokens_total": "counter"}, map[string]float64{`vllm:prompt_tokens_total{model_name="m"}`: 400})
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second, Targets: []promtest.Target{
		{URL: pod1.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "chat-1"}},
		{URL: pod2.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "chat-2"}},
		{URL: pod3.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "chat-3"}},
		{URL: bare.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "code-1"}},
	}})
	prom.WaitFor(t, `min(count_over_time({__name__=~"vllm:prefix_cache_queries(_total)?"}[30s]))`, 60*time.Second,
		func(v model.Vector) bool { return len(v) == 1 && v[0].Value >= 13 })
	c, err := NewClient(ClientConfig{URL: prom.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	chat := sel(t, `{namespace="llm", pod=~"chat-.*"}`)
	chat.Name, chat.Demand = "chat", true
	code := sel(t, `{namespace="llm", pod=~"code-.*"}`)
	code.Name, code.Demand = "code", true
	ev := &Evaluator{API: c, Options: Options{DemandWindow: 10 * time.Second}}
	res, _ := ev.Evaluate(context.Background(), []Target{chat, code}, time.Now())
	if got := res[0].Values[PrefixHit]; !(math.Abs(got-0.5) <= 0.005) {
		t.Errorf("chat prefix hit %v (%v), want 0.5", got, res[0].Errors[PrefixHit])
	}
	if got := res[1].Values[PrefixHit]; !math.IsNaN(got) {
		t.Errorf("code prefix hit %v, want unknown", got)
	}
}
