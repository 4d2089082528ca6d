package scrape

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/epptest"
	"github.com/infscale/infscale/pkg/modelserver"
)

// eppBusy is a pool of three endpoints with fresh metrics, as the EPP of
// llm-d-router ebab687927f5 writes it (internal/epptest: both the
// llm_d_epp_ families and their deprecated twins).
var eppBusy = epptest.State{
	Pool: "chat", Model: "llama",
	Endpoints: []epptest.Endpoint{
		{Name: "chat-0", Fresh: true, Running: 10, Waiting: 2, KV: 0.5},
		{Name: "chat-1", Fresh: true, Running: 12, Waiting: 5, KV: 0.6},
		{Name: "chat-2", Fresh: true, Running: 9, Waiting: 0, KV: 0.7},
	},
	RequestRunning: map[string]float64{"": 30, "tenant-b": 8},
	Flows:          []epptest.Flow{{FairnessID: "tenant-a", Priority: "0", Held: 3}, {FairnessID: "tenant-b", Priority: "-1", Held: 2}},
	Saturation:     map[string]float64{"prefill": 0.8, "decode": 1.15, "effective": 1.15},
	Requests:       1500, InputTokens: 1.5e6, OutputTokens: 3e5,
	InflightTokens: map[string]float64{"chat-0": 4000, "chat-1": 2500},
}

func readEPP(t *testing.T, s epptest.State) *Page {
	t.Helper()
	p, err := Read(strings.NewReader(epptest.Page(s)), "text/plain", "epp", modelserver.EPP)
	if err != nil {
		t.Fatal(err)
	}
	if p.Pool == nil {
		t.Fatal("no Pool on an EPP page")
	}
	return p
}

// TestEPPPool: the signals of the busy pool, worked out by hand.
//
//	ready 3; average running (10+12+9)/3 = 10.333 -> the router writes 10.33,
//	x 3 = 30.99 -> 31 requests; average queue (2+5+0)/3 -> 2.33 x 3 = 6.99 -> 7,
//	equal to the per-endpoint queues 2+5+0; KV (0.5+0.6+0.7)/3 = 0.6;
//	in flight 30+8 = 38; flow-control queue 3+2 = 5 (not 10: the twin is the
//	same queue); saturation effective 1.15 with no stale endpoint: load.
func TestEPPPool(t *testing.T) {
	p := readEPP(t, eppBusy)
	pool := p.Pool
	for name, c := range map[string][2]float64{
		"ready": {pool.Ready, 3}, "running": {pool.Running, 31}, "waiting": {pool.Waiting, 7},
		"kv": {pool.KV, 0.6}, "request_running": {pool.RequestRunning, 38}, "flow_queue": {pool.FlowQueue, 5},
		"effective": {pool.Effective, 1.15}, "inflight_tokens": {pool.InflightTokens, 6500},
		"page running": {p.Running, 31}, "page waiting": {p.Waiting, 7}, "page kv": {p.KV, 0.6},
		"requests": {p.Requests, 1500}, "prompt tokens": {p.PromptTokens, 1.5e6}, "generation tokens": {p.GenerationTokens, 3e5},
	} {
		if math.Abs(c[0]-c[1]) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	if got := pool.EndpointQueue; len(got) != 3 || got["chat-1"] != 5 {
		t.Errorf("endpoint queues %v, want chat-0 2, chat-1 5, chat-2 0", got)
	}
	// Queued: chat-0 (2) and chat-1 (5) hold a queue, chat-2 (0) not: 2 of
	// 3 ready; at most the ready count when the EPP keeps a stale one's.
	if q1, q3 := pool.Queued(1), pool.Queued(3); q3 != 2 || q1 != 1 {
		t.Errorf("queued %d of 3 ready, %d of 1: want 2 and 1", q3, q1)
	}
	if !math.IsNaN(pool.InflightRequests) {
		t.Errorf("in-flight requests %v, want absent (not 0): the page has no such family", pool.InflightRequests)
	}
	for sig, fam := range map[string]string{"ready": "llm_d_epp_ready_endpoints", "flow_queue": "llm_d_epp_flow_control_queue_size",
		"requests": "llm_d_epp_request_total", "input_tokens": "llm_d_epp_request_input_tokens_sum"} {
		if pool.Chosen[sig] != fam {
			t.Errorf("%s read from %q, want the current family %s", sig, pool.Chosen[sig], fam)
		}
	}
	if pool.Name != "chat" {
		t.Errorf("pool name %q", pool.Name)
	}
}

// TestEPPTwins: a build with only the deprecated names reads the same
// values from them; one without twins reads the same from the new names.
func TestEPPTwins(t *testing.T) {
	old := eppBusy
	old.OnlyTwins = true
	p := readEPP(t, old)
	if p.Pool.Ready != 3 || p.Running != 31 || p.Waiting != 7 || p.Pool.FlowQueue != 5 || p.Requests != 1500 || p.PromptTokens != 1.5e6 {
		t.Errorf("deprecated names: ready %v running %v waiting %v flow %v requests %v prompt %v, want 3 31 7 5 1500 1.5e6",
			p.Pool.Ready, p.Running, p.Waiting, p.Pool.FlowQueue, p.Requests, p.PromptTokens)
	}
	if p.Pool.Chosen["ready"] != "inference_pool_ready_pods" || p.Pool.EndpointQueue["chat-1"] != 5 {
		t.Errorf("ready from %q, endpoint queues %v", p.Pool.Chosen["ready"], p.Pool.EndpointQueue)
	}
	// No stale-endpoints family before llm_d_epp: 1.15 is not the
	// fail-closed 1.0, so it is load.
	if p.Pool.Effective != 1.15 {
		t.Errorf("effective %v, want 1.15", p.Pool.Effective)
	}
	cur := eppBusy
	cur.NoTwins = true
	if p := readEPP(t, cur); p.Running != 31 || p.Pool.FlowQueue != 5 {
		t.Errorf("new names only: running %v flow %v", p.Running, p.Pool.FlowQueue)
	}
}

// TestEPPFailClosed: saturation's fail-closed readings are unknown, not
// load: an empty pool (ready 0, reads 1.0), stale endpoints (each scores
// saturated), and an exact 1.0 where staleness cannot be checked. An empty
// pool's running and waiting are 0 (no endpoint), its KV unknown (the
// router left the averages at their last value), its held requests read.
func TestEPPFailClosed(t *testing.T) {
	empty := epptest.State{Pool: "chat", Model: "llama", Flows: []epptest.Flow{{FairnessID: "a", Priority: "0", Held: 4}},
		Saturation: map[string]float64{"decode": 1, "prefill": 1, "effective": 1}}
	p := readEPP(t, empty)
	if p.Pool.Ready != 0 || p.Running != 0 || p.Waiting != 0 || !math.IsNaN(p.KV) || p.Pool.FlowQueue != 4 || !math.IsNaN(p.Pool.Effective) {
		t.Errorf("empty pool: ready %v running %v waiting %v kv %v held %v effective %v, want 0 0 0 NaN 4 NaN",
			p.Pool.Ready, p.Running, p.Waiting, p.KV, p.Pool.FlowQueue, p.Pool.Effective)
	}
	stale := eppBusy
	stale.Stale, stale.Saturation = 1, map[string]float64{"effective": 0.9}
	if p := readEPP(t, stale); !math.IsNaN(p.Pool.Effective) {
		t.Errorf("1 stale endpoint: effective %v, want unknown", p.Pool.Effective)
	}
	old := eppBusy
	old.OnlyTwins, old.Saturation = true, map[string]float64{"effective": 1}
	if p := readEPP(t, old); !math.IsNaN(p.Pool.Effective) {
		t.Errorf("exactly 1.0 without a stale count: effective %v, want unknown", p.Pool.Effective)
	}
	fresh := eppBusy
	fresh.Saturation = map[string]float64{"effective": 1}
	if p := readEPP(t, fresh); p.Pool.Effective != 1 {
		t.Errorf("1.0 with 3 ready and 0 stale: effective %v, want 1 (load at the set point)", p.Pool.Effective)
	}
}

// TestEPPRates: two scrapes 15 s apart: 30 requests, 30,000 prompt and
// 6,000 generation tokens more: 2 req/s, 2,000 and 400 tokens/s.
func TestEPPRates(t *testing.T) {
	a := readEPP(t, eppBusy)
	next := eppBusy
	next.Requests, next.InputTokens, next.OutputTokens = 1530, 1.53e6, 3.06e5
	b := readEPP(t, next)
	at := time.Unix(1_800_000_000, 0)
	a.Time, b.Time = at, at.Add(15*time.Second)
	r := Rate(a, b)
	if math.Abs(r.Requests-2) > 1e-9 || math.Abs(r.PromptTokens-2000) > 1e-9 || math.Abs(r.GenerationTokens-400) > 1e-9 {
		t.Errorf("rates %v req/s, %v and %v tokens/s; want 2, 2000, 400", r.Requests, r.PromptTokens, r.GenerationTokens)
	}
}

// TestEPPDetected: an EPP page is detected as epp, not as a model server.
func TestEPPDetected(t *testing.T) {
	p, err := Read(strings.NewReader(epptest.Page(eppBusy)), "text/plain", "epp", modelserver.Unknown)
	if err != nil {
		t.Fatal(err)
	}
	if p.Server != modelserver.EPP || p.Pool == nil || p.Running != 31 {
		t.Errorf("detected %v (pool %v, running %v), want epp with running 31", p.Server, p.Pool != nil, p.Running)
	}
}

// TestEPPReadHeld: an EPP's page is a holder's page too (a vllm target
// scraped from its pods, zero.held_scrape on the pool's EPP): held 5 (3 + 2,
// the twin not added), ready with 3 endpoints; at zero, 4 held and not
// ready; an older router's deprecated names read the same.
func TestEPPReadHeld(t *testing.T) {
	srv := epptest.Serve(eppBusy)
	defer srv.Close()
	h, err := ReadHeld(t.Context(), nil, srv.URL+"/metrics")
	if err != nil || h.Held != 5 || h.Ready != 1 {
		t.Errorf("busy: %+v, %v; want held 5, ready 1", h, err)
	}
	srv.Set(func(s *epptest.State) {
		s.Endpoints, s.OnlyTwins = nil, true
		s.Flows = []epptest.Flow{{FairnessID: "a", Priority: "0", Held: 4}}
	})
	h, err = ReadHeld(t.Context(), nil, srv.URL+"/metrics")
	if err != nil || h.Held != 4 || h.Ready != 0 {
		t.Errorf("at zero, deprecated names: %+v, %v; want held 4, ready 0", h, err)
	}
	srv.Set(func(s *epptest.State) { s.Flows = nil })
	if _, err := ReadHeld(t.Context(), nil, srv.URL+"/metrics"); err == nil || !strings.Contains(err.Error(), "nor an llm-d EPP's flow-control queue") {
		t.Errorf("no flow control: %v, want an error (held unknown, not 0)", err)
	}
}

// TestEPPTwoPoolsRefused: an EPP serves one InferencePool, so a page whose
// pool gauges name two pools (a federation or aggregation of EPPs) is no
// one EPP's page. It was read as one pool: ready the larger pool's (7),
// running its mean x 7, so pool "chat" (3 endpoints, 31 running) read as 7
// endpoints and 140 running. It is refused at the first sample of the
// second pool (line 5: the first family's two samples, each after its
// HELP and TYPE lines, the twin's lines after), naming both pools.
func TestEPPTwoPoolsRefused(t *testing.T) {
	page := "# HELP llm_d_epp_ready_endpoints x\n# TYPE llm_d_epp_ready_endpoints gauge\n" +
		"llm_d_epp_ready_endpoints{name=\"chat\"} 3\n" +
		"# TYPE llm_d_epp_average_running_requests gauge\n" +
		"llm_d_epp_average_running_requests{name=\"other\"} 20\n" +
		"llm_d_epp_average_running_requests{name=\"chat\"} 10.33\n"
	_, err := Read(strings.NewReader(page), "text/plain", "epp", modelserver.EPP)
	want := `epp:5: not one Endpoint Picker's page: the pool gauges name two InferencePools ("chat" and "other")`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v, want one starting %q", err, want)
	}
	// One pool under both names (dual emission) and unlabelled families
	// (the flow-control queue's inference_pool is not read here) are one pool.
	if p := readEPP(t, eppBusy); p.Pool.Name != "chat" {
		t.Errorf("busy pool read as %q", p.Pool.Name)
	}
}

// TestEPPFractionalReadyRefused: the router writes its ready endpoints as
// a count (float64(len(endpoints))); 2.5 is a broken exporter. It was read
// as current round(2.5) = 3 beside running 20 x 2.5 = 50, a pool of 3 with
// 50 running where the averages say 20 a replica (60). Refused at its line.
func TestEPPFractionalReadyRefused(t *testing.T) {
	page := "# TYPE llm_d_epp_ready_endpoints gauge\nllm_d_epp_ready_endpoints{name=\"chat\"} 2.5\n" +
		"# TYPE llm_d_epp_average_running_requests gauge\nllm_d_epp_average_running_requests{name=\"chat\"} 20\n"
	_, err := Read(strings.NewReader(page), "text/plain", "epp", modelserver.EPP)
	want := `epp:2: invalid metrics page: {__name__="llm_d_epp_ready_endpoints", name="chat"} is 2.5, not a count of ready endpoints (allowed: whole numbers 0 to 150000)`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// TestEPPFlowQueuePerFlow: the router's flow-control gauge is one series
// per flow (fairness id, priority), and only a flow's own series can dip
// below 0 (after its garbage collection); a negative flow holds nothing,
// it cancels no other flow's requests. A pool at zero holding 2 requests in
// flow "a" beside flow "gc" at -3 read 2 + (-3) = -1, clamped to 0: no
// request held, and serve kept the pool at zero (idle-to-zero) with 2
// requests waiting. Each flow is clamped first: max(2, 0) + max(-3, 0) = 2.
// A NaN flow beside finite ones makes the queue unknown, as a NaN running
// does: read as the finite flows' 2 it was a silent undercount (ReadHeld,
// the held_scrape path, already refused it).
func TestEPPFlowQueuePerFlow(t *testing.T) {
	zero := func(held ...float64) epptest.State {
		s := epptest.State{Pool: "chat", Model: "llama"}
		for i, h := range held {
			s.Flows = append(s.Flows, epptest.Flow{FairnessID: fmt.Sprint("f", i), Priority: "0", Held: h})
		}
		return s
	}
	for _, tc := range []struct {
		held []float64
		want float64
	}{
		{[]float64{2, -3}, 2},  // 2 + 0
		{[]float64{-1, -4}, 0}, // nothing held
		{[]float64{3, 2}, 5},   // 3 + 2
		{[]float64{2, math.NaN()}, math.NaN()},
		{[]float64{2, math.Inf(1)}, math.NaN()},
	} {
		p := readEPP(t, zero(tc.held...))
		if got := p.Pool.FlowQueue; !(got == tc.want || math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("flows %v: flow queue %v, want %v", tc.held, got, tc.want)
		}
		srv := epptest.Serve(zero(tc.held...))
		h, err := ReadHeld(t.Context(), nil, srv.URL+"/metrics")
		srv.Close()
		switch {
		case math.IsNaN(tc.want) && err == nil:
			t.Errorf("flows %v: ReadHeld %+v, want an error (held unknown)", tc.held, h)
		case !math.IsNaN(tc.want) && (err != nil || h.Held != tc.want):
			t.Errorf("flows %v: ReadHeld %+v, %v; want held %v", tc.held, h, err, tc.want)
		}
	}
}

// TestEPPPoolGaugeSeriesRefused: the router writes one series of each pool
// gauge (label name only). A page with two (an extra label: a newer or
// patched router splitting the mean, or an exporter relabelling it) was
// read by the larger: average running 12 and 30 over 2 ready read as
// 30 x 2 = 60 running where neither series is known to be the pool's.
// Refused at the second series' line, naming both. Likewise an EPP's flow
// controller serves its one pool: flow-control series naming two
// inference_pool values summed another pool's held requests into this
// one's (3 + 2 = 5 held for pool chat, 2 of them code's).
func TestEPPPoolGaugeSeriesRefused(t *testing.T) {
	for _, tc := range []struct{ page, want string }{
		{"# TYPE llm_d_epp_ready_endpoints gauge\nllm_d_epp_ready_endpoints{name=\"chat\"} 2\n" +
			"# TYPE llm_d_epp_average_running_requests gauge\n" +
			"llm_d_epp_average_running_requests{name=\"chat\",role=\"prefill\"} 12\n" +
			"llm_d_epp_average_running_requests{name=\"chat\",role=\"decode\"} 30\n",
			`epp:5: not one Endpoint Picker's page: llm_d_epp_average_running_requests has two series ({__name__="llm_d_epp_average_running_requests", name="chat", role="prefill"} and {__name__="llm_d_epp_average_running_requests", name="chat", role="decode"})`},
		{"# TYPE llm_d_epp_ready_endpoints gauge\nllm_d_epp_ready_endpoints{name=\"chat\"} 0\n" +
			"# TYPE llm_d_epp_flow_control_queue_size gauge\n" +
			"llm_d_epp_flow_control_queue_size{fairness_id=\"a\",inference_pool=\"chat\",priority=\"0\"} 3\n" +
			"llm_d_epp_flow_control_queue_size{fairness_id=\"b\",inference_pool=\"code\",priority=\"0\"} 2\n",
			`epp:5: not one Endpoint Picker's page: the flow-control series name two InferencePools ("chat" and "code")`},
		// Flows of another pool than the pool gauges (pages of two EPPs
		// joined): code's 3 held requests were read as chat's.
		{"# TYPE llm_d_epp_ready_endpoints gauge\nllm_d_epp_ready_endpoints{name=\"chat\"} 0\n" +
			"# TYPE llm_d_epp_flow_control_queue_size gauge\n" +
			"llm_d_epp_flow_control_queue_size{fairness_id=\"a\",inference_pool=\"code\",priority=\"0\"} 3\n",
			`epp:4: not one Endpoint Picker's page: the pool gauges (label name) and the flow-control series (label inference_pool) name two InferencePools ("chat" and "code")`},
	} {
		_, err := Read(strings.NewReader(tc.page), "text/plain", "epp", modelserver.EPP)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("error %v, want one starting %q", err, tc.want)
		}
	}
	// The router's own page (both spellings, flows of one pool) is read.
	if p := readEPP(t, eppBusy); p.Pool.FlowQueue != 5 || p.Running != 31 {
		t.Errorf("busy pool: held %v running %v, want 5 and 31", p.Pool.FlowQueue, p.Running)
	}
	// An EPP in endpoint-selector mode (no --pool-name) writes its flows
	// without a pool: read beside its gauges' name. A page of flows alone
	// is of their pool (serve compares it with inferencePoolRef).
	for page, want := range map[string]string{
		"llm_d_epp_ready_endpoints{name=\"chat-epp\"} 0\nllm_d_epp_flow_control_queue_size{fairness_id=\"a\",inference_pool=\"\",priority=\"0\"} 3\n": "chat-epp",
		"llm_d_epp_flow_control_queue_size{fairness_id=\"a\",inference_pool=\"code\",priority=\"0\"} 3\n":                                             "code",
	} {
		p, err := Read(strings.NewReader(page), "text/plain", "epp", modelserver.EPP)
		if err != nil || p.Pool.Name != want || p.Pool.FlowQueue != 3 {
			t.Errorf("%q: %v; want pool %q, held 3", page, err, want)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, page) }))
		h, err := ReadHeld(t.Context(), srv.Client(), srv.URL)
		srv.Close()
		if err != nil || h.Pool != want || h.Held != 3 {
			t.Errorf("%q: ReadHeld %+v, %v; want pool %q, held 3", page, h, err, want)
		}
	}
	// A page of the flow controller's saturation alone (no request held,
	// the pool gauges not written: the router's pool not yet initialized)
	// reads 0 held and is of the saturation's pool: read as of no pool,
	// another pool's EPP's 0 passed serve's inferencePoolRef check.
	const sat = "llm_d_epp_flow_control_pool_saturation{inference_pool=\"code\",stage=\"effective\"} 1\n"
	if p, err := Read(strings.NewReader(sat), "text/plain", "epp", modelserver.EPP); err != nil || p.Pool.Name != "code" || p.Pool.FlowQueue != 0 {
		t.Errorf("saturation alone: %v, %v; want pool \"code\", held 0", p, err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, sat) }))
	defer srv.Close()
	if h, err := ReadHeld(t.Context(), srv.Client(), srv.URL); err != nil || h.Pool != "code" || h.Held != 0 {
		t.Errorf("saturation alone: ReadHeld %+v, %v; want pool \"code\", held 0", h, err)
	}
}

// TestFlowQueueOneReader: a server: epp target's page (Read, Pool) and a
// zero.held_scrape page (ReadHeld) read the flow-control queue by one rule
// (readFlowQueue), so each page below reads the same in both, worked by
// hand. Where they differed:
//   - the current family declared a counter beside the twin's gauge at 4:
//     the target read 4 from the twin, ReadHeld refused it; now both refuse
//     it, naming the family (ErrWrongType), the page being wrong about what
//     its held count is;
//   - the current family declared a counter, no twin: the target read it as
//     absent (serve said "is the flowControl feature gate on?"); now
//     ErrWrongType naming it;
//   - the current family declared without samples beside the twin at 3:
//     ReadHeld said "is NaN", the target read 3; now both 3 (client_golang
//     writes no TYPE line for a family without series: the page says
//     nothing held under that name);
//   - two flows of 6e8: the target read 1.2e9 held, ReadHeld refused it;
//     now both refuse it (ErrNotCount: a billion requests is the most);
//   - a flow at -2e9 beside one at 2: ReadHeld read 2 (clamped), the target
//     refused the page; now ReadHeld refuses it too, naming the series.
//
// Neither read a page of flow control with no queue series yet as 0.
func TestFlowQueueOneReader(t *testing.T) {
	const cur, twin = "llm_d_epp_flow_control_queue_size", "inference_extension_flow_control_queue_size"
	for _, tc := range []struct {
		name, page string
		held       float64 // NaN: an error with err
		err        string
		is         error
	}{
		{"flows", cur + "{fairness_id=\"a\"} 2\n" + cur + "{fairness_id=\"b\"} -3\n", 2, "", nil}, // 2 + max(-3, 0)
		{"dual emission", cur + " 3\n" + twin + " 3\n", 3, "", nil},                               // one name, not 6
		{"counter beside the twin", "# TYPE " + cur + " counter\n" + cur + " 9\n# TYPE " + twin + " gauge\n" + twin + " 4\n", math.NaN(),
			cur + " is declared a counter, infscale reads it as a gauge: its value is unknown", ErrWrongType},
		{"counter alone", "# TYPE " + cur + " counter\n" + cur + " 4\n", math.NaN(),
			cur + " is declared a counter", ErrWrongType},
		{"declared, no samples", "# TYPE " + cur + " gauge\n" + twin + " 3\n", 3, "", nil},
		{"sum beyond a billion", cur + "{fairness_id=\"a\"} 6e8\n" + cur + "{fairness_id=\"b\"} 6e8\n", math.NaN(),
			cur + " sums to 1.2e+09 over its flows (allowed: 0 to 1e+09): not a count of held requests", ErrNotCount},
		// Flow control on, no request since the EPP started: the router
		// writes the saturation from its start, a flow's queue series from
		// its first request. It was unknown, and a pool up with no traffic
		// never scaled to zero; now 0 (either spelling of the saturation).
		{"saturation, no queue", "llm_d_epp_flow_control_pool_saturation{inference_pool=\"chat\",stage=\"effective\"} 0\n", 0, "", nil},
		{"twin saturation, no queue", "inference_extension_flow_control_pool_saturation{inference_pool=\"chat\",stage=\"effective\"} 0\n", 0, "", nil},
		{"NaN flow", cur + "{fairness_id=\"a\"} 2\n" + cur + "{fairness_id=\"b\"} NaN\n", math.NaN(),
			cur + ` has a NaN or infinite flow ({__name__="` + cur + `", fairness_id="b"} is NaN)`, ErrNotCount},
	} {
		p, err := Read(strings.NewReader(tc.page), "text/plain", "epp", modelserver.EPP)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, gotErr := p.Pool.FlowQueue, p.Pool.FlowQueueErr
		switch {
		case tc.err == "" && (gotErr != nil || got != tc.held):
			t.Errorf("%s: target read %v, %v; want %v", tc.name, got, gotErr, tc.held)
		case tc.err != "" && (!math.IsNaN(got) || gotErr == nil || !strings.Contains(gotErr.Error(), tc.err) || !errors.Is(gotErr, tc.is)):
			t.Errorf("%s: target read %v, %v; want NaN and an error with %q", tc.name, got, gotErr, tc.err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, tc.page) }))
		h, err := ReadHeld(t.Context(), srv.Client(), srv.URL)
		srv.Close()
		switch {
		case tc.err == "" && (err != nil || h.Held != tc.held):
			t.Errorf("%s: ReadHeld %+v, %v; want held %v", tc.name, h, err, tc.held)
		case tc.err != "" && (!math.IsNaN(h.Held) || err == nil || !strings.Contains(err.Error(), srv.URL+": "+tc.err) || !errors.Is(err, tc.is)):
			t.Errorf("%s: ReadHeld %+v, %v; want NaN and an error with %q", tc.name, h, err, srv.URL+": "+tc.err)
		}
	}
	// A flow beyond a billion either way: the target's page is refused
	// (a broken exporter: every signal unknown), the held page's count too.
	page := cur + "{fairness_id=\"a\"} 2\n" + cur + "{fairness_id=\"b\"} -2e9\n"
	if _, err := Read(strings.NewReader(page), "text/plain", "epp", modelserver.EPP); err == nil || !strings.Contains(err.Error(), `fairness_id="b"} is -2e+09, not a count of held requests`) {
		t.Errorf("flow at -2e9: target read %v, want the page refused naming the series", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, page) }))
	defer srv.Close()
	if h, err := ReadHeld(t.Context(), srv.Client(), srv.URL); err == nil || !strings.Contains(err.Error(), `fairness_id="b"} is -2e+09; allowed: -1e+09 to 1e+09): not a count of held requests`) || !math.IsNaN(h.Held) {
		t.Errorf("flow at -2e9: ReadHeld %+v, %v; want held unknown naming the series (it read 2)", h, err)
	}
}
