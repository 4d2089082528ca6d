package promql

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
)

// TestBuildStuck prints the stuck-pods shape for vLLM (the documented
// query; docs/promql.md) and leaves it out unless asked for.
func TestBuildStuck(t *testing.T) {
	tg := sel(t, `{namespace="llm"}`)
	qs, err := Build(tg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := qs[Stuck]; ok {
		t.Fatalf("stuck built without Target.Stuck: %s", qs[Stuck])
	}
	tg.Stuck = true
	qs, err = Build(tg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The printer parenthesises each binary operand of and (helper paren()).
	// The last operand asks that requests already waited at the window's
	// start (a minimum sees only the samples inside the window).
	want := `count((((sum by (pod) (max by (namespace, pod, engine, dp_rank, tp_rank, pp_rank, model_name, name, model) (min_over_time(vllm:num_requests_waiting{namespace="llm",server=""}[2m]))) and on (pod) (up{namespace="llm",pod!=""} == 1)) > 0) and on (pod) (max by (pod) (increase(vllm:generation_tokens_total{namespace="llm",server=""}[2m])) == 0)) and on (pod) (vllm:num_requests_waiting{namespace="llm",server=""} offset 2m > 0))`
	if got := qs[Stuck]; got != want {
		t.Errorf("stuck query\n got %s\nwant %s", got, want)
	}
	// The stuck pods' waiting is the waiting total's shape "and on (pod)" them.
	inner := strings.TrimSuffix(strings.TrimPrefix(want, "count("), ")")
	wantW := `sum((sum by (pod) (max by (namespace, pod, engine, dp_rank, tp_rank, pp_rank, model_name, name, model) (vllm:num_requests_waiting{namespace="llm",server=""})) and on (pod) (up{namespace="llm",pod!=""} == 1)) and on (pod) (` + inner + `))`
	if got := qs[StuckWaiting]; got != wantW {
		t.Errorf("stuck_waiting query\n got %s\nwant %s", got, wantW)
	}
	// An override owns the waiting total: stuck pods are counted, not subtracted.
	tg.Overrides = map[Signal]string{Waiting: `sum(my_gateway_queue)`}
	if qs, _ := Build(tg, Options{}); qs[Stuck] == "" || qs[StuckWaiting] != "" {
		t.Errorf("with a waiting override: %v, want stuck only", qs)
	}
}

// TestEngineStuck evaluates the shape with Prometheus's engine at 10 min,
// window 2 min (samples every 15 s), on five live pods:
//   - stuck:   waiting 6, running 0, counters flat at 100 / 500 (C18, #479);
//   - stuck14: running 1, waiting 14, counters flat (llm-scaler #391), on two
//     engines and scraped by both members of an HA pair;
//   - busy:    waiting 3 but the generation counter grows 40 per scrape;
//   - burst:   idle (waiting 0) until the last scrape, where 5 arrive: it did
//     not wait through the window;
//   - fresh:   waiting 2, no token counter yet (C09: exported after the
//     first request): unknown, not stuck.
//
// By hand: stuck and stuck14 are stuck: 2. Totals over the 5 live pods:
// running 0 + 1 (HA pair deduplicated) + 8 + 0 = 9, waiting 6 + 14 + 3 + 5
// + 2 = 30, reporting 5 (pods with a running series). The stuck pods'
// waiting: 6 + 14 = 20.
func TestEngineStuck(t *testing.T) {
	api := newEngineAPI(t, `
  vllm:num_requests_waiting{pod="stuck"} 6x40
  vllm:num_requests_running{pod="stuck"} 0x40
  vllm:prompt_tokens_total{pod="stuck"} 100x40
  vllm:generation_tokens_total{pod="stuck"} 500x40
  vllm:num_requests_waiting{pod="stuck14",engine="0",replica="A"} 14x40
  vllm:num_requests_waiting{pod="stuck14",engine="1",replica="A"} 0x40
  vllm:num_requests_waiting{pod="stuck14",engine="0",replica="B"} 14x40
  vllm:num_requests_waiting{pod="stuck14",engine="1",replica="B"} 0x40
  vllm:num_requests_running{pod="stuck14",engine="0",replica="A"} 1x40
  vllm:num_requests_running{pod="stuck14",engine="0",replica="B"} 1x40
  vllm:prompt_tokens_total{pod="stuck14",engine="0",replica="A"} 7x40
  vllm:prompt_tokens_total{pod="stuck14",engine="0",replica="B"} 7x40
  vllm:generation_tokens_total{pod="stuck14",engine="0",replica="A"} 9x40
  vllm:generation_tokens_total{pod="stuck14",engine="0",replica="B"} 9x40
  vllm:num_requests_waiting{pod="busy"} 3x40
  vllm:num_requests_running{pod="busy"} 8x40
  vllm:prompt_tokens_total{pod="busy"} 100x40
  vllm:generation_tokens_total{pod="busy"} 0+40x40
  vllm:num_requests_waiting{pod="burst"} 0x39 5
  vllm:num_requests_running{pod="burst"} 0x40
  vllm:prompt_tokens_total{pod="burst"} 100x40
  vllm:generation_tokens_total{pod="burst"} 500x40
  vllm:num_requests_waiting{pod="fresh"} 2x40
  vllm:num_requests_running{pod="fresh"} 0x40
  up{pod="stuck"} 1x40
  up{pod="stuck14",replica="A"} 1x40
  up{pod="stuck14",replica="B"} 1x40
  up{pod="busy"} 1x40
  up{pod="burst"} 1x40
  up{pod="fresh"} 1x40
`)
	tg := Target{Name: "chat", Server: modelserver.VLLM, Selector: sel(t, `{pod=~".+"}`).Selector, Stuck: true}
	r := evalOne(t, api, tg, Options{})
	if r.Stuck != 2 || r.Errors[Stuck] != nil || r.Errors[StuckWaiting] != nil {
		t.Fatalf("stuck %v (errors %v), want 2", r.Stuck, r.Errors) // kv has no series here: empty
	}
	// The totals as read; pkg/serve leaves the stuck pods out
	// (TestPromObservationStuck).
	if o := r.Values; o[Running] != 9 || o[Waiting] != 30 || o[StuckWaiting] != 20 || o[Reporting] != 5 {
		t.Fatalf("running %v waiting %v stuck_waiting %v reporting %v, want 9 30 20 5", o[Running], o[Waiting], o[StuckWaiting], o[Reporting])
	}
	// Without Target.Stuck: not asked, NaN, no error.
	tg.Stuck = false
	if r := evalOne(t, api, tg, Options{}); !math.IsNaN(r.Stuck) || r.Errors[Stuck] != nil ||
		r.Values[Running] != 9 || r.Values[Waiting] != 30 || r.Values[Reporting] != 5 {
		t.Fatalf("not asked: stuck %v error %v, %+v; want NaN, none, running 9 waiting 30 reporting 5", r.Stuck, r.Errors[Stuck], r.Values)
	}
	// Only stuck pods report: 2 stuck of 2 reporting, their waiting all
	// of it (pkg/serve then lets none vote).
	tg = Target{Name: "stuck", Server: modelserver.VLLM, Selector: sel(t, `{pod=~"stuck|stuck14"}`).Selector, Stuck: true}
	if r := evalOne(t, api, tg, Options{}); r.Stuck != 2 || r.Values[Reporting] != 2 || r.Values[Waiting] != 20 || r.Values[StuckWaiting] != 20 {
		t.Fatalf("all stuck: stuck %v, %+v; want 2, reporting 2, waiting and stuck_waiting 20", r.Stuck, r.Values)
	}
	// No pod stuck: count() of nothing is no series, read as 0.
	tg = Target{Name: "busy", Server: modelserver.VLLM, Selector: sel(t, `{pod="busy"}`).Selector, Stuck: true}
	if r := evalOne(t, api, tg, Options{}); r.Stuck != 0 || r.Errors[Stuck] != nil {
		t.Fatalf("busy only: stuck %v error %v, want 0", r.Stuck, r.Errors[Stuck])
	}
	// Three targets in one Evaluate: the first round is one query per
	// signal (running, waiting, reporting, kv, stuck: 5); the stuck pods'
	// waiting is asked in a second round only for the two targets with a
	// stuck pod, as one batched query: 6 in all. By hand: "stuck" alone:
	// waiting 6, all of it stuck; "stuck14" with "busy": waiting 14 + 3 =
	// 17, 14 of it stuck, reporting 2; "busy": 3, none stuck (not asked).
	api.queries = 0
	ts := []Target{
		{Name: "a", Server: modelserver.VLLM, Selector: sel(t, `{pod="stuck"}`).Selector, Stuck: true},
		{Name: "b", Server: modelserver.VLLM, Selector: sel(t, `{pod=~"stuck14|busy"}`).Selector, Stuck: true},
		{Name: "c", Server: modelserver.VLLM, Selector: sel(t, `{pod="busy"}`).Selector, Stuck: true},
	}
	res, st := (&Evaluator{API: api}).Evaluate(context.Background(), ts, at)
	if st.Queries != 6 || api.queries != 6 {
		t.Errorf("queries %d (api saw %d), want 6", st.Queries, api.queries)
	}
	if r := res[0]; r.Stuck != 1 || r.Values[Waiting] != 6 || r.Values[StuckWaiting] != 6 {
		t.Errorf("a: stuck %v %+v, want 1, waiting and stuck_waiting 6", r.Stuck, r.Values)
	}
	if r := res[1]; r.Stuck != 1 || r.Values[Waiting] != 17 || r.Values[StuckWaiting] != 14 || r.Values[Reporting] != 2 {
		t.Errorf("b: stuck %v %+v, want 1, waiting 17, stuck_waiting 14, reporting 2", r.Stuck, r.Values)
	}
	if r := res[2]; r.Stuck != 0 || r.Values[Waiting] != 3 || !math.IsNaN(r.Values[StuckWaiting]) || r.Values[Reporting] != 1 {
		t.Errorf("c: stuck %v %+v, want 0, waiting 3, stuck_waiting unknown, reporting 1", r.Stuck, r.Values)
	}
	if !strings.Contains(Stuck.String(), "stuck") {
		t.Errorf("Stuck.String() = %q", Stuck.String())
	}
}
