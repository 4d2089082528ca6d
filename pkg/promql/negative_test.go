package promql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// negativeSeries: target chat's pods a and b run 50 and -40 (a broken
// exporter), wait 0 and 0, use 0.5 and -0.3 of their KV cache; its pod c
// runs -5 but its scrape is down (up 0: not a live pod, not summed, not
// refused). Target code's pods run 3 and 4, wait 1 and 0, KV 0.2 and 0.4.
const negativeSeries = `
  vllm:num_requests_running{namespace="llm",pod="chat-a",engine="0"} 50x40
  vllm:num_requests_running{namespace="llm",pod="chat-b",engine="0"} -40x40
  vllm:num_requests_running{namespace="llm",pod="chat-c",engine="0"} -5x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-a",engine="0"} 0x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-b",engine="0"} 0x40
  vllm:kv_cache_usage_perc{namespace="llm",pod="chat-a",engine="0"} 0.5x40
  vllm:kv_cache_usage_perc{namespace="llm",pod="chat-b",engine="0"} -0.3x40
  vllm:num_requests_running{namespace="llm",pod="code-a",engine="0"} 3x40
  vllm:num_requests_running{namespace="llm",pod="code-b",engine="0"} 4x40
  vllm:num_requests_waiting{namespace="llm",pod="code-a",engine="0"} 1x40
  vllm:num_requests_waiting{namespace="llm",pod="code-b",engine="0"} 0x40
  vllm:kv_cache_usage_perc{namespace="llm",pod="code-a",engine="0"} 0.2x40
  vllm:kv_cache_usage_perc{namespace="llm",pod="code-b",engine="0"} 0.4x40
  up{namespace="llm",pod="chat-a"} 1x40
  up{namespace="llm",pod="chat-b"} 1x40
  up{namespace="llm",pod="chat-c"} 0x40
  up{namespace="llm",pod="code-a"} 1x40
  up{namespace="llm",pod="code-b"} 1x40
`

// TestEngineNegativePodRefused: a live pod's running of -40 beside one of
// 50 summed to 10 and was read as load; a KV usage of -0.3 beside 0.5
// averaged to 0.1 (read as a cache a tenth used). Both are
// refused as NaN is (reason nan, the signal unknown), the error naming
// the pod and its value, in the batched and in the one-target path alike;
// the dead pod c's -5 is neither summed nor refused. Target code, in the
// same batches, reads 3 + 4 = 7 running, 1 + 0 = 1 waiting, KV (0.2 +
// 0.4) / 2 = 0.3. The queries that name the series are sent only for the
// signals read below 0: 2 more (running, kv) in the cycle.
func TestEngineNegativePodRefused(t *testing.T) {
	api := newEngineAPI(t, negativeSeries)
	chat, code := sel(t, `{namespace="llm", pod=~"chat-.*"}`), sel(t, `{namespace="llm", pod=~"code-.*"}`)
	for _, batch := range []int{0, 1} {
		t.Run(fmt.Sprintf("batch%d", batch), func(t *testing.T) {
			ev := &Evaluator{API: api, BatchSize: batch}
			plan := NewPlan([]Target{chat, code}, Options{}, batch)
			res, st := ev.Run(context.Background(), plan, at)
			if st.Queries != plan.Queries()+2 {
				t.Errorf("queries %d, want the plan's %d + 2 naming chat's series (running, kv)", st.Queries, plan.Queries())
			}
			for _, c := range []struct {
				s    Signal
				want string
			}{
				{Running, `negative value -40: vllm:num_requests_running{engine="0", namespace="llm", pod="chat-b"} -40 (a live pod's series of running below 0, which the sum over pods would hide`},
				{KV, `negative value -0.3: vllm:kv_cache_usage_perc{engine="0", namespace="llm", pod="chat-b"} -0.3 (a live pod's series of kv below 0, which the average over pods would hide`},
			} {
				err := res[0].Errors[c.s]
				var nv negativeValue
				if ReasonOf(err) != ReasonNaN || !math.IsNaN(res[0].Values[c.s]) || !errors.As(err, &nv) || float64(nv) >= 0 {
					t.Errorf("chat %s: %v %v, want unknown, reason nan, a negative value", c.s, res[0].Values[c.s], err)
					continue
				}
				if !strings.Contains(err.Error(), c.want) {
					t.Errorf("chat %s: %v\nwant it to say %q", c.s, err, c.want)
				}
				if strings.Contains(err.Error(), "chat-c") || strings.Contains(err.Error(), "chat-a") {
					t.Errorf("chat %s: %v names another pod than chat-b", c.s, err)
				}
			}
			if v := res[0].Values; v[Waiting] != 0 || v[Reporting] != 2 || res[0].Errors[Waiting] != nil {
				t.Errorf("chat: waiting %v (%v), reporting %v; want 0 and 2", v[Waiting], res[0].Errors[Waiting], v[Reporting])
			}
			if v := res[1].Values; v[Running] != 7 || v[Waiting] != 1 || !near(v[KV], 0.3) || len(res[1].Errors) != 0 {
				t.Errorf("code: %v %v, want running 7, waiting 1, kv 0.3", v, res[1].Errors)
			}
		})
	}
}

// TestEngineNegativePodsNamedLowestFirst: four live pods below 0 (-1, -7,
// -3, -2) and one at 20: running reads min -7; the error names the three
// lowest, -7, -3, -2, and "1 more series".
func TestEngineNegativePodsNamedLowestFirst(t *testing.T) {
	var b strings.Builder
	for i, v := range []int{-1, -7, -3, -2, 20} {
		fmt.Fprintf(&b, "  vllm:num_requests_running{namespace=\"llm\",pod=\"p%d\"} %dx40\n  up{namespace=\"llm\",pod=\"p%d\"} 1x40\n", i, v, i)
	}
	r := evalOne(t, newEngineAPI(t, b.String()), sel(t, `{namespace="llm"}`), Options{})
	want := `negative value -7: vllm:num_requests_running{namespace="llm", pod="p1"} -7, vllm:num_requests_running{namespace="llm", pod="p2"} -3, vllm:num_requests_running{namespace="llm", pod="p3"} -2 and 1 more series (`
	if err := r.Errors[Running]; ReasonOf(err) != ReasonNaN || !strings.Contains(fmt.Sprint(err), want) {
		t.Errorf("running: %v\nwant it to say %q", err, want)

	}
}

// failNaming is engineAPI whose queries naming the series (`... < 0`
// without the guard's `or`) fail, as a Prometheus gone between two queries.
type failNaming struct{ *engineAPI }

func (f failNaming) Instant(ctx context.Context, q string, ts time.Time) (model.Vector, []string, error) {
	if strings.HasSuffix(q, " < 0") {
		return nil, nil, &QueryError{Reason: ReasonUnavailable, Query: q, Err: errors.New("connection refused")}
	}
	return f.engineAPI.Instant(ctx, q, ts)
}

// TestEngineNegativePodNamingFails: the query naming the series fails; the
// signal is still refused (reason nan, the value read), the error saying
// it could not name them.
func TestEngineNegativePodNamingFails(t *testing.T) {
	r := evalOne(t, failNaming{newEngineAPI(t, negativeSeries)}, sel(t, `{namespace="llm", pod=~"chat-.*"}`), Options{})
	want := "negative value -40: a live pod's series of running below 0 (the query naming it failed: "
	if err := r.Errors[Running]; ReasonOf(err) != ReasonNaN || !strings.Contains(fmt.Sprint(err), want) {
		t.Errorf("running: %v\nwant reason nan, saying %q", err, want)
	}
}

// TestEngineNegativeEngineRefused: a vLLM pod with data parallel 2 whose
// engine 1 says running -3 beside engine 0's 5: the pod's sum, 2, hid it
// (as a pod's does in the total); refused, naming the engine. The other
// pod's two engines, 4 and 0, are fine.
func TestEngineNegativeEngineRefused(t *testing.T) {
	api := newEngineAPI(t, `
  vllm:num_requests_running{namespace="llm",pod="dp-a",engine="0"} 5x40
  vllm:num_requests_running{namespace="llm",pod="dp-a",engine="1"} -3x40
  vllm:num_requests_running{namespace="llm",pod="dp-b",engine="0"} 4x40
  vllm:num_requests_running{namespace="llm",pod="dp-b",engine="1"} 0x40
  up{namespace="llm",pod="dp-a"} 1x40
  up{namespace="llm",pod="dp-b"} 1x40
`)
	r := evalOne(t, api, sel(t, `{namespace="llm"}`), Options{})
	want := `negative value -3: vllm:num_requests_running{engine="1", namespace="llm", pod="dp-a"} -3 (`
	if err := r.Errors[Running]; ReasonOf(err) != ReasonNaN || !strings.Contains(fmt.Sprint(err), want) || r.Values[Reporting] != 2 {
		t.Errorf("running: %v (reporting %v)\nwant reason nan, saying %q, 2 pods reporting", err, r.Values[Reporting], want)
	}
}
