package serve

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/scrape"
)

// fakePrometheus answers /api/v1/query like Prometheus for the queries
// pkg/promql builds for a vLLM target (one query per signal: BatchSize 1):
// reporting 2 pods, running 50, waiting 10, replicas 2, no stuck pod, the rest empty, at
// the evaluation time asked. The running query misbehaves as fault says.
func fakePrometheus(t *testing.T, fault string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		vec := func(vals ...string) {
			var parts []string
			for i, v := range vals {
				parts = append(parts, fmt.Sprintf(`{"metric":{"pod":"p%d"},"value":[%s,"%s"]}`, i, r.FormValue("time"), v))
			}
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(parts, ","))
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(q, "min_over_time"):
			vec() // pkg/promql's stuck queries: no pod is stuck
		case strings.HasPrefix(q, "count("):
			vec("2")
		case strings.Contains(q, "num_requests_running"):
			switch fault {
			case "500":
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprint(w, `{"status":"error","errorType":"internal","error":"boom"}`)
			case "hang":
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
			case "nan":
				vec("NaN")
			case "empty":
				vec()
			case "duplicate":
				vec("50", "45") // two series where one number is expected
			case "stale": // a cache's answer of an hour before
				fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1767603600,"50"]}]}}`)
			case "matrix":
				fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1767607200,"50"]]}]}}`)
			case "string":
				fmt.Fprint(w, `{"status":"success","data":{"resultType":"string","result":[1767607200,"50"]}}`)
			case "scalar": // a number, but not the answer to a vector query
				fmt.Fprint(w, `{"status":"success","data":{"resultType":"scalar","result":[1767607200,"50"]}}`)
			case "nostatus", "pending": // JSON of Prometheus's shape, but not its answer: it says "success" or "error"
				status := map[string]string{"nostatus": "", "pending": `"status":"pending",`}[fault]
				fmt.Fprintf(w, `{%s"data":{"resultType":"vector","result":[{"metric":{},"value":[%s,"50"]}]}}`, status, r.FormValue("time"))
			case "midbody": // the connection closed in the middle of the body
				w.Header().Set("Content-Length", "500")
				w.WriteHeader(200)
				fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"val`)
				w.(http.Flusher).Flush()
				conn, _, _ := http.NewResponseController(w).Hijack()
				conn.Close()
			default:
				vec("50")
			}
		case strings.Contains(q, "num_requests_waiting"):
			vec("10")
		case strings.Contains(q, "kube_deployment_spec_replicas"):
			vec("2")
		default:
			vec()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

const promConfig = `
prometheus: {url: %s, timeout: 1s}
targets:
- name: chat
  selector: '{app="chat"}'
  replicas: 'kube_deployment_spec_replicas{deployment="chat"}'
  metrics: [{type: queue, target: 24}]
  max: 8
`

// TestPrometheusFaults: every fault makes the signal unknown (never 0), is
// counted by reason, and the exported desired is a number. An answer of
// an hour before (a caching proxy's), a scalar answer to a vector query,
// and an answer without "status" or with one that is neither "success" nor
// "error" decided 3 on the running 50 they carry; a result type other than the
// query's, or a body cut by a closed connection, is not Prometheus's answer
// to it now. Hand values:
// queue 50 + 10 = 60, target 24, 2 replicas: ratio 60/48 = 1.25, ceil(60/24)
// = 3; with running unknown the queue is unknown: no data, keep current 2.
func TestPrometheusFaults(t *testing.T) {
	for _, tc := range []struct {
		fault, reason string
		want          float64
	}{
		{"", "", 3},
		{"500", "unavailable", 2},
		{"hang", "timeout", 2},
		{"nan", "nan", 2},
		{"empty", "empty", 2},
		{"duplicate", "ambiguous", 2},
		{"stale", "bad_response", 2},
		{"matrix", "bad_response", 2},
		{"string", "bad_response", 2},
		{"scalar", "bad_response", 2},
		{"nostatus", "bad_response", 2},
		{"pending", "bad_response", 2},
		{"midbody", "unavailable", 2},
	} {
		t.Run("fault="+tc.fault, func(t *testing.T) {
			srv := fakePrometheus(t, tc.fault)
			cfg, err := config.Parse([]byte(fmt.Sprintf(promConfig, srv.URL)), "prom.yaml")
			if err != nil {
				t.Fatal(err)
			}
			src, err := NewPrometheusSourceFromRoundTripper(srv.URL, nil, 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			src.Evaluator.BatchSize = 1
			m := NewMetrics(prometheus.NewRegistry(), "test")
			l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 5 * time.Second, Now: func() time.Time { return t0 }})
			if err := l.SetConfig(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			l.Cycle(context.Background())
			if got := desired(t, m, "chat"); got != tc.want {
				t.Errorf("desired %v, want %v", got, tc.want)
			}
			if tc.reason != "" {
				if got := counterValue(t, m, "query_errors_total", "chat", tc.reason); got != 1 {
					t.Errorf("query_errors_total{reason=%q} = %v, want 1", tc.reason, got)
				}
				if n := tableCount(t, m, "infscale_running_requests"); n != 0 {
					t.Errorf("running must be absent when unknown, %d series", n)
				}
				if r := lastRecord(l, "chat"); r.Reason != "no-data" || r.Signals.Running != nil {
					t.Errorf("record %+v, want no-data with running unknown", r)
				}
			}
		})
	}
}

// vllmPage is a minimal vLLM /metrics page.
func vllmPage(running, waiting, kv string) string {
	return fmt.Sprintf(`# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} %s
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} %s
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} %s
`, running, waiting, kv)
}

// TestScrapeFaults: embedded mode against httptest replicas. Two healthy
// pages (running 20 + 30, waiting 4 + 6, kv 0.2 and 0.4) and one faulty:
// current = pages answered, the faulty page does not vote.
func TestScrapeFaults(t *testing.T) {
	healthy := func(run, wait, kv string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, vllmPage(run, wait, kv))
		}))
		t.Cleanup(s.Close)
		return s
	}
	a, b := healthy("20", "4", "0.2"), healthy("30", "6", "0.4")
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		reason  string
	}{
		{"500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }, "unavailable"},
		{"hang", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, "timeout"},
		{"garbage", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>not metrics</html>\n") }, "bad_response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := httptest.NewServer(tc.handler)
			defer bad.Close()
			src := NewScrapeSource(300 * time.Millisecond)
			tg := &config.Target{Name: "chat", Server: modelserver.VLLM, Scrape: config.Scrape{URLs: []string{a.URL, b.URL, bad.URL}}}
			rd := src.Read(context.Background(), []*config.Target{tg}, t0)[0]
			o := rd.Obs
			// running 20 + 30 = 50, waiting 4 + 6 = 10, kv (0.2 + 0.4) / 2 = 0.3.
			if !rd.CurrentKnown || o.Current != 2 || o.Running != 50 || o.Waiting != 10 || math.Abs(o.KV-0.3) > 1e-12 {
				t.Errorf("observation %+v current known %v", o, rd.CurrentKnown)
			}
			if len(rd.Errors) != 1 || rd.Errors[0].Reason != tc.reason {
				t.Errorf("errors %+v, want one %s", rd.Errors, tc.reason)
			}
		})
	}
	t.Run("nan", func(t *testing.T) {
		n := healthy("NaN", "NaN", "NaN")
		src := NewScrapeSource(time.Second)
		rd := src.Read(context.Background(), []*config.Target{{Name: "chat", Server: modelserver.VLLM, Scrape: config.Scrape{URLs: []string{n.URL}}}}, t0)[0]
		if !math.IsNaN(rd.Obs.Running) || !math.IsNaN(rd.Obs.Waiting) || !math.IsNaN(rd.Obs.KV) {
			t.Errorf("NaN samples must read as unknown, got %+v", rd.Obs)
		}
	})
}

// TestTTFTWindowIncrease: the TTFT quantile of embedded mode over the
// scrapes of a 60 s window, buckets at le 0.1, 0.5, +Inf (cumulative).
//   - t=0 (10, 10, 10), t=15 (50, 100, 110): increases 40, 90, 100: p95
//     rank 95 in +Inf reads the highest finite bound 0.5; p50 rank 50 in
//     (0.1, 0.5]: 0.1 + 0.4 × (50-40)/50 = 0.18.
//   - t=30 the replica restarted (at t0+20 s, process start t0-1h ->
//     t0+20 s) and counted
//     (0, 20, 20) since: Prometheus's increase() adds the reset counter's
//     new value, so the window holds 40+0, 90+20, 100+20 = (40, 110, 120):
//     p50 rank 60 in (0.1, 0.5]: 0.1 + 0.4 × 20/70 = 0.2142857...
//     (before, a restart dropped the replica: no quantile at all).
//   - t=45 nothing new since t=30: still (40, 110, 120).
//   - without a second scrape there is no baseline: NaN.
func TestTTFTWindowIncrease(t *testing.T) {
	src := NewScrapeSource(time.Second)
	at := func(sec int, start float64, a, b, c float64) float64 {
		h := mkHist(a, b, c)
		p := &scrape.Page{TTFT: h, ProcessStart: start}
		q, _ := src.quantile(histTTFT, []string{"u"}, []*scrape.Page{p}, 0.5, time.Minute, t0.Add(time.Duration(sec)*time.Second))
		return q
	}
	started, restarted := float64(t0.Unix()-3600), float64(t0.Unix()+20)
	if got := at(0, started, 10, 10, 10); !math.IsNaN(got) {
		t.Errorf("first scrape: %v, want NaN (no baseline)", got)
	}
	if got := at(15, started, 50, 100, 110); !(math.Abs(got-0.18) <= 1e-12) {
		t.Errorf("t=15 p50 %v, want 0.18", got)
	}
	if got := at(30, restarted, 0, 20, 20); !(math.Abs(got-(0.1+0.4*20/70)) <= 1e-12) {
		t.Errorf("t=30 after a restart: p50 %v, want %v", got, 0.1+0.4*20/70)
	}
	if got := at(45, restarted, 0, 20, 20); !(math.Abs(got-(0.1+0.4*20/70)) <= 1e-12) {
		t.Errorf("t=45: p50 %v, want %v", got, 0.1+0.4*20/70)
	}
}

// TestTTFTReplicasOfTwoLayouts: in a rollout to a server version with
// other TTFT buckets, replica a (old: le 0.5, 1, +Inf) answered 10
// requests within 0.5 s over the window and replica b (new: le 0.5, 1, 20,
// +Inf) 10 in (1, 20]. Merged (histogram.Merge: a counts at 20 its 10 at
// 1) the window holds 0.5: 10, 1: 10, 20: 20, +Inf: 20, so p95 (rank 19)
// is 1 + 19 × 9/10 = 18.1 s. b was dropped (another layout than the first
// replica's): p95 read a's alone, 0.5 × 9.5/10 = 0.475 s, and a TTFT
// target saw no latency at all.
func TestTTFTReplicasOfTwoLayouts(t *testing.T) {
	src := NewScrapeSource(time.Second)
	inf := math.Inf(1)
	at := func(sec int, a, b []scrape.Bucket) float64 {
		pages := []*scrape.Page{{TTFT: &scrape.Histogram{Buckets: a}, ProcessStart: math.NaN()}, {TTFT: &scrape.Histogram{Buckets: b}, ProcessStart: math.NaN()}}
		q, _ := src.quantile(histTTFT, []string{"a", "b"}, pages, 0.95, time.Minute, t0.Add(time.Duration(sec)*time.Second))
		return q
	}
	at(0, []scrape.Bucket{{UpperBound: 0.5}, {UpperBound: 1}, {UpperBound: inf}}, []scrape.Bucket{{UpperBound: 0.5}, {UpperBound: 1}, {UpperBound: 20}, {UpperBound: inf}})
	got := at(15, []scrape.Bucket{{UpperBound: 0.5, Count: 10}, {UpperBound: 1, Count: 10}, {UpperBound: inf, Count: 10}},
		[]scrape.Bucket{{UpperBound: 0.5}, {UpperBound: 1}, {UpperBound: 20, Count: 10}, {UpperBound: inf, Count: 10}})
	if math.Abs(got-18.1) > 1e-9 {
		t.Errorf("p95 over both replicas = %v, want 18.1", got)
	}
}

// A replica whose TTFT histogram has a series without its +Inf bucket (an
// exporter cut short) does not vote on the fleet's quantile: its
// observations above its largest bound are unknown. Replica a observes 10
// first tokens <= 0.5 s in 15 s, replica b 20 of which 18 above 1 s (its
// _count) but no +Inf bucket. Merged, b's 18 vanished: buckets (10, 12,
// 12), p95 rank 11.4 in (0.5, 1]: 0.5 + 0.5 × 1.4/2 = 0.85 s, below the 1 s
// most of b's requests took. Without b: rank 9.5 of 10 in [0, 0.5]:
// 0.5 × 9.5/10 = 0.475.
func TestTTFTReplicaWithoutInfBucket(t *testing.T) {
	src := NewScrapeSource(time.Second)
	read := func(page string) *scrape.Page {
		p, err := scrape.Read(strings.NewReader(page), "", "r.prom", modelserver.VLLM)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	const head = "vllm:num_requests_running 1\n# TYPE vllm:time_to_first_token_seconds histogram\n"
	complete := func(n int) string {
		return head + fmt.Sprintf("vllm:time_to_first_token_seconds_bucket{le=\"0.5\"} %d\nvllm:time_to_first_token_seconds_bucket{le=\"1\"} %d\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} %d\nvllm:time_to_first_token_seconds_count %d\n", n, n, n, n)
	}
	cut := func(le1, count int) string {
		return head + fmt.Sprintf("vllm:time_to_first_token_seconds_bucket{le=\"0.5\"} 0\nvllm:time_to_first_token_seconds_bucket{le=\"1\"} %d\nvllm:time_to_first_token_seconds_count %d\n", le1, count)
	}
	at := func(sec int, a, b string) float64 {
		q, _ := src.quantile(histTTFT, []string{"a", "b"}, []*scrape.Page{read(a), read(b)}, 0.95, time.Minute, t0.Add(time.Duration(sec)*time.Second))
		return q
	}
	at(0, complete(0), cut(0, 0))
	if got := at(15, complete(10), cut(2, 20)); math.Abs(got-0.475) > 1e-9 {
		t.Errorf("p95 = %v, want 0.475 (replica b, without its +Inf bucket, not voting)", got)
	}
}

// demandText is a vLLM page with the demand families: request counters by
// finished_reason, token counters, and queue-time and ITL buckets at
// (le 0.1, 0.5, +Inf) and (le 0.01, 0.05, +Inf).
func demandText(start, stop, length, prompt, gen float64, q, itl [3]float64) string {
	return fmt.Sprintf(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running 1
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting 0
# TYPE process_start_time_seconds gauge
process_start_time_seconds %g
# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="stop"} %g
vllm:request_success_total{finished_reason="length"} %g
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total %g
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total %g
# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_bucket{le="0.1"} %g
vllm:request_queue_time_seconds_bucket{le="0.5"} %g
vllm:request_queue_time_seconds_bucket{le="+Inf"} %g
vllm:request_queue_time_seconds_sum 1
vllm:request_queue_time_seconds_count %g
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_bucket{le="0.01"} %g
vllm:inter_token_latency_seconds_bucket{le="0.05"} %g
vllm:inter_token_latency_seconds_bucket{le="+Inf"} %g
vllm:inter_token_latency_seconds_sum 1
vllm:inter_token_latency_seconds_count %g
`, start, stop, length, prompt, gen, q[0], q[1], q[2], q[2], itl[0], itl[1], itl[2], itl[2])
}

// TestScrapeDemandSignals: embedded mode's demand signals from pages read
// at t0, t0+15 s and t0+30 s (one replica; the quantiles over the
// queuewait metric's 1 m window and the ITL's 1 m), worked by hand:
//
//   - t0: no baseline: every rate and quantile absent (NaN), never 0.
//   - t0+15 s: requests 10+5 -> 40+5+30 (stop 10 -> 40, length 5 -> 35):
//     60 / 15 = 4 req/s; prompt 1000 -> 7000: 400 tokens/s; generation
//     0 -> 3000: 200 tokens/s; means 400/4 = 100 and 200/4 = 50 tokens.
//     Queue buckets (10, 20, 20) -> (40, 70, 80): increase (30, 50, 60),
//     p90 rank 54 in (0.5, +Inf]: the highest finite bound, 0.5; ITL
//     (0, 0, 0) -> (50, 150, 200): p50 rank 100 in (0.01, 0.05]: 0.01 +
//     0.04 × 50/100 = 0.03.
//   - t0+30 s the replica restarted (at t0+20 s) and counted
//     stop 6, length 0, prompt 900, generation 300 since: the increase is
//     the new value (Prometheus's reset rule): 6/15 = 0.4 req/s, 60 and 20
//     tokens/s, means 150 and 50. Its histograms since the restart, queue
//     (40, 70, 80) and ITL (100, 100, 100), are their increases too: over
//     the window queue (70, 120, 140), p90 rank 126 in +Inf: 0.5; ITL
//     (150, 250, 300), p50 rank 150 in [0, 0.01]: 0.01 × 150/150 = 0.01.
func TestScrapeDemandSignals(t *testing.T) {
	tg := &config.Target{Name: "chat", Server: modelserver.VLLM,
		Metrics: []config.Metric{{Type: recommend.SignalQueueWait, Quantile: 0.9, Window: model.Duration(time.Minute)}}}
	src := NewScrapeSource(time.Second)
	read := func(sec int, text string) recommend.Observation {
		p, err := scrape.Read(strings.NewReader(text), "text/plain", "u", modelserver.VLLM)
		if err != nil {
			t.Fatal(err)
		}
		at := t0.Add(time.Duration(sec) * time.Second)
		p.Time = at
		o := recommend.Unknown()
		src.rates(&o, []string{"u"}, []*scrape.Page{p})
		o.QueueTime, _ = src.quantile(histQueueTime, []string{"u"}, []*scrape.Page{p}, tg.Metrics[0].Quantile, time.Minute, at)
		o.ITL, _ = src.quantile(histITL, []string{"u"}, []*scrape.Page{p}, demandITLQuantile, demandWindow, at)
		return o
	}
	// The replica started an hour before t0, and restarted at t0+20 s.
	started, restarted := float64(t0.Unix()-3600), float64(t0.Unix()+20)
	o := read(0, demandText(started, 10, 5, 1000, 0, [3]float64{10, 20, 20}, [3]float64{0, 0, 0}))
	for name, v := range map[string]float64{"arrivals": o.ArrivalRate, "prompt": o.PromptTokensRate, "generation": o.GenerationTokensRate,
		"mean prompt": o.MeanPrompt, "mean output": o.MeanOutput, "queue time": o.QueueTime, "itl": o.ITL} {
		if !math.IsNaN(v) {
			t.Errorf("first scrape %s = %v, want absent (NaN)", name, v)
		}
	}
	check := func(when string, o recommend.Observation, want [7]float64) {
		t.Helper()
		got := [7]float64{o.ArrivalRate, o.PromptTokensRate, o.GenerationTokensRate, o.MeanPrompt, o.MeanOutput, o.QueueTime, o.ITL}
		for i := range got {
			if !(math.Abs(got[i]-want[i]) <= 1e-9) { // NaN is a mismatch

				t.Errorf("%s: (arrivals, prompt/s, generation/s, mean prompt, mean output, queue p90, itl p50) = %v, want %v", when, got, want)
				return
			}
		}
	}
	o = read(15, demandText(started, 40, 35, 7000, 3000, [3]float64{40, 70, 80}, [3]float64{50, 150, 200}))
	check("t0+15s", o, [7]float64{4, 400, 200, 100, 50, 0.5, 0.03})
	if o.ArrivalWindow != 15*time.Second { // the rate's span, for the demand trend's noise gate
		t.Errorf("arrival window %v, want the 15 s between the scrapes", o.ArrivalWindow)
	}
	o = read(30, demandText(restarted, 6, 0, 900, 300, [3]float64{40, 70, 80}, [3]float64{100, 100, 100}))
	check("t0+30s after a restart", o, [7]float64{0.4, 60, 20, 150, 50, 0.5, 0.01})
}

// TestScrapeSharedURLRates: two targets that list the same URL keep their
// own baselines. With one baseline per URL, the second target's rate was
// taken against the page the first had just scraped, milliseconds earlier
// and unchanged: 0 requests per second beside the first's 60 per span.
// Here the page's counters step once between two Reads (requests 15 ->
// 75): both targets read the same positive rate, 60 over their own span.
func TestScrapeSharedURLRates(t *testing.T) {
	var stage atomic.Int32
	pages := [2]string{
		demandText(1, 10, 5, 1000, 0, [3]float64{10, 20, 20}, [3]float64{0, 0, 0}),
		demandText(1, 40, 35, 7000, 3000, [3]float64{40, 70, 80}, [3]float64{50, 150, 200}),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, pages[stage.Load()])
	}))
	defer srv.Close()
	var targets []*config.Target
	for _, name := range []string{"p", "q"} {
		targets = append(targets, &config.Target{Name: name, Server: modelserver.VLLM, Scrape: config.Scrape{URLs: []string{srv.URL + "/metrics"}}})
	}
	src := NewScrapeSource(5 * time.Second)
	start := time.Now()
	src.Read(t.Context(), targets, start)
	time.Sleep(200 * time.Millisecond)
	stage.Store(1)
	rs := src.Read(t.Context(), targets, start.Add(15*time.Second))
	span := time.Since(start).Seconds()
	for i, r := range rs {
		// 60 requests over the ~0.2 s between a target's two scrapes of
		// the page (the pages' own times): at least 60 / span.
		if got := r.Obs.ArrivalRate; !(got >= 60/span) || !(r.Obs.ArrivalWindow > 0) {
			t.Errorf("%s: arrival rate %v over %v, want at least %.0f (60 requests in %.2f s)", targets[i].Name, got, r.Obs.ArrivalWindow, 60/span, span)
		}
	}
}

// TestScrapePrefixHitDemand: embedded mode's prefix-cache hit fraction
// from a page pair 15 s apart, and the demand it gives, worked by hand.
// The replica finished 60 requests (4 req/s) of 6000 prompt tokens (400/s,
// mean 100) and 3000 generated (200/s, mean 50); its prefix cache was
// queried for 6000 tokens (400/s) and hit 4500 (300/s): fraction 0.75. On a
// replica of 1000 prefill tokens/s, 10 slots, 10,000 KV tokens and a step
// of 10 ms + 1 µs per context token, a request costs 100 × 0.25 / 1000 =
// 0.025 s of prefill plus 50 × (0.01 + 1e-6 × 10 × 125) / 10 = 0.05625 s
// of decode: 0.08125 replica-s; 4 req/s are 0.325 replicas busy, / 0.25 =
// 1.3 → 2 (with every token prefilled 4 × 0.15625 = 0.625, 2.5 → 3).
func TestScrapePrefixHitDemand(t *testing.T) {
	src := NewScrapeSource(time.Second)
	read := func(sec int, stop, length, prompt, gen, queries, hits float64) recommend.Observation {
		text := demandText(1, stop, length, prompt, gen, [3]float64{}, [3]float64{}) + fmt.Sprintf(`# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0"} %g
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0"} %g
`, queries, hits)
		p, err := scrape.Read(strings.NewReader(text), "text/plain", "u", modelserver.VLLM)
		if err != nil {
			t.Fatal(err)
		}
		p.Time = t0.Add(time.Duration(sec) * time.Second)
		o := recommend.Unknown()
		src.rates(&o, []string{"u"}, []*scrape.Page{p})
		return o
	}
	if o := read(0, 10, 5, 1000, 0, 1000, 0); !math.IsNaN(o.PrefixHit) {
		t.Errorf("first scrape: hit fraction %v, want unknown", o.PrefixHit)
	}
	o := read(15, 40, 35, 7000, 3000, 7000, 4500)
	if o.PrefixHit != 0.75 || o.MeanPrompt != 100 || o.MeanOutput != 50 || o.ArrivalRate != 4 {
		t.Fatalf("hit %v, prompt %v, output %v, rate %v; want 0.75, 100, 50, 4", o.PrefixHit, o.MeanPrompt, o.MeanOutput, o.ArrivalRate)
	}
	p := &recommend.Policy{Metrics: []recommend.Metric{{Signal: recommend.SignalDemand, Target: 0.25}}, Min: 1, Max: 10,
		Capacity: &recommend.Capacity{PrefillTokensPerSecond: 1000, MaxBatch: 10, KVTokens: 10000, StepSeconds: 0.01, StepSecondsPerToken: 1e-6}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	o.Current, o.Reporting = 1, 1
	d := recommend.Decide(p, o, nil, t0)
	if d.Desired != 2 || len(d.Raw) != 1 || math.Abs(d.Raw[0].Value-0.325) > 1e-12 {
		t.Errorf("desired %d, raw %+v; want 2 from 0.325 replicas busy", d.Desired, d.Raw)
	}
	o.PrefixHit = math.NaN()
	if d := recommend.Decide(p, o, nil, t0); d.Desired != 3 {
		t.Errorf("unknown hit fraction: desired %d, want 3", d.Desired)
	}
}

// TestScrapeWrongTypeSaysSo: a page declaring its running gauge a counter
// (beside a page that reads running 2, waiting 1): running is unknown for
// the target (that replica's is unknown), waiting 3 + 1 = 4, and the error
// says why, counted as bad_data. It said "running has a NaN or infinite
// sample" under reason nan, where no sample is NaN.
func TestScrapeWrongTypeSaysSo(t *testing.T) {
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE vllm:num_requests_running counter\nvllm:num_requests_running 5\nvllm:num_requests_waiting 3\n")
	}))
	defer bad.Close()
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "vllm:num_requests_running 2\nvllm:num_requests_waiting 1\n")
	}))
	defer good.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics, %s/metrics]\n  metrics: [{type: queue, target: 4}]\n  maxReplicaCount: 8\n", bad.URL, good.URL)), "emb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := NewScrapeSource(5*time.Second).Read(context.Background(), []*config.Target{&cfg.Targets[0]}, time.Now())[0]
	if !math.IsNaN(r.Obs.Running) || r.Obs.Waiting != 4 || r.Obs.Current != 2 {
		t.Errorf("running %v waiting %v current %d, want unknown, 4, 2", r.Obs.Running, r.Obs.Waiting, r.Obs.Current)
	}
	want := ReadError{Signal: "page", Reason: "bad_data"}
	wantMsg := bad.URL + "/metrics: vllm:num_requests_running is declared a counter, infscale reads it as a gauge: its value is unknown"
	if len(r.Errors) != 1 || r.Errors[0].Signal != want.Signal || r.Errors[0].Reason != want.Reason || r.Errors[0].Err.Error() != wantMsg {
		t.Errorf("errors %+v, want one %s %s %q", r.Errors, want.Signal, want.Reason, wantMsg)
	}
}

// TestScrapeNoSampleWarns: a scrape URL answering 200 with no load sample
// (an empty body, another exporter's page: the target's server is vllm)
// beside a page running 2, waiting 1: current 3 (the pages that answered),
// 1 reporting, running 2 and waiting 1, no error counted, and one warning
// per silent page naming it. It was a missing replica said nowhere.
func TestScrapeNoSampleWarns(t *testing.T) {
	empty := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer empty.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE node_load1 gauge\nnode_load1 3\n")
	}))
	defer other.Close()
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "vllm:num_requests_running 2\nvllm:num_requests_waiting 1\n")
	}))
	defer good.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics, %s/metrics, %s/metrics]\n  metrics: [{type: queue, target: 4}]\n  maxReplicaCount: 8\n", empty.URL, other.URL, good.URL)), "emb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := NewScrapeSource(5*time.Second).Read(context.Background(), []*config.Target{&cfg.Targets[0]}, time.Now())[0]
	if r.Obs.Current != 3 || r.Obs.Reporting != 1 || r.Obs.Running != 2 || r.Obs.Waiting != 1 || len(r.Errors) != 0 {
		t.Errorf("current %d reporting %d running %v waiting %v errors %v; want 3, 1, 2, 1, none", r.Obs.Current, r.Obs.Reporting, r.Obs.Running, r.Obs.Waiting, r.Errors)
	}
	const why = "/metrics: no running, waiting or KV-cache sample (vllm's families absent, or declared without samples: before the first request, or not its /metrics?): a missing replica"
	if len(r.Warnings) != 2 || r.Warnings[0] != empty.URL+why || r.Warnings[1] != other.URL+why {
		t.Errorf("warnings %q, want one for %s and one for %s", r.Warnings, empty.URL, other.URL)
	}
}

// TestReadCutByPeriodSaysSo: a read still unanswered when the cycle's
// period ends (Interval 300ms, under the 10 s per-read timeout) is a
// timeout whose error says what ended it, the decision period and the
// knob, in each mode: a hanging running query, batched (the default) or
// one per target, an answer whose body stalls after its headers, and a
// hanging or stalling page beside one that answers. It said "context deadline
// exceeded" alone, where a read past prometheus.timeout says "no answer in
// 10s, the limit per query": a slow Prometheus whose second round of
// queries (4 at a time) the period cut read as timing out under its limit.
func TestReadCutByPeriodSaysSo(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(hang.Close)
	healthy := fakePrometheus(t, "")
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.FormValue("query"); !strings.Contains(q, "num_requests_running") || strings.HasPrefix(q, "count(") || strings.Contains(q, "min_over_time") {
			healthy.Config.Handler.ServeHTTP(w, r) // the running query's body stalls, the rest answer
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK) // the headers, then a body that stalls
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(stall.Close)
	pageStall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "vllm:num_requests_running 1\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(pageStall.Close)
	const want = "the decision period (pollingInterval 300ms) ended before this read"
	for _, tc := range []struct {
		name, signal string
		src          func(t *testing.T) (Source, string)
	}{
		{"batched", "running", func(t *testing.T) (Source, string) {
			srv := fakePrometheus(t, "hang")
			src, err := NewPrometheusSourceFromRoundTripper(srv.URL, nil, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return src, fmt.Sprintf(promConfig, srv.URL)
		}},
		{"one per target", "running", func(t *testing.T) (Source, string) {
			srv := fakePrometheus(t, "hang")
			src, err := NewPrometheusSourceFromRoundTripper(srv.URL, nil, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			src.Evaluator.BatchSize = 1
			return src, fmt.Sprintf(promConfig, srv.URL)
		}},
		{"body stalls", "running", func(t *testing.T) (Source, string) {
			src, err := NewPrometheusSourceFromRoundTripper(stall.URL, nil, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return src, fmt.Sprintf(promConfig, stall.URL)
		}},
		{"page body stalls", "page", func(t *testing.T) (Source, string) {
			var page atomic.Value
			page.Store("vllm:num_requests_running 1\nvllm:num_requests_waiting 0\n")
			return NewScrapeSource(10 * time.Second), fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics, %s/metrics]\n  metrics: [{type: queue, target: 24}]\n  max: 8\n", switchPage(t, &page).URL, pageStall.URL)
		}},
		{"page", "page", func(t *testing.T) (Source, string) {
			var page atomic.Value
			page.Store("vllm:num_requests_running 1\nvllm:num_requests_waiting 0\n")
			return NewScrapeSource(10 * time.Second), fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics, %s/metrics]\n  metrics: [{type: queue, target: 24}]\n  max: 8\n", switchPage(t, &page).URL, hang.URL)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, text := tc.src(t)
			cfg, err := config.Parse([]byte(text), "cut.yaml")
			if err != nil {
				t.Fatal(err)
			}
			m := NewMetrics(prometheus.NewRegistry(), "test")
			l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 300 * time.Millisecond, Now: func() time.Time { return t0 }})
			if err := l.SetConfig(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			l.Cycle(context.Background())
			if got := counterValue(t, m, "query_errors_total", "chat", "timeout"); got < 1 {
				t.Errorf("query_errors_total{reason=timeout} = %v, want at least 1", got)
			}
			var found bool
			for _, e := range lastRecord(l, "chat").Errors {
				if strings.HasPrefix(e, tc.signal+": timeout: ") && strings.Contains(e, want) {
					found = true
				}
			}
			if !found {
				t.Errorf("errors %q, want a %s timeout saying %q", lastRecord(l, "chat").Errors, tc.signal, want)
			}
		})
	}
}
