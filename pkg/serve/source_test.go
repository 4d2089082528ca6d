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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/profile"
)

// fakePrometheus answers /api/v1/query like Prometheus for the queries
// pkg/promql builds for a vLLM target (one query per signal: BatchSize 1):
// reporting 2 pods, running 50, waiting 10, replicas 2, no stuck pod, the rest empty. The
// running query misbehaves as fault says.
func fakePrometheus(t *testing.T, fault string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		vec := func(vals ...string) {
			var parts []string
			for i, v := range vals {
				parts = append(parts, fmt.Sprintf(`{"metric":{"pod":"p%d"},"value":[1767607200,"%s"]}`, i, v))
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
// counted by reason, and the exported desired is a number. Hand values:
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
			l := &Loop{Source: src, Metrics: m, Interval: 5 * time.Second, Now: func() time.Time { return t0 }}
			if err := l.SetConfig(cfg); err != nil {
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
				if n := testutil.CollectAndCount(m.table, "infscale_running_requests"); n != 0 {
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
			tg := &config.Target{Name: "chat", Server: profile.VLLM, Scrape: []string{a.URL, b.URL, bad.URL}}
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
		rd := src.Read(context.Background(), []*config.Target{{Name: "chat", Server: profile.VLLM, Scrape: []string{n.URL}}}, t0)[0]
		if !math.IsNaN(rd.Obs.Running) || !math.IsNaN(rd.Obs.Waiting) || !math.IsNaN(rd.Obs.KV) {
			t.Errorf("NaN samples must read as unknown, got %+v", rd.Obs)
		}
	})
}

// TestHistogramQuantile checks the quantile of a histogram increase against
// hand interpolation: 100 observations, 40 in (0, 0.1], 50 in (0.1, 0.5],
// 10 in (0.5, +Inf): p95 has rank 95, in the +Inf bucket: the highest
// finite bound 0.5; p50 has rank 50 in (0.1, 0.5]: 0.1 + 0.4 x (50-40)/50 = 0.18.
func TestHistogramQuantile(t *testing.T) {
	h := func(a, b, c float64) *histogramT { return mkHist(a, b, c) }
	prev, cur := h(10, 10, 10), h(50, 100, 110) // increases 40, 90, 100 cumulative
	if got := histogramQuantile(0.95, prev, cur); got != 0.5 {
		t.Errorf("p95 %v, want 0.5", got)
	}
	if got := histogramQuantile(0.5, prev, cur); math.Abs(got-0.18) > 1e-12 {
		t.Errorf("p50 %v, want 0.18", got)
	}
	if got := histogramQuantile(0.5, cur, cur); !math.IsNaN(got) {
		t.Errorf("no observation in the window: %v, want NaN", got)
	}
	if got := histogramQuantile(0.5, cur, prev); !math.IsNaN(got) {
		t.Errorf("counter reset: %v, want NaN", got)
	}
}
