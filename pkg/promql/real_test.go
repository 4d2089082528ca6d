package promql

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/modelserver"
)

// fakePod serves a vLLM-shaped /metrics page. Each scrape adds one step to
// the TTFT histogram when ttft is set (cumulative buckets +5, +9, +10, +10
// for le 0.5, 1, 2, +Inf).
func fakePod(t testing.TB, page string, ttft bool) *httptest.Server {
	t.Helper()
	var scrapes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := scrapes.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, page)
		if ttft {
			fmt.Fprintln(w, "# TYPE vllm:time_to_first_token_seconds histogram")
			for _, b := range []struct {
				le  string
				inc int64
			}{{"0.5", 5}, {"1", 9}, {"2", 10}, {"+Inf", 10}} {
				fmt.Fprintf(w, "vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"m\",le=%q} %d\n", b.le, n*b.inc)
			}
			fmt.Fprintf(w, "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} %d\n", n*8)
			fmt.Fprintf(w, "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} %d\n", n*10)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRealPrometheus scrapes two fake vLLM pods with the real Prometheus
// (1 s scrapes) and reads them back through Client and Evaluate.
//
// chat-1 runs data parallel 2 (case 06): running 7+3, waiting 4+0, kv
// max(0.91, 0.35). chat-2: running 5, waiting 1, kv 0.5, and a TTFT
// histogram. By hand: running 15, waiting 5, kv (0.91+0.5)/2 = 0.705,
// reporting 2, current 2 (no replicas query), TTFT p95 = 1 + (9.5-9)/(10-9)
// = 1.5 s (every scrape adds the same bucket increments, so any rate
// window holds them in the ratio 5:9:10:10). A second target selects no
// pod: every signal is empty, not 0. Both targets share each query: 5
// queries (running, waiting, reporting, kv, ttft). Then Prometheus stops:
// every signal is unavailable.
func TestRealPrometheus(t *testing.T) {
	pod1 := fakePod(t, `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 7
vllm:num_requests_running{engine="1",model_name="m"} 3
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 4
vllm:num_requests_waiting{engine="1",model_name="m"} 0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.91
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.35
`, false)
	pod2 := fakePod(t, `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 5
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.5
`, true)
	prom := promtest.Start(t, promtest.Options{
		ScrapeInterval: time.Second,
		Targets: []promtest.Target{
			{URL: pod1.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "chat-1"}},
			{URL: pod2.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "chat-2"}},
		},
	})
	// Wait for both pods and for a 5 s rate window (>= 4 scrape intervals:
	// Prometheus 3 windows exclude their start) to hold TTFT samples.
	prom.WaitFor(t, `count(up{namespace="llm"} == 1)`, 30*time.Second, func(v model.Vector) bool {
		return len(v) == 1 && v[0].Value == 2
	})
	prom.WaitFor(t, `count_over_time(vllm:time_to_first_token_seconds_count[5s])`, 30*time.Second, func(v model.Vector) bool {
		return len(v) == 1 && v[0].Value >= 2
	})

	c, err := NewClient(ClientConfig{URL: prom.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	chat := sel(t, `{namespace="llm", pod=~"chat-.*"}`)
	chat.Name, chat.TTFTQuantile, chat.TTFTWindow = "chat", 0.95, 5*time.Second
	none := sel(t, `{namespace="llm", pod=~"code-.*"}`)
	none.Name = "code"
	ev := &Evaluator{API: c}
	res, st := ev.Evaluate(context.Background(), []Target{chat, none}, time.Now())

	o := res[0].Values
	if len(res[0].Errors) != 0 {
		t.Fatalf("chat errors: %v", res[0].Errors)
	}
	if !near(o[Running], 15) || !near(o[Waiting], 5) || !near(o[KV], 0.705) || o[Reporting] != 2 || o[Current] != 2 {
		t.Fatalf("chat: running %v waiting %v kv %v reporting %v current %v; want 15 5 0.705 2 2",
			o[Running], o[Waiting], o[KV], o[Reporting], o[Current])
	}
	if math.Abs(o[TTFT]-1.5) > 1e-6 {
		t.Fatalf("chat ttft %v, want 1.5", o[TTFT])
	}
	// Queued is asked only with Demand: both pods have a request waiting
	// (chat-1 4 + 0 over its engines, chat-2 1); code has no pod, a count
	// of none, 0.
	if !math.IsNaN(o[Queued]) {
		t.Errorf("queued without Demand: %v, want not asked (NaN)", o[Queued])
	}
	chatD, noneD := chat, none
	chatD.Demand, noneD.Demand = true, true
	resD, _ := ev.Evaluate(context.Background(), []Target{chatD, noneD}, time.Now())
	if q := resD[0].Values[Queued]; q != 2 || resD[0].Errors[Queued] != nil || resD[1].Values[Queued] != 0 || resD[1].Errors[Queued] != nil {
		t.Errorf("queued: chat %v (%v), code %v (%v); want 2 and 0", q, resD[0].Errors[Queued], resD[1].Values[Queued], resD[1].Errors[Queued])
	}
	for _, s := range []Signal{Running, Waiting, Reporting, KV} {
		if ReasonOf(res[1].Errors[s]) != ReasonEmpty {
			t.Errorf("code %s: %v, want empty", s, res[1].Errors[s])
		}
	}
	if !math.IsNaN(res[1].Values[Running]) || res[1].Errors[Current] == nil {
		t.Errorf("code: %+v, want NaN running and an unknown current", res[1].Values)
	}
	if st.Queries != 5 {
		t.Errorf("queries %d, want 5", st.Queries)
	}
	// Seven targets in one batch, chat's selector at 0, 3 and 6: the
	// or-tree nests them "(0 or (1 or 2)) or ((3 or 4) or (5 or 6))", and
	// each copy reads what chat read, the others nothing.
	var seven []Target
	for i := range 7 {
		tg := none
		if i%3 == 0 {
			tg = chat
		}
		tg.Name = fmt.Sprintf("t%d", i)
		seven = append(seven, tg)
	}
	res7, st7 := ev.Evaluate(context.Background(), seven, time.Now())
	for i, r := range res7 {
		if i%3 == 0 {
			if len(r.Errors) != 0 || !near(r.Values[Running], 15) || !near(r.Values[KV], 0.705) {
				t.Errorf("%s: %+v %v, want chat's running 15 and kv 0.705", r.Target, r.Values, r.Errors)
			}
		} else if ReasonOf(r.Errors[Running]) != ReasonEmpty {
			t.Errorf("%s running: %v, want empty", r.Target, r.Errors[Running])
		}
	}
	if st7.Queries != 5 {
		t.Errorf("seven targets: queries %d, want 5 (one batch per signal)", st7.Queries)
	}

	prom.Stop()
	res, _ = ev.Evaluate(context.Background(), []Target{chat}, time.Now())
	if ReasonOf(res[0].Errors[Running]) != ReasonUnavailable || !math.IsNaN(res[0].Values[Running]) {
		t.Fatalf("after stop: %v %v", res[0].Errors[Running], res[0].Values[Running])
	}
}

var _ = modelserver.VLLM

// BenchmarkRealPrometheus1000Targets runs one cycle's batched queries for
// 1,000 vLLM targets (two of which have pods) against the real Prometheus:
// the server's cost of parsing and evaluating ~210 KB or-trees.
func BenchmarkRealPrometheus1000Targets(b *testing.B) { benchRealPrometheus(b, 1000) }

// BenchmarkRealPrometheus10000Targets is the same at 10,000 targets, one
// batch of about 2.6 MB per signal: what serve asks of Prometheus each
// cycle at 10,000 targets (as an or-chain, 10,000 deep, Prometheus took
// about 20 s a query).
func BenchmarkRealPrometheus10000Targets(b *testing.B) { benchRealPrometheus(b, 10000) }

func benchRealPrometheus(b *testing.B, n int) {
	last := fmt.Sprintf("t%d-a", n-1)
	pod := fakePod(b, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} 3\n", true)
	prom := promtest.Start(b, promtest.Options{Targets: []promtest.Target{
		{URL: pod.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "t0-a"}},
		{URL: pod.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": last}},
	}})
	prom.WaitFor(b, `count(up == 1)`, 30*time.Second, func(v model.Vector) bool { return len(v) == 1 && v[0].Value == 2 })
	c, err := NewClient(ClientConfig{URL: prom.URL, Timeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	plan := NewPlan(manyTargets(n), Options{}, 0)
	ev := &Evaluator{API: c}
	for b.Loop() {
		res, st := ev.Run(context.Background(), plan, time.Now())
		if res[n-1].Values[Running] != 3 || res[0].Values[Running] != 3 || st.Queries != plan.Queries() {
			b.Fatalf("t0, t%d: %+v %+v %v, queries %d", n-1, res[0].Values, res[n-1].Values, res[n-1].Errors, st.Queries)
		}
	}
	b.ReportMetric(float64(plan.Queries()), "queries/cycle")
}
