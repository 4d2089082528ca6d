package serve

import (
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
)

// TestServeClockAheadOfPrometheus: a real Prometheus scrapes demandPage
// (2 req/s) every second, the demand window is 10 s; serve's clock is 30 s
// ahead of Prometheus's (passed as the Read's now). Evaluated at serve's
// now, rate(...[10s]) covered Prometheus's (now+20 s, now+30 s]: no sample
// yet, so the arrival rate read empty at every cycle ("no data", the hint
// blaming the scrape interval), while the gauges (5 min lookback) read on.
// Prometheus's answers carry its clock (the HTTP Date header): serve ahead
// of it by more than 2 s evaluates at Prometheus's now, from the first
// cycle (an evaluation at serve's now, whose answer tells the offset, is
// asked again at Prometheus's): 2 req/s. The offset is -30 s within the
// Date header's second and the loopback's latency.
func TestServeClockAheadOfPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	busy := httptest.NewServer(demandPage(time.Now()))
	defer busy.Close()
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second, Targets: []promtest.Target{
		{URL: busy.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "busy-0"}},
	}})
	cfg, err := config.Parse([]byte(fmt.Sprintf(`prometheus: {url: %s}
interval: 1s
targets:
- name: busy
  server: vllm
  selector: '{namespace="llm", pod="busy-0"}'
  metrics: [{type: demand, target: 0.8}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  max: 8
`, prom.URL)), "skew.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// serve's clock: the machine's (Prometheus's) plus 30 s, for the
	// cycles' now and the client's reading of the answers' Date.
	serveNow := func() time.Time { return time.Now().Add(30 * time.Second) }
	c, err := promql.NewClient(promql.ClientConfig{URL: prom.URL, Timeout: 10 * time.Second, MaxRangeAnswerBytes: promql.MaxInstantAnswerBytes, Now: serveNow})
	if err != nil {
		t.Fatal(err)
	}
	src := &PrometheusSource{Evaluator: &promql.Evaluator{API: c}, client: c}
	src.Evaluator.Options.DemandWindow = 10 * time.Second
	prom.WaitFor(t, `count_over_time(vllm:prompt_tokens_total{pod="busy-0"}[30s])`, 60*time.Second,
		func(v model.Vector) bool { return len(v) == 1 && v[0].Value >= 13 })
	targets := []*config.Target{&cfg.Targets[0]}
	for i := range 2 {
		rd := src.Read(t.Context(), targets, serveNow())
		if got := rd[0].Obs.ArrivalRate; !(math.Abs(got-2) <= 0.02) {
			t.Errorf("read %d, serve 30 s ahead: arrival rate %v (errors %v), want 2 req/s", i+1, got, rd[0].Errors)
		}
		if !rd[0].CurrentKnown || rd[0].Obs.Current != 1 {
			t.Errorf("read %d: current %d known %v, want 1", i+1, rd[0].Obs.Current, rd[0].CurrentKnown)
		}
	}
	if off, ok := src.ClockOffset(); !ok || off > -29*time.Second || off < -31500*time.Millisecond {
		t.Errorf("Prometheus's clock offset %v (known %v), want -30 s within the Date header's second", off, ok)
	}
	// A cycle of the loop exports it and warns.
	reg := prometheus.NewRegistry()
	var logs buftest.Buffer
	l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 5 * time.Second, Now: serveNow,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := l.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	l.Cycle(t.Context())
	if v, ok := gauge(t, reg, "infscale_prometheus_clock_offset_seconds", nil); !ok || v > -29 || v < -31.5 {
		t.Errorf("infscale_prometheus_clock_offset_seconds %v (present %v), want -30", v, ok)
	}
	if !strings.Contains(logs.String(), "serve's clock is ahead of Prometheus's") {
		t.Errorf("no warning of the clocks in the log:\n%s", logs.String())
	}
	if a := lastRecord(l, "busy").Signals.ArrivalRate; a == nil || !(math.Abs(*a-2) <= 0.02) {
		t.Errorf("the cycle's arrival rate %v, want 2 req/s", a)
	}
}

// TestServeClockFromDateHeader: a Prometheus API answering an empty
// vector with a chosen Date (and Age) header; the second Read's time
// parameter is the evaluation time. Date 30 s behind serve: asked at
// now-30 s (within the header's second). Date 90 s behind with Age 60 (a
// cache's answer, 60 s old): its origin's clock 30 s behind, asked at
// now-30 s as well. Date 10 min behind: more than 5 min (promql's
// MaxAnswerSkew) is not followed: asked at serve's now.
func TestServeClockFromDateHeader(t *testing.T) {
	for _, c := range []struct {
		name     string
		behind   time.Duration
		age      string
		wantBack time.Duration
	}{{"30s", 30 * time.Second, "", 30 * time.Second}, {"cache", 90 * time.Second, "60", 30 * time.Second}, {"10m", 10 * time.Minute, "", 0}} {
		t.Run(c.name, func(t *testing.T) {
			var asked []float64
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm()
				at, _ := strconv.ParseFloat(r.Form.Get("time"), 64)
				if r.URL.Path == "/api/v1/query" { // not the diagnosis's label reads
					mu.Lock()
					asked = append(asked, at)
					mu.Unlock()
				}
				w.Header().Set("Date", time.Now().Add(-c.behind).UTC().Format(http.TimeFormat))
				if c.age != "" {
					w.Header().Set("Age", c.age)
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
			}))
			defer srv.Close()
			src, err := NewPrometheusSourceFromRoundTripper(srv.URL, nil, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse([]byte("prometheus: {url: "+srv.URL+"}\ntargets:\n- name: chat\n  server: vllm\n  selector: '{pod=\"chat-0\"}'\n  metrics: [{type: queue, target: 24}]\n  max: 8\n"), "date.yaml")
			if err != nil {
				t.Fatal(err)
			}
			src.Read(t.Context(), []*config.Target{&cfg.Targets[0]}, time.Now())
			mu.Lock()
			asked = nil
			mu.Unlock()
			now := time.Now()
			src.Read(t.Context(), []*config.Target{&cfg.Targets[0]}, now)
			mu.Lock()
			defer mu.Unlock()
			if len(asked) == 0 {
				t.Fatal("no query asked")
			}
			want := float64(now.Add(-c.wantBack).UnixMilli()) / 1e3
			for _, at := range asked {
				if at > want+0.01 || at < want-1.5 {
					t.Errorf("evaluated at %.3f, want %.3f (%v back) within the Date header's second", at, want, c.wantBack)
				}
			}
		})
	}
}
