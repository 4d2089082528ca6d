package promql

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/modelserver"
)

// TestEngineRouterSeriesNotReplicas: the vLLM production-stack router
// exports its own view of each engine behind it under vLLM's names,
// vllm:num_requests_running{server="http://<engine>:8000"} (and waiting),
// from the router's pod (vllm-project/production-stack
// src/vllm_router/services/metrics_service). A selector of the namespace
// ({namespace="llm"}, as its KEDA and prometheus-adapter tutorials query)
// matches them too. Two engines run 7 and 5 with 4 and 1 waiting; the
// router says the same per server. By hand: running 12, waiting 5, 2
// replicas reporting; the router is no replica and its series are
// copies.
func TestEngineRouterSeriesNotReplicas(t *testing.T) {
	api := newEngineAPI(t, `
  vllm:num_requests_running{namespace="llm",pod="chat-1",model_name="m"} 7x40
  vllm:num_requests_running{namespace="llm",pod="chat-2",model_name="m"} 5x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-1",model_name="m"} 4x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-2",model_name="m"} 1x40
  vllm:kv_cache_usage_perc{namespace="llm",pod="chat-1",model_name="m"} 0.5x40
  vllm:kv_cache_usage_perc{namespace="llm",pod="chat-2",model_name="m"} 0.3x40
  vllm:num_requests_running{namespace="llm",pod="vllm-router-7d9",server="http://10.0.0.1:8000"} 7x40
  vllm:num_requests_running{namespace="llm",pod="vllm-router-7d9",server="http://10.0.0.2:8000"} 5x40
  vllm:num_requests_waiting{namespace="llm",pod="vllm-router-7d9",server="http://10.0.0.1:8000"} 4x40
  vllm:num_requests_waiting{namespace="llm",pod="vllm-router-7d9",server="http://10.0.0.2:8000"} 1x40
  up{namespace="llm",pod="chat-1"} 1x40
  up{namespace="llm",pod="chat-2"} 1x40
  up{namespace="llm",pod="vllm-router-7d9"} 1x40
`)
	r := evalOne(t, api, sel(t, `{namespace="llm"}`), Options{})
	o := r.Values
	if !near(o[Running], 12) || !near(o[Waiting], 5) || o[Reporting] != 2 || !near(o[KV], 0.4) {
		t.Fatalf("running %v waiting %v reporting %v kv %v; want 12 5 2 0.4 (errors %v)", o[Running], o[Waiting], o[Reporting], o[KV], r.Errors)
	}
}

// TestEngineRouterServerMatcherKept: a selector that names the server
// label itself is the user's word that their engines' series carry it:
// it is kept as given (no server="" added), and reads those series.
func TestEngineRouterServerMatcherKept(t *testing.T) {
	api := newEngineAPI(t, `
  vllm:num_requests_running{namespace="llm",pod="chat-1",server="a"} 7x40
  vllm:num_requests_running{namespace="llm",pod="chat-2",server="a"} 5x40
  up{namespace="llm",pod="chat-1"} 1x40
  up{namespace="llm",pod="chat-2"} 1x40
`)
	r := evalOne(t, api, sel(t, `{namespace="llm",server="a"}`), Options{})
	if o := r.Values; !near(o[Running], 12) || o[Reporting] != 2 {
		t.Fatalf("running %v reporting %v; want 12 and 2 (errors %v)", o[Running], o[Reporting], r.Errors)
	}
}

// TestEngineEPPHeldHADuplicates: the EPP's flow-control queue (the
// requests it holds, Held: what wakes a pool at zero) read through an HA
// Prometheus pair queried without dedup (Thanos, Mimir, federation)
// comes back twice, replica="A" and "B". Each EPP replica's queue adds
// up (two flows here: 4 + 2), the copies of one do not: held 6, not 12.
// The arrivals of the same shape already dropped the replica labels.
func TestEngineEPPHeldHADuplicates(t *testing.T) {
	api := newEngineAPI(t, `
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="a",priority="0",replica="A"} 4x40
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="b",priority="0",replica="A"} 2x40
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="a",priority="0",replica="B"} 4x40
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="b",priority="0",replica="B"} 2x40
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="epp-1",replica="A"} 0x40
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="epp-1",replica="B"} 0x40
`)
	tg := sel(t, `{namespace="llm",service="chat-epp"}`)
	tg.Server, tg.FlowControlHeld = modelserver.EPP, true
	r := evalOne(t, api, tg, Options{})
	if v := r.Values[Held]; !near(v, 6) {
		t.Fatalf("held %v, want 6 (errors %v)", v, r.Errors)
	}
}

// TestEngineEPPHeldMixedRouters: two EPP replicas of one pool mid-rollout,
// epp-1 a current router (it writes each flow under both names, dual
// emission, same labels) holding 1, epp-2 an older one (the deprecated
// name only) holding 2. Embedded mode reads each page's own family, the
// current name else the twin, and sums the pages: 1 + 2 = 3. The twins
// were chosen for the whole query (sum(current) or sum(deprecated)): the
// current name's sum existed, so epp-2's 2 held were dropped and 1 was
// read (0 had epp-1 held nothing: the pool stayed at zero with 2 waiting).
// Chosen series by series, epp-1's twin copy is its current series (same
// labels) and counts once: 3, not 4.
func TestEngineEPPHeldMixedRouters(t *testing.T) {
	api := newEngineAPI(t, `
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="a",priority="0"} 1x40
  inference_extension_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="a",priority="0"} 1x40
  inference_extension_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-2",fairness_id="a",priority="0"} 2x40
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="epp-1"} 0x40
  inference_pool_ready_pods{namespace="llm",service="chat-epp",pod="epp-1"} 0x40
  inference_pool_ready_pods{namespace="llm",service="chat-epp",pod="epp-2"} 0x40
`)
	tg := sel(t, `{namespace="llm",service="chat-epp"}`)
	tg.Server, tg.FlowControlHeld = modelserver.EPP, true
	r := evalOne(t, api, tg, Options{})
	if v := r.Values[Held]; !near(v, 3) {
		t.Fatalf("held %v, want 1 + 2 = 3 (errors %v)", v, r.Errors)
	}
}

// TestEngineEPPHeldPerFlow: the router's flow-control gauge is one series
// per flow, and only a flow's own series dips below 0 (after its garbage
// collection). A pool at zero holds 2 requests in flow "a" beside flow "gc"
// at -3 (each copied by an HA pair): clamp_min(sum(...), 0) read
// max(2 - 3, 0) = 0 held, and the pool stayed at zero with 2 requests
// waiting. Each flow is clamped before the sum, as embedded mode reads a
// page: max(2, 0) + max(-3, 0) = 2.
func TestEngineEPPHeldPerFlow(t *testing.T) {
	api := newEngineAPI(t, `
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="a",priority="0",replica="A"} 2x40
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="gc",priority="0",replica="A"} -3x40
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="a",priority="0",replica="B"} 2x40
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="gc",priority="0",replica="B"} -3x40
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="epp-1",replica="A"} 0x40
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="epp-1",replica="B"} 0x40
`)
	tg := sel(t, `{namespace="llm",service="chat-epp"}`)
	tg.Server, tg.FlowControlHeld = modelserver.EPP, true
	r := evalOne(t, api, tg, Options{})
	if v := r.Values[Held]; !near(v, 2) {
		t.Fatalf("held %v, want 2 (errors %v)", v, r.Errors)
	}
}

// TestEngineEPPHeldNaNFlow: Prometheus mode reads the flow-control queue
// by embedded mode's rule (pkg/scrape's readFlowQueue) on a flow that is
// NaN: held unknown, not the finite flow's 2 (clamp_min keeps NaN, and so
// does the sum: ReasonNaN). What it cannot check, PromQL seeing values and
// not # TYPE lines: a family declared a counter is read as the gauge it
// should be (embedded mode refuses it, ErrWrongType); and its bound is
// the sum's (MaxInFlight), not each flow's billion either way.
func TestEngineEPPHeldNaNFlow(t *testing.T) {
	api := newEngineAPI(t, `
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="a",priority="0"} 2x40
  llm_d_epp_flow_control_queue_size{namespace="llm",service="chat-epp",pod="epp-1",fairness_id="b",priority="0"} `+strings.Repeat("NaN ", 41)+`
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="epp-1"} 0x40
`)
	tg := sel(t, `{namespace="llm",service="chat-epp"}`)
	tg.Server, tg.FlowControlHeld = modelserver.EPP, true
	r := evalOne(t, api, tg, Options{})
	if v := r.Values[Held]; !math.IsNaN(v) {
		t.Fatalf("held %v, want unknown (errors %v)", v, r.Errors)
	}
	if ReasonOf(r.Errors[Held]) != ReasonNaN {
		t.Errorf("held error %v, want reason %s", r.Errors[Held], ReasonNaN)
	}
}

// TestEngineEPPPageLabelsDropped: pool_series tells one scraped page from
// another by job, instance and pod. A relabel that drops instance and pod
// (keeping the pod's name under another label, kubernetes_pod_name here)
// leaves two EPP replicas of pool chat, 4 ready averaging 2.5 each, as one
// page's two series of each gauge: refused (every signal unknown,
// ambiguous), never read silently, and the error says that no instance or
// pod label tells them apart and how to keep one. With pod kept, the same
// series read round(2.5 x 4) = 10 running. (A relabel that leaves nothing
// apart makes the replicas one series in Prometheus's TSDB, their samples
// interleaved: no query can see two pages in it; docs/llm-d.md.)
func TestEngineEPPPageLabelsDropped(t *testing.T) {
	load := func(podLabel string) string {
		var b strings.Builder
		for _, pod := range []string{"epp-1", "epp-2"} {
			l := `namespace="llm",service="chat-epp",` + podLabel + `="` + pod + `",name="chat"`
			b.WriteString("  llm_d_epp_ready_endpoints{" + l + "} 4x40\n")
			b.WriteString("  llm_d_epp_average_running_requests{" + l + "} 2.5x40\n")
			b.WriteString("  llm_d_epp_average_queue_size{" + l + "} 0x40\n")
		}
		return b.String()
	}
	tg := sel(t, `{namespace="llm",service="chat-epp"}`)
	tg.Server = modelserver.EPP
	r := evalOne(t, newEngineAPI(t, load("kubernetes_pod_name")), tg, Options{})
	err := r.Errors[Running]
	want := `llm_d_epp_average_queue_size has two series that no instance or pod label tells apart {}, differing in kubernetes_pod_name ("epp-1", "epp-2")`
	if v := r.Values[Running]; !math.IsNaN(v) || ReasonOf(err) != ReasonAmbiguous || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), "if kubernetes_pod_name names the EPP's pod, relabel it to pod") {
		t.Errorf("pod label dropped: running %v (%v); want unknown, ambiguous, with %q", v, err, want)
	}
	r = evalOne(t, newEngineAPI(t, load("pod")), tg, Options{})
	if v := r.Values[Running]; v != 10 || r.Errors[Running] != nil {
		t.Errorf("pod label kept: running %v (%v), want 10", v, r.Errors[Running])
	}
}

// detailFails answers every query through api but the pool_series detail
// query (a bare {__name__=~...} selector), which fails as a Prometheus
// that times out does.
type detailFails struct{ *engineAPI }

func (d detailFails) Instant(ctx context.Context, q string, ts time.Time) (model.Vector, []string, error) {
	if strings.HasPrefix(q, `{__name__=~`) {
		return nil, nil, &QueryError{Reason: ReasonTimeout, Query: q, Err: errors.New("query timed out")}
	}
	return d.engineAPI.Instant(ctx, q, ts)
}

// TestEngineEPPPoolSeriesDetailFails: the query that names the series of
// a target whose pool_series count is above 1 fails. Only that target is
// affected: doubled (flows of pools chat and code: count 2) has every
// signal unknown, not held alone, because the count cannot say which part
// is above 1 (a pool gauge doubled reads its larger series as the pool's:
// every signal; flows of two pools: held), and guessing held would let a
// doubled gauge through silently; the error gives the count and the
// query's error, the target keeps its last decision for the cycle
// (no-data) and the next cycle asks again. good, in the same batch, reads
// its pool: round(2.5 x 4) = 10 running, 1 held.
func TestEngineEPPPoolSeriesDetailFails(t *testing.T) {
	api := detailFails{newEngineAPI(t, `
  llm_d_epp_ready_endpoints{namespace="llm",service="doubled-epp",pod="d-1",name="chat"} 3x40
  llm_d_epp_average_running_requests{namespace="llm",service="doubled-epp",pod="d-1",name="chat"} 4x40
  llm_d_epp_flow_control_queue_size{namespace="llm",service="doubled-epp",pod="d-1",inference_pool="chat",fairness_id="a",priority="0"} 3x40
  llm_d_epp_flow_control_queue_size{namespace="llm",service="doubled-epp",pod="d-1",inference_pool="code",fairness_id="b",priority="0"} 2x40
  llm_d_epp_ready_endpoints{namespace="llm",service="good-epp",pod="g-1",name="good"} 4x40
  llm_d_epp_average_running_requests{namespace="llm",service="good-epp",pod="g-1",name="good"} 2.5x40
  llm_d_epp_average_queue_size{namespace="llm",service="good-epp",pod="g-1",name="good"} 0x40
  llm_d_epp_average_kv_cache_utilization{namespace="llm",service="good-epp",pod="g-1",name="good"} 0.5x40
  llm_d_epp_flow_control_queue_size{namespace="llm",service="good-epp",pod="g-1",inference_pool="good",fairness_id="a",priority="0"} 1x40
`)}
	var tgs []Target
	for _, name := range []string{"doubled", "good"} {
		tg := sel(t, `{namespace="llm",service="`+name+`-epp"}`)
		tg.Name, tg.Server, tg.FlowControlHeld = name, modelserver.EPP, true
		tgs = append(tgs, tg)
	}
	res, _ := (&Evaluator{API: api}).Evaluate(context.Background(), tgs, at)
	d := res[0]
	for _, s := range []Signal{Running, Current, Held} {
		err := d.Errors[s]
		if !math.IsNaN(d.Values[s]) || ReasonOf(err) != ReasonAmbiguous || !strings.Contains(err.Error(), `target "doubled": 2 series of one EPP pool gauge on one page, or flow-control series of 2 InferencePools (the series could not be read to name them:`) ||
			!strings.Contains(err.Error(), "query timed out") {
			t.Errorf("doubled %s %v (%v): want unknown, ambiguous, with the count and the query's error", s, d.Values[s], err)
		}
	}
	if g := res[1]; len(g.Errors) != 0 || g.Values[Running] != 10 || g.Values[Held] != 1 {
		t.Errorf("good running %v held %v (%v), want 10 and 1", g.Values[Running], g.Values[Held], g.Errors)
	}
}

// TestEngineEPPTwoPools: two InferencePools' Endpoint Pickers in one
// namespace, chat (4 ready endpoints averaging 10 running) and code (1
// ready at 2), and a selector of the namespace alone. max() mixed them:
// round(10 x 4) = 40 running on 4 replicas, the code pool's load lost, or
// as read in another cycle one pool's count with the other's average.
// Every signal is unknown and says why, as embedded mode refuses the pages
// of two pools; a selector of one EPP's service reads its pool (by hand:
// running round(10 x 4) = 40, waiting round(0.5 x 4) = 2, 4 reporting).
func TestEngineEPPTwoPools(t *testing.T) {
	api := newEngineAPI(t, `
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat"} 4x40
  llm_d_epp_average_running_requests{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat"} 10x40
  llm_d_epp_average_queue_size{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat"} 0.5x40
  llm_d_epp_average_kv_cache_utilization{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat"} 0.6x40
  llm_d_epp_ready_endpoints{namespace="llm",service="code-epp",pod="code-epp-1",name="code"} 1x40
  llm_d_epp_average_running_requests{namespace="llm",service="code-epp",pod="code-epp-1",name="code"} 2x40
  llm_d_epp_average_queue_size{namespace="llm",service="code-epp",pod="code-epp-1",name="code"} 0x40
  llm_d_epp_average_kv_cache_utilization{namespace="llm",service="code-epp",pod="code-epp-1",name="code"} 0.1x40
`)
	r := eppEval(t, api, `{namespace="llm"}`)
	wantTwoPools(t, r, Running, Waiting, Reporting, KV, Current)
	r = eppEval(t, api, `{namespace="llm",service="chat-epp"}`)
	if o := r.Values; o[Running] != 40 || o[Waiting] != 2 || o[Reporting] != 4 || o[Current] != 4 || !near(o[KV], 0.6) {
		t.Errorf("one pool: running %v waiting %v reporting %v current %v kv %v, want 40 2 4 4 0.6 (errors %v)", o[Running], o[Waiting], o[Reporting], o[Current], o[KV], r.Errors)
	}
	if r.Errors[Pools] != nil {
		t.Errorf("one pool: pools error %v", r.Errors[Pools])
	}
}

// TestEngineEPPTwoPoolsOneDeprecated: two InferencePools' Endpoint
// Pickers in one namespace, alpha's a current router (both names: dual
// emission, 3 ready endpoints averaging 4 running) and beta's an older one
// writing only the deprecated inference_pool_ names (1 ready at 1). The
// pools count read llm_d_epp_ready_endpoints alone, found one pool, and
// the target read alpha's 12 running over 3 as the namespace's, beta's
// pool lost without a word. The pools are counted by name over both
// spellings: 2, every signal unknown (ambiguous); a selector of beta's
// EPP alone reads its deprecated families (running 1 x 1 = 1).
func TestEngineEPPTwoPoolsOneDeprecated(t *testing.T) {
	api := newEngineAPI(t, `
  llm_d_epp_ready_endpoints{namespace="llm",service="alpha-epp",pod="alpha-epp-1",name="alpha"} 3x40
  inference_pool_ready_pods{namespace="llm",service="alpha-epp",pod="alpha-epp-1",name="alpha"} 3x40
  llm_d_epp_average_running_requests{namespace="llm",service="alpha-epp",pod="alpha-epp-1",name="alpha"} 4x40
  inference_pool_average_running_requests{namespace="llm",service="alpha-epp",pod="alpha-epp-1",name="alpha"} 4x40
  llm_d_epp_average_queue_size{namespace="llm",service="alpha-epp",pod="alpha-epp-1",name="alpha"} 2x40
  inference_pool_average_queue_size{namespace="llm",service="alpha-epp",pod="alpha-epp-1",name="alpha"} 2x40
  inference_pool_ready_pods{namespace="llm",service="beta-epp",pod="beta-epp-1",name="beta"} 1x40
  inference_pool_average_running_requests{namespace="llm",service="beta-epp",pod="beta-epp-1",name="beta"} 1x40
  inference_pool_average_queue_size{namespace="llm",service="beta-epp",pod="beta-epp-1",name="beta"} 0x40
`)
	r := eppEval(t, api, `{namespace="llm"}`)
	wantTwoPools(t, r, Running, Waiting, Reporting, Current)
	// Beta's pool is named only by the twin: the error names both spellings.
	if err := r.Errors[Running]; err == nil || !strings.Contains(err.Error(), "labels of llm_d_epp_ready_endpoints or inference_pool_ready_pods") {
		t.Errorf("running error %v: want it to name both spellings of the ready gauge", err)
	}
	r = eppEval(t, api, `{namespace="llm",service="beta-epp"}`)
	if o := r.Values; o[Running] != 1 || o[Waiting] != 0 || o[Current] != 1 || r.Errors[Pools] != nil {
		t.Errorf("beta alone: running %v waiting %v current %v, want 1 0 1 (errors %v)", o[Running], o[Waiting], o[Current], r.Errors)
	}
}

// TestEngineEPPReplicasDisagree: one pool's two EPP replicas, one a
// refresh behind: chat-epp-1 sees 4 ready endpoints averaging 6.25
// running and 1.5 waiting, chat-epp-2 only 3 (one endpoint not yet fresh)
// averaging 8.33 and 2 of the same 25 running and 6 waiting. max() of
// each gauge alone put one replica's average with the other's count:
// round(8.33 x 4) = 33 running, 2 x 4 = 8 waiting, a third more than
// either EPP sees. Each replica's own product, the largest, reads by hand
// round(max(6.25 x 4, 8.33 x 3)) = round(25) = 25 and max(1.5 x 4, 2 x 3)
// = 6, as embedded mode reads the page with the most ready endpoints.
func TestEngineEPPReplicasDisagree(t *testing.T) {
	api := newEngineAPI(t, `
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat"} 4x40
  llm_d_epp_average_running_requests{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat"} 6.25x40
  llm_d_epp_average_queue_size{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat"} 1.5x40
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="chat-epp-2",name="chat"} 3x40
  llm_d_epp_average_running_requests{namespace="llm",service="chat-epp",pod="chat-epp-2",name="chat"} 8.33x40
  llm_d_epp_average_queue_size{namespace="llm",service="chat-epp",pod="chat-epp-2",name="chat"} 2x40
`)
	r := eppEval(t, api, `{namespace="llm",service="chat-epp"}`)
	if o := r.Values; o[Running] != 25 || o[Waiting] != 6 || o[Reporting] != 4 || o[Current] != 4 {
		t.Errorf("running %v waiting %v reporting %v current %v, want 25 6 4 4 (errors %v)", o[Running], o[Waiting], o[Reporting], o[Current], r.Errors)
	}
}

// TestEngineEPPGaugesUnpaired: an exporter whose average gauge carries a
// label its ready gauge lacks (here model="m") gives series that do not
// pair, and their product is empty: running and waiting are then the
// gauges' maxima multiplied, round(7.5 x 4) = 30 and round(0.25 x 4) = 1,
// not unknown.
func TestEngineEPPGaugesUnpaired(t *testing.T) {
	api := newEngineAPI(t, `
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat"} 4x40
  llm_d_epp_average_running_requests{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat",model="m"} 7.5x40
  llm_d_epp_average_queue_size{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat",model="m"} 0.25x40
`)
	r := eppEval(t, api, `{namespace="llm",service="chat-epp"}`)
	if o := r.Values; o[Running] != 30 || o[Waiting] != 1 || o[Current] != 4 {
		t.Errorf("running %v waiting %v current %v, want 30 1 4 (errors %v)", o[Running], o[Waiting], o[Current], r.Errors)
	}
}

// eppEval reads one server: epp target of selector text from api.
func eppEval(t *testing.T, api *engineAPI, text string) Result {
	t.Helper()
	tg := sel(t, text)
	tg.Server = modelserver.EPP
	return evalOne(t, api, tg, Options{})
}

// wantTwoPools checks that each signal of r is unknown, its error saying
// the selector matches two pools' Endpoint Pickers.
func wantTwoPools(t *testing.T, r Result, signals ...Signal) {
	t.Helper()
	for _, s := range signals {
		if err := r.Errors[s]; !math.IsNaN(r.Values[s]) || ReasonOf(err) != ReasonAmbiguous ||
			!strings.Contains(err.Error(), "the selector matches the Endpoint Pickers of 2 InferencePools") {
			t.Errorf("%s %v (%v): want unknown, its error naming the 2 pools", s, r.Values[s], err)
		}
	}
}

// TestEngineNoPodLabel: a scrape config that puts no pod label on the
// series (here the older prometheus-community chart's
// kubernetes_pod_name; a static scrape has none at all). Three pods run 10
// and have 2 waiting each. The per-pod dedup keys on pod, so the three
// pods' series folded into one "pod" and `and on (pod)` matched up on the
// empty value: running 10, waiting 2, 1 pod reporting, and a log of 2
// duplicated series folded; the truth is 30, 6 and 3 pods, a third of the
// load. Such series cannot be told apart by pod: every live signal is
// unknown (no decision on them), and its error says what to relabel.
// Named by a selector's PodLabel (Options), the same series read right.
func TestEngineNoPodLabel(t *testing.T) {
	api := newEngineAPI(t, `
  vllm:num_requests_running{namespace="llm",kubernetes_pod_name="chat-1",instance="10.0.0.1:8000",model_name="m"} 10x40
  vllm:num_requests_running{namespace="llm",kubernetes_pod_name="chat-2",instance="10.0.0.2:8000",model_name="m"} 10x40
  vllm:num_requests_running{namespace="llm",kubernetes_pod_name="chat-3",instance="10.0.0.3:8000",model_name="m"} 10x40
  vllm:num_requests_waiting{namespace="llm",kubernetes_pod_name="chat-1",instance="10.0.0.1:8000",model_name="m"} 2x40
  vllm:num_requests_waiting{namespace="llm",kubernetes_pod_name="chat-2",instance="10.0.0.2:8000",model_name="m"} 2x40
  vllm:num_requests_waiting{namespace="llm",kubernetes_pod_name="chat-3",instance="10.0.0.3:8000",model_name="m"} 2x40
  up{namespace="llm",kubernetes_pod_name="chat-1",instance="10.0.0.1:8000"} 1x40
  up{namespace="llm",kubernetes_pod_name="chat-2",instance="10.0.0.2:8000"} 1x40
  up{namespace="llm",kubernetes_pod_name="chat-3",instance="10.0.0.3:8000"} 1x40
`)
	tg := sel(t, `{namespace="llm"}`)
	tg.Duplicates = true
	r := evalOne(t, api, tg, Options{})
	for _, s := range []Signal{Running, Waiting, Reporting} {
		if err := r.Errors[s]; !math.IsNaN(r.Values[s]) || ReasonOf(err) != ReasonEmpty || err == nil ||
			!strings.Contains(err.Error(), "no series of a live pod, though the family has series under the selector") ||
			!strings.Contains(err.Error(), "relabel __meta_kubernetes_pod_name to pod") {
			t.Errorf("%s %v (%v): want unknown, its error saying the pod label", s, r.Values[s], err)
		}
	}
	if !math.IsNaN(r.Duplicated) {
		t.Errorf("duplicated %v, want NaN: the 2 series folded were other pods, not copies (serve logged them as duplicates)", r.Duplicated)
	}
	r = evalOne(t, api, tg, Options{PodLabel: "kubernetes_pod_name"})
	if o := r.Values; !near(o[Running], 30) || !near(o[Waiting], 6) || o[Reporting] != 3 {
		t.Errorf("pod label kubernetes_pod_name: running %v waiting %v reporting %v, want 30 6 3 (%v)", o[Running], o[Waiting], o[Reporting], r.Errors)
	}
}

// TestEngineEPPArrivalsMixedRouters: during a rollout of the router, epp-1
// (current) writes request_total under both names (the current one with
// a fairness_id label the twin lacks) and epp-2 (older) the twin only.
// Embedded mode reads each page's own family: epp-1 at 4 req/s (240 a
// minute) and epp-2 at 2 (120 a minute), 6 in all. Before, the current
// name was chosen for the whole pool: 4, epp-2's requests dropped; the
// twin counted beside the current one would read 4 + 4 + 2 = 10.
func TestEngineEPPArrivalsMixedRouters(t *testing.T) {
	api := newEngineAPI(t, `
  llm_d_epp_request_total{namespace="llm",service="chat-epp",instance="10.0.0.1:9090",fairness_id="",model_name="m",priority="0",target_model_name="m"} 0+60x40
  inference_objective_request_total{namespace="llm",service="chat-epp",instance="10.0.0.1:9090",model_name="m",priority="0",target_model_name="m"} 0+60x40
  inference_objective_request_total{namespace="llm",service="chat-epp",instance="10.0.0.2:9090",model_name="m",priority="0",target_model_name="m"} 0+30x40
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",instance="10.0.0.1:9090"} 2x40
  inference_pool_ready_pods{namespace="llm",service="chat-epp",instance="10.0.0.1:9090"} 2x40
  inference_pool_ready_pods{namespace="llm",service="chat-epp",instance="10.0.0.2:9090"} 2x40
`)
	tg := sel(t, `{namespace="llm",service="chat-epp"}`)
	tg.Server, tg.Demand = modelserver.EPP, true
	r := evalOne(t, api, tg, Options{})
	if v := r.Values[Arrivals]; !near(v, 6) {
		t.Fatalf("arrivals %v req/s, want 4 + 2 = 6 (errors %v)", v, r.Errors)
	}
}

// TestEngineEPPPoolSeriesHACopies: an HA Prometheus pair's copies of one
// EPP page (label prometheus_replica "a" and "b", the same values: 4 ready
// averaging 2.5) are one series each per page, not a doubled gauge:
// pool_series 1, running 10. Without the replica label in the grouping
// (Options.ReplicaLabels empty: deduplication off) they are two series of
// one page: every pool signal unknown, the error naming the label.
func TestEngineEPPPoolSeriesHACopies(t *testing.T) {
	api := newEngineAPI(t, `
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat",prometheus_replica="a"} 4x40
  llm_d_epp_average_running_requests{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat",prometheus_replica="a"} 2.5x40
  llm_d_epp_average_queue_size{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat",prometheus_replica="a"} 0x40
  llm_d_epp_ready_endpoints{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat",prometheus_replica="b"} 4x40
  llm_d_epp_average_running_requests{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat",prometheus_replica="b"} 2.5x40
  llm_d_epp_average_queue_size{namespace="llm",service="chat-epp",pod="chat-epp-1",name="chat",prometheus_replica="b"} 0x40
`)
	r := eppEval(t, api, `{namespace="llm",service="chat-epp"}`)
	if o := r.Values; o[Running] != 10 || o[PoolSeries] != 1 || r.Errors[Running] != nil {
		t.Errorf("running %v pool_series %v, want 10 1 (errors %v)", o[Running], o[PoolSeries], r.Errors)
	}
	tg := sel(t, `{namespace="llm",service="chat-epp"}`)
	tg.Name, tg.Server = "chat", modelserver.EPP
	r = evalOne(t, api, tg, Options{ReplicaLabels: []string{}})
	if err := r.Errors[Running]; !math.IsNaN(r.Values[Running]) || ReasonOf(err) != ReasonAmbiguous || !strings.Contains(err.Error(), `prometheus_replica ("a", "b")`) {
		t.Errorf("dedup off: running %v (%v), want unknown naming prometheus_replica", r.Values[Running], err)
	}
}
