package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/epptest"
	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
)

// eppTarget is one InferencePool read from its EPP: queue 10 per replica, 0..10, held requests from the flow-control queue.
const eppTarget = `
  server: epp
  metrics: [{type: queue, target: 10}]
  minReplicaCount: 0
  maxReplicaCount: 10
  zero: {flow_control: true, cooldownPeriod: 300s}
`

// eppDemand is eppTarget's pool decided by the demand metric: its
// Prometheus source asks for the endpoints holding a queue (Queued).
const eppDemand = `
  server: epp
  metrics: [{type: demand, target: 0.9}, {type: queuewait, target: 0.4s}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 10
`

// eppBusyPool is three fresh endpoints of pool chat (llm-d-router
// ebab687927f5's families, both names: internal/epptest).
func eppBusyPool() epptest.State {
	return epptest.State{
		Pool: "chat", Model: "llama",
		Endpoints: []epptest.Endpoint{
			{Name: "chat-0", Fresh: true, Running: 10, Waiting: 2, KV: 0.5},
			{Name: "chat-1", Fresh: true, Running: 12, Waiting: 5, KV: 0.6},
			{Name: "chat-2", Fresh: true, Running: 9, Waiting: 0, KV: 0.7},
		},
		Flows:      []epptest.Flow{{FairnessID: "a", Priority: "0", Held: 3}, {FairnessID: "b", Priority: "-1", Held: 2}},
		Saturation: map[string]float64{"decode": 1.15, "prefill": 0.8, "effective": 1.15},
		Requests:   1500, InputTokens: 1.5e6, OutputTokens: 3e5,
	}
}

// TestEPPSameDecisionsBothModes: a real Prometheus scraping an EPP page
// and embedded mode scraping the same page read the same signals and make
// the same decisions, worked out by hand:
//
//  1. busy (3 ready; averages 10.33 running, 2.33 waiting, KV 0.6; 5 held):
//     held 5 (3 + 2, the deprecated twin not added); queue = running +
//     waiting + held = 31 + 7 + 5 = 43 -> ceil(43 / 10) = 5 (ratio 43/30 =
//     1.43, past the tolerance); KV 0.6 read, not scaled on (it cannot wake
//     a pool at zero).
//  2. the same page from an older router (deprecated names only), 6 held:
//     queue 44 -> 5.
//  3. the pool at zero (ready 0, saturation fail-closed 1.0), 4 held in the
//     flow-control queue: current 0 known, desired 1 (activate).
func TestEPPSameDecisionsBothModes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	epp := epptest.Serve(eppBusyPool())
	defer epp.Close()
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second,
		Targets: []promtest.Target{{URL: epp.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "service": "chat-epp"}}}})
	emb, err := config.Parse([]byte(fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics]%s- name: demand\n  scrape: [%s/metrics]%s", epp.URL, eppTarget, epp.URL, eppDemand)), "emb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pc, err := config.Parse([]byte(fmt.Sprintf("prometheus: {url: %s}\ntargets:\n- name: chat\n  selector: '{namespace=\"llm\", service=\"chat-epp\"}'%s- name: demand\n  selector: '{namespace=\"llm\", service=\"chat-epp\"}'%s", prom.URL, eppTarget, eppDemand)), "prom.yaml")
	if err != nil {
		t.Fatal(err)
	}
	scr := NewScrapeSource(5 * time.Second)
	ps, err := NewPrometheusSource(pc.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		running, waiting, kv, held float64
		current, desired           int
		queued                     int // the demand target's endpoints holding a queue
	}
	check := func(step string, w want) {
		t.Helper()
		now := time.Now()
		for _, mode := range []struct {
			name string
			src  Source
			tg   *config.Target
		}{{"embedded", scr, &emb.Targets[0]}, {"prometheus", ps, &pc.Targets[0]}} {
			rd := mode.src.Read(t.Context(), []*config.Target{mode.tg}, now)[0]
			o := rd.Obs
			if w.current > 0 && len(rd.Errors) > 0 {
				t.Errorf("%s, %s: read errors %v, want none", step, mode.name, rd.Errors)
			}
			for name, c := range map[string][2]float64{"running": {o.Running, w.running}, "waiting": {o.Waiting, w.waiting}, "held": {o.Held, w.held}} {
				if c[0] != c[1] {
					t.Errorf("%s, %s: %s %v, want %v (errors %v)", step, mode.name, name, c[0], c[1], rd.Errors)
				}
			}
			if !(math.IsNaN(w.kv) && math.IsNaN(o.KV)) && math.Abs(o.KV-w.kv) > 1e-9 {
				t.Errorf("%s, %s: kv %v, want %v", step, mode.name, o.KV, w.kv)
			}
			if !rd.CurrentKnown || o.Current != w.current {
				t.Errorf("%s, %s: current %v (known %v), want %d", step, mode.name, o.Current, rd.CurrentKnown, w.current)
			}
			p, err := mode.tg.Policy()
			if err != nil {
				t.Fatal(err)
			}
			d := recommend.Decide(&p, o, &recommend.State{}, now)
			if d.Desired != w.desired {
				t.Errorf("%s, %s: desired %d (%s), want %d", step, mode.name, d.Desired, d.Reason, w.desired)
			}
		}
		for _, mode := range []struct {
			name string
			src  Source
			tg   *config.Target
		}{{"embedded", scr, &emb.Targets[1]}, {"prometheus", ps, &pc.Targets[1]}} {
			if o := mode.src.Read(t.Context(), []*config.Target{mode.tg}, now)[0].Obs; o.Queued != w.queued {
				t.Errorf("%s, %s: demand target's queued %d, want %d", step, mode.name, o.Queued, w.queued)
			}
		}
	}
	readyIs := func(q string, v float64) {
		prom.WaitFor(t, q, 30*time.Second, func(vec model.Vector) bool { return len(vec) == 1 && float64(vec[0].Value) == v })
	}

	readyIs(`llm_d_epp_ready_endpoints{service="chat-epp"}`, 3)
	// queued: chat-0 (2 waiting) and chat-1 (5), not chat-2 (0).
	check("busy", want{running: 31, waiting: 7, kv: 0.6, held: 5, current: 3, desired: 5, queued: 2})

	epp.Set(func(s *epptest.State) { s.OnlyTwins = true; s.Flows[0].Held = 4 })
	prom.WaitFor(t, `sum(inference_extension_flow_control_queue_size{service="chat-epp"})`, 30*time.Second, func(vec model.Vector) bool {
		return len(vec) == 1 && vec[0].Value == 6
	})
	readyIs(`absent(llm_d_epp_ready_endpoints{service="chat-epp"})`, 1)
	check("deprecated names", want{running: 31, waiting: 7, kv: 0.6, held: 6, current: 3, desired: 5, queued: 2})

	epp.Set(func(s *epptest.State) {
		s.OnlyTwins, s.Endpoints = false, nil
		s.Flows = []epptest.Flow{{FairnessID: "a", Priority: "0", Held: 4}}
		s.Saturation = map[string]float64{"decode": 1, "prefill": 1, "effective": 1}
	})
	readyIs(`llm_d_epp_ready_endpoints{service="chat-epp"}`, 0)
	check("at zero", want{running: 0, waiting: 0, kv: math.NaN(), held: 4, current: 0, desired: 1})
}

// TestEPPReplicasDisagreeBothModes: one pool's two EPP replicas, the
// second a refresh behind: chat-3 (idle) is fresh to the first, not yet to
// the second. The first reads 4 ready averaging 7.75 running and 1.75
// waiting, the second 3 averaging 10.33 and 2.33, the same 31 running and
// 7 waiting; each holds 5 in its flow-control queue. Embedded mode reads
// the page with the most ready endpoints: 31 + 7 + 10 held = 48 over 4 ->
// ceil(48 / 10) = 5. Prometheus read max() of each gauge alone, round(10.33
// x 4) = 41 and round(2.33 x 4) = 9: queue 60, desired 6. Each replica's
// own product, the largest: max(31, 30.99) -> 31, max(7, 6.99) -> 7, as
// embedded.
func TestEPPReplicasDisagreeBothModes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	st := eppBusyPool()
	st.Endpoints = append(st.Endpoints, epptest.Endpoint{Name: "chat-3", Fresh: true})
	a := epptest.Serve(st)
	defer a.Close()
	st = eppBusyPool()
	st.Endpoints = append(st.Endpoints, epptest.Endpoint{Name: "chat-3"})
	b := epptest.Serve(st)
	defer b.Close()
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second, Targets: []promtest.Target{
		{URL: a.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "service": "chat-epp", "pod": "chat-epp-a"}},
		{URL: b.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "service": "chat-epp", "pod": "chat-epp-b"}}}})
	emb, err := config.Parse([]byte(fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics, %s/metrics]%s", a.URL, b.URL, eppTarget)), "emb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, pc := chatEPPSource(t, prom.URL, eppTarget)
	prom.WaitFor(t, `count(llm_d_epp_ready_endpoints{service="chat-epp"})`, 30*time.Second, func(vec model.Vector) bool { return len(vec) == 1 && vec[0].Value == 2 })
	now := time.Now()
	for _, mode := range []struct {
		name string
		src  Source
		tg   *config.Target
	}{{"embedded", NewScrapeSource(5 * time.Second), &emb.Targets[0]}, {"prometheus", ps, &pc.Targets[0]}} {
		rd := mode.src.Read(t.Context(), []*config.Target{mode.tg}, now)[0]
		o := rd.Obs
		if o.Running != 31 || o.Waiting != 7 || o.Held != 10 || !rd.CurrentKnown || o.Current != 4 {
			t.Errorf("%s: running %v waiting %v held %v current %v, want 31 7 10 4 (errors %v)", mode.name, o.Running, o.Waiting, o.Held, o.Current, rd.Errors)
		}
		p, err := mode.tg.Policy()
		if err != nil {
			t.Fatal(err)
		}
		if d := recommend.Decide(&p, o, &recommend.State{}, now); d.Desired != 5 {
			t.Errorf("%s: desired %d (%s), want 5", mode.name, d.Desired, d.Reason)
		}
	}
}

// TestEPPGarbagePageNotRead: an EPP page whose ready endpoints or
// flow-control queue no router writes is not read (bad_response, naming
// the URL and line), and the pool's signals are unknown: its ready count
// -2 was read as current -2 with running 3 x -2 = -6, 1e300 as current
// -9223372036854775808 (Go's int of an out-of-range float) with running
// 3e300, a queue of 5e20 as 5e20 held. The held error says a page was not
// read, not that the flowControl gate may be off.
func TestEPPGarbagePageNotRead(t *testing.T) {
	for name, tc := range map[string]struct{ page, where string }{
		"negative ready": {"llm_d_epp_ready_endpoints{name=\"p\"} -2\nllm_d_epp_average_running_requests{name=\"p\"} 3\nllm_d_epp_flow_control_queue_size 0\n", "/metrics:1: "},
		"absurd ready":   {"llm_d_epp_ready_endpoints{name=\"p\"} 1e300\nllm_d_epp_average_running_requests{name=\"p\"} 3\nllm_d_epp_flow_control_queue_size 0\n", "/metrics:1: "},
		"absurd queue":   {"llm_d_epp_ready_endpoints{name=\"p\"} 0\nllm_d_epp_average_running_requests{name=\"p\"} 3\nllm_d_epp_flow_control_queue_size 5e20\n", "/metrics:3: "},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, tc.page) }))
			defer srv.Close()
			cfg, err := config.Parse([]byte(fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics]%s", srv.URL, eppTarget)), "emb.yaml")
			if err != nil {
				t.Fatal(err)
			}
			r := NewScrapeSource(5*time.Second).Read(context.Background(), []*config.Target{&cfg.Targets[0]}, time.Now())[0]
			if r.CurrentKnown || !math.IsNaN(r.Obs.Running) || !math.IsNaN(r.Obs.Waiting) || !math.IsNaN(r.Obs.Held) {
				t.Errorf("current %d (known %v), running %v, waiting %v, held %v; want all unknown", r.Obs.Current, r.CurrentKnown, r.Obs.Running, r.Obs.Waiting, r.Obs.Held)
			}
			var page, held string
			for _, e := range r.Errors {
				switch e.Signal {
				case "page":
					page = e.Reason + " " + e.Err.Error()
				case "held":
					held = e.Err.Error()
				}
			}
			if !strings.HasPrefix(page, "bad_response "+srv.URL+tc.where) {
				t.Errorf("page error %q, want bad_response naming %s%s", page, srv.URL, tc.where)
			}
			if held != "held unknown: 1 of 1 EPP pages not read (their errors above), each holds its own flow-control queue" {
				t.Errorf("held error %q", held)
			}
		})
	}
}

// TestEPPPagesOfTwoPools: an Endpoint Picker serves one InferencePool, so
// several scrape: URLs are one pool's EPP replicas; two pools' EPPs listed
// in one target are refused (a page error naming both URLs and pools) and
// every signal is unknown. They were read as one pool: chat (3 endpoints,
// 31 running, 5 held) beside code (5 endpoints) gave current 5 from code's
// page and held 5 + 5 = 10 from both.
func TestEPPPagesOfTwoPools(t *testing.T) {
	chat := epptest.Serve(eppBusyPool())
	defer chat.Close()
	code := eppBusyPool()
	code.Pool = "code"
	code.Endpoints = append(code.Endpoints, epptest.Endpoint{Name: "code-3", Fresh: true}, epptest.Endpoint{Name: "code-4", Fresh: true})
	other := epptest.Serve(code)
	defer other.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics, %s/metrics]%s", chat.URL, other.URL, eppTarget)), "emb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := NewScrapeSource(5*time.Second).Read(context.Background(), []*config.Target{&cfg.Targets[0]}, time.Now())[0]
	if r.CurrentKnown || !math.IsNaN(r.Obs.Running) || !math.IsNaN(r.Obs.Held) || !math.IsNaN(r.Obs.ArrivalRate) {
		t.Errorf("current %d (known %v), running %v, held %v, arrivals %v; want all unknown", r.Obs.Current, r.CurrentKnown, r.Obs.Running, r.Obs.Held, r.Obs.ArrivalRate)
	}
	want := fmt.Sprintf("ambiguous %s/metrics is the Endpoint Picker of InferencePool \"code\" and %s/metrics of \"chat\"", other.URL, chat.URL)
	if len(r.Errors) != 1 || r.Errors[0].Signal != "page" || !strings.HasPrefix(r.Errors[0].Reason+" "+r.Errors[0].Err.Error(), want) {
		t.Errorf("errors %v, want one page error starting %q", r.Errors, want)
	}
}

// TestEPPNoReadyEndpointNotIdle: an EPP reporting no ready endpoint (no
// model-server pod with fresh metrics: all starting or crashed, or their
// metrics unreadable to the EPP) for a target that does not scale to zero
// says nothing of the pool's load: running and waiting are unknown, with
// an error saying why, in both modes, so the decision holds the last
// desired (no-data). They read as 0, an idle pool: a pool decided at 7 went
// to minReplicaCount 1 after the scale-down window. A target with a zero:
// block still reads the empty pool as idle (TestEPPSameDecisionsBothModes).
func TestEPPNoReadyEndpointNotIdle(t *testing.T) {
	epp := epptest.Serve(epptest.State{Pool: "chat", Model: "llama", Requests: 10})
	defer epp.Close()
	const target = "\n  server: epp\n  metrics: [{type: queue, target: 10}]\n  maxReplicaCount: 10\n"
	emb, err := config.Parse([]byte(fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics]%s", epp.URL, target)), "emb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	check := func(mode string, src Source, tg *config.Target) {
		t.Helper()
		r := src.Read(t.Context(), []*config.Target{tg}, time.Now())[0]
		if !math.IsNaN(r.Obs.Running) || !math.IsNaN(r.Obs.Waiting) {
			t.Errorf("%s: running %v, waiting %v; want unknown", mode, r.Obs.Running, r.Obs.Waiting)
		}
		want := "running: empty: the EPP reports no ready endpoint"
		found := false
		for _, e := range r.Errors {
			found = found || strings.HasPrefix(e.Signal+": "+e.Reason+": "+e.Err.Error(), want)
		}
		if !found {
			t.Errorf("%s: errors %v, want one starting %q", mode, r.Errors, want)
		}
	}
	check("embedded", NewScrapeSource(5*time.Second), &emb.Targets[0])

	if testing.Short() {
		return
	}
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second,
		Targets: []promtest.Target{{URL: epp.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "service": "chat-epp"}}}})
	ps, pc := chatEPPSource(t, prom.URL, target)
	prom.WaitFor(t, `llm_d_epp_ready_endpoints{service="chat-epp"}`, 30*time.Second, func(vec model.Vector) bool { return len(vec) == 1 && vec[0].Value == 0 })
	check("prometheus", ps, &pc.Targets[0])
}

// TestEPPNoReadyGaugeNamesThePage: a page read without the EPP's ready
// endpoints (another port of the EPP, a router build without pool metrics)
// is named in the current error with what to check; a page that was not
// read at all has its own page error and no second one: "no EPP page
// reports ready endpoints" was said (and counted) for a page that answered
// 500 too.
func TestEPPNoReadyGaugeNamesThePage(t *testing.T) {
	for name, tc := range map[string]struct {
		status int
		want   []string // each error as "signal: reason: message" prefix
	}{
		"no ready gauge": {200, []string{"current: empty: %s/metrics: the page has no ready endpoints (llm_d_epp_ready_endpoints or inference_pool_ready_pods, a NaN read as none): is it the EPP's metrics port"}},
		"not read":       {500, []string{"page: unavailable: %s/metrics"}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				fmt.Fprint(w, "# TYPE llm_d_epp_request_total counter\nllm_d_epp_request_total 10\n")
			}))
			defer srv.Close()
			cfg, err := config.Parse([]byte(fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics]\n  server: epp\n  metrics: [{type: queue, target: 10}]\n  maxReplicaCount: 10\n", srv.URL)), "emb.yaml")
			if err != nil {
				t.Fatal(err)
			}
			r := NewScrapeSource(5*time.Second).Read(context.Background(), []*config.Target{&cfg.Targets[0]}, time.Now())[0]
			if r.CurrentKnown {
				t.Errorf("current %d known, want unknown", r.Obs.Current)
			}
			if len(r.Errors) != len(tc.want) {
				t.Fatalf("errors %v, want %d", r.Errors, len(tc.want))
			}
			for i, w := range tc.want {
				w = fmt.Sprintf(w, srv.URL)
				if got := r.Errors[i].Signal + ": " + r.Errors[i].Reason + ": " + r.Errors[i].Err.Error(); !strings.HasPrefix(got, w) {
					t.Errorf("error %q, want it to start %q", got, w)
				}
			}
		})
	}
}

// TestEPPNoAverageNamesThePage: a page with ready endpoints (2) but no
// average running requests under either name (a router that renamed or
// dropped it) has running unknown, and the error names the page and both
// names it looked for; "the EPP page has no pool average for running" said
// neither which page nor what to look for.
func TestEPPNoAverageNamesThePage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE llm_d_epp_ready_endpoints gauge\nllm_d_epp_ready_endpoints{name=\"chat\"} 2\n"+
			"# TYPE llm_d_epp_average_queue_size gauge\nllm_d_epp_average_queue_size{name=\"chat\"} 3\n")
	}))
	defer srv.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics]\n  server: epp\n  metrics: [{type: queue, target: 10}]\n  maxReplicaCount: 10\n", srv.URL)), "emb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := NewScrapeSource(5*time.Second).Read(context.Background(), []*config.Target{&cfg.Targets[0]}, time.Now())[0]
	if !math.IsNaN(r.Obs.Running) || r.Obs.Waiting != 6 || r.Obs.Current != 2 {
		t.Errorf("running %v waiting %v current %d; want unknown, 3 x 2 = 6, 2", r.Obs.Running, r.Obs.Waiting, r.Obs.Current)
	}
	want := fmt.Sprintf("running: empty: %s/metrics: no pool average for running (llm_d_epp_average_running_requests or inference_pool_average_running_requests, a NaN read as none) beside its 2 ready endpoints", srv.URL)
	if len(r.Errors) != 1 || !strings.HasPrefix(r.Errors[0].Signal+": "+r.Errors[0].Reason+": "+r.Errors[0].Err.Error(), want) {
		t.Errorf("errors %v, want one starting %q", r.Errors, want)
	}
}

// eppFlowRead is a reader of the embedded target chat on the EPP page at
// url (server: epp, minReplicaCount 0, zero: {flow_control: true}): each
// call reads the page once.
func eppFlowRead(t *testing.T, url string) func() Reading {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics]\n  server: epp\n  metrics: [{type: queue, target: 10}]\n  minReplicaCount: 0\n  maxReplicaCount: 10\n  zero: {flow_control: true}\n", url)), "emb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return func() Reading {
		return NewScrapeSource(5*time.Second).Read(context.Background(), []*config.Target{&cfg.Targets[0]}, time.Now())[0]
	}
}

// TestEPPHeldNaNFlowNamed: a pool at zero whose EPP page has a flow at 2
// and one at NaN has held unknown (the finite flow alone undercounts), so
// it neither activates on 2 nor goes idle; the error names the page and the
// NaN flow, reason nan. It said "no flow-control queue on every EPP page
// ...: is the flowControl feature gate on?", of a page that has the queue.
func TestEPPHeldNaNFlowNamed(t *testing.T) {
	epp := epptest.Serve(epptest.State{Pool: "chat", Model: "llama",
		Flows: []epptest.Flow{{FairnessID: "a", Priority: "0", Held: 2}, {FairnessID: "b", Priority: "0", Held: math.NaN()}}})
	defer epp.Close()
	read := eppFlowRead(t, epp.URL)
	r := read()
	if !math.IsNaN(r.Obs.Held) || r.Obs.Current != 0 || !r.CurrentKnown {
		t.Errorf("held %v current %d (known %v); want unknown and 0 known", r.Obs.Held, r.Obs.Current, r.CurrentKnown)
	}
	want := fmt.Sprintf("held: nan: %s/metrics: llm_d_epp_flow_control_queue_size has a NaN or infinite flow", epp.URL)
	if len(r.Errors) != 1 || !strings.HasPrefix(r.Errors[0].Signal+": "+r.Errors[0].Reason+": "+r.Errors[0].Err.Error(), want) {
		t.Errorf("errors %v, want one starting %q", r.Errors, want)
	}
}

// TestEPPHeldWrongTypeNamed: an EPP page (a relabelling exporter's) whose
// flow-control queue is declared a counter has held unknown, the error
// naming the page and the family, reason bad_data (scrape's one reader,
// readFlowQueue, as zero.held_scrape reads it). It said "no flow-control
// queue on every EPP page ...: is the flowControl feature gate on?", of a
// page that has it; beside the twin's gauge it read the twin's 4.
func TestEPPHeldWrongTypeNamed(t *testing.T) {
	page := "llm_d_epp_ready_endpoints{name=\"chat\"} 0\n# TYPE llm_d_epp_flow_control_queue_size counter\nllm_d_epp_flow_control_queue_size{inference_pool=\"chat\"} 9\n# TYPE inference_extension_flow_control_queue_size gauge\ninference_extension_flow_control_queue_size{inference_pool=\"chat\"} 4\n"
	epp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, page) }))
	defer epp.Close()
	read := eppFlowRead(t, epp.URL)
	r := read()
	if !math.IsNaN(r.Obs.Held) || r.Obs.Current != 0 || !r.CurrentKnown {
		t.Errorf("held %v current %d (known %v); want unknown and 0 known", r.Obs.Held, r.Obs.Current, r.CurrentKnown)
	}
	want := fmt.Sprintf("held: bad_data: %s/metrics: llm_d_epp_flow_control_queue_size is declared a counter, infscale reads it as a gauge", epp.URL)
	if len(r.Errors) != 1 || !strings.HasPrefix(r.Errors[0].Signal+": "+r.Errors[0].Reason+": "+r.Errors[0].Err.Error(), want) {
		t.Errorf("errors %v, want one starting %q", r.Errors, want)
	}
}

// TestEPPHeldNoRequestYet: an EPP with flow control on that has held no
// request since it started writes the pool's saturation but no queue series
// (the router's gauge vector has one per flow from its first request). A
// pool up at 1 replica with no traffic read held unknown ("is the
// flowControl feature gate on?") and never scaled to zero (an unknown held
// count is unknown activity); it reads 0 held now, known, nothing running.
// So does the page of an EPP whose idle flows the router collected (it
// deletes a collected flow's series).
func TestEPPHeldNoRequestYet(t *testing.T) {
	epp := epptest.Serve(epptest.State{Pool: "chat", Model: "llama", Flows: []epptest.Flow{}, Saturation: map[string]float64{"effective": 0},
		Endpoints: []epptest.Endpoint{{Name: "chat-0", Fresh: true}}})
	defer epp.Close()
	read := eppFlowRead(t, epp.URL)
	r := read()
	if r.Obs.Held != 0 || r.Obs.Running != 0 || r.Obs.Current != 1 || len(r.Errors) != 0 {
		t.Errorf("held %v running %v current %d errors %v; want 0 held known, 0 running, 1 current, no error", r.Obs.Held, r.Obs.Running, r.Obs.Current, r.Errors)
	}
	// A flow holds 2, then, idle past flowGCTimeout, the router collects it
	// and deletes its series (llm-d-router since July 2026): the page is
	// the one above again, 0 held, known (read unknown, a pool idle past
	// its flows' collection never reached zero).
	epp.Set(func(s *epptest.State) { s.Flows = []epptest.Flow{{FairnessID: "a", Priority: "0", Held: 2}} })
	if r = read(); r.Obs.Held != 2 || len(r.Errors) != 0 {
		t.Errorf("one flow holding 2: held %v errors %v; want 2", r.Obs.Held, r.Errors)
	}
	epp.Set(func(s *epptest.State) { s.Flows = []epptest.Flow{} })
	if r = read(); r.Obs.Held != 0 || len(r.Errors) != 0 {
		t.Errorf("the flow collected, its series deleted: held %v errors %v; want 0 held known", r.Obs.Held, r.Errors)
	}
	epp.Set(func(s *epptest.State) { s.Flows, s.Saturation = nil, nil }) // flow control off: unknown, said
	r = read()
	if !math.IsNaN(r.Obs.Held) || len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Err.Error(), "is the flowControl feature gate on?") {
		t.Errorf("flow control off: held %v errors %v; want unknown, the gate named", r.Obs.Held, r.Errors)
	}
}

// eppCollectTarget is eppTarget with a 10-minute cooldown: with a
// lookback of cooldown + 15m (promql.FlowQueueLookbackFor), 25m.
const eppCollectTarget = `
  server: epp
  metrics: [{type: queue, target: 10}]
  minReplicaCount: 0
  maxReplicaCount: 10
  zero: {flow_control: true, cooldownPeriod: 600s}
`

// idleDecision is the decision on o of a pool at 1 replica idle for 30
// minutes (past the 10-minute cooldown) by the state's bookkeeping.
func idleDecision(t *testing.T, tg *config.Target, o recommend.Observation, now time.Time) recommend.Decision {
	t.Helper()
	p, err := tg.Policy()
	if err != nil {
		t.Fatal(err)
	}
	st := &recommend.State{FirstSeen: now.Add(-time.Hour), LastActive: now.Add(-30 * time.Minute)}
	return recommend.Decide(&p, o, st, now)
}

// TestEPPHeldFlowCollectedPrometheus: the router collects an idle flow and
// deletes its queue series (5 to 10 minutes after its last request) while
// it writes the saturation every dispatch cycle. A flow holds 2 (held 2);
// collected, Prometheus mode read held unknown (no queue series), so a
// pool behind a cooldown of 10 minutes never reached zero in that mode.
// It reads 0 now, known, since a queue series was present within the
// lookback (25m here): 1 replica idle past its cooldown goes to 0
// (idle-to-zero), as embedded mode reads the page (TestEPPHeldNoRequestYet).
func TestEPPHeldFlowCollectedPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	epp := epptest.Serve(epptest.State{Pool: "chat", Model: "llama", Flows: []epptest.Flow{{FairnessID: "a", Priority: "0", Held: 2}},
		Saturation: map[string]float64{"effective": 0}, Endpoints: []epptest.Endpoint{{Name: "chat-0", Fresh: true}}})
	defer epp.Close()
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second,
		Targets: []promtest.Target{{URL: epp.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "service": "chat-epp"}}}})
	ps, pc := chatEPPSource(t, prom.URL, eppCollectTarget)
	const queue = `llm_d_epp_flow_control_queue_size{service="chat-epp"}`
	prom.WaitFor(t, queue, 30*time.Second, func(vec model.Vector) bool { return len(vec) == 1 && vec[0].Value == 2 })
	if r := ps.Read(t.Context(), []*config.Target{&pc.Targets[0]}, time.Now())[0]; r.Obs.Held != 2 {
		t.Errorf("one flow holding 2: held %v (errors %v); want 2", r.Obs.Held, r.Errors)
	}
	epp.Set(func(s *epptest.State) { s.Flows = []epptest.Flow{} })
	prom.WaitFor(t, queue, 30*time.Second, func(vec model.Vector) bool { return len(vec) == 0 })
	now := time.Now()
	r := ps.Read(t.Context(), []*config.Target{&pc.Targets[0]}, now)[0]
	if r.Obs.Held != 0 || r.Obs.Running != 0 || r.Obs.Current != 1 || len(r.Errors) != 0 {
		t.Fatalf("the flow collected: held %v running %v current %d errors %v; want 0 held known, 0 running, 1 current, no error", r.Obs.Held, r.Obs.Running, r.Obs.Current, r.Errors)
	}
	if d := idleDecision(t, &pc.Targets[0], r.Obs, now); d.Desired != 0 || d.Reason != recommend.ReasonIdleToZero {
		t.Errorf("1 replica idle 30m past a 10m cooldown, held 0: desired %d (%s), want 0 (idle-to-zero)", d.Desired, d.Reason)
	}
}

// TestEPPHeldNeverQueuedPrometheus: an EPP with flow control on that has
// held no request since Prometheus first scraped it (saturation, no queue
// series, none in the lookback) reads held unknown in Prometheus mode (a
// relabel drop of the queue family looks the same), the error saying what
// to check; the pool at 1, idle past its cooldown, stays at 1.
func TestEPPHeldNeverQueuedPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	epp := epptest.Serve(epptest.State{Pool: "chat", Model: "llama", Flows: []epptest.Flow{},
		Saturation: map[string]float64{"effective": 0}, Endpoints: []epptest.Endpoint{{Name: "chat-0", Fresh: true}}})
	defer epp.Close()
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second,
		Targets: []promtest.Target{{URL: epp.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "service": "chat-epp"}}}})
	ps, pc := chatEPPSource(t, prom.URL, eppCollectTarget)
	prom.WaitFor(t, `llm_d_epp_flow_control_pool_saturation{service="chat-epp"}`, 30*time.Second, func(vec model.Vector) bool { return len(vec) == 1 })
	now := time.Now()
	r := ps.Read(t.Context(), []*config.Target{&pc.Targets[0]}, now)[0]
	want := "the flow controller's saturation (llm_d_epp_flow_control_pool_saturation or inference_extension_flow_control_pool_saturation) is under the selector, but no flow-control queue series (llm_d_epp_flow_control_queue_size or inference_extension_flow_control_queue_size) is, now or in the last 25m"
	if !math.IsNaN(r.Obs.Held) || len(r.Errors) != 1 || r.Errors[0].Signal != "held" || r.Errors[0].Reason != "empty" || !errors.Is(r.Errors[0].Err, promql.ErrFlowQueueGone) ||
		!strings.Contains(r.Errors[0].Err.Error(), want) || !strings.Contains(r.Errors[0].Err.Error(), "does the scrape keep the queue family") {
		t.Fatalf("no queue series ever: held %v errors %v; want unknown, one held error (empty, ErrFlowQueueGone) with %q", r.Obs.Held, r.Errors, want)
	}
	if d := idleDecision(t, &pc.Targets[0], r.Obs, now); d.Desired != 1 {
		t.Errorf("held unknown: desired %d (%s), want 1 (unknown activity is not idleness)", d.Desired, d.Reason)
	}
}

// TestEPPHeldQueueRelabelledAwayPrometheus: a scrape that drops the
// flow-control queue family (metric_relabel_configs: one series per flow)
// and keeps the saturation. The EPP holds 2 requests; Prometheus has no
// queue series, now or in the lookback: held is unknown, not 0, and the
// pool at 1 idle past its cooldown stays at 1 (0 read there would scale it
// down with 2 requests held, and never wake it).
func TestEPPHeldQueueRelabelledAwayPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	epp := epptest.Serve(epptest.State{Pool: "chat", Model: "llama", Flows: []epptest.Flow{{FairnessID: "a", Priority: "0", Held: 2}},
		Saturation: map[string]float64{"effective": 0}, Endpoints: []epptest.Endpoint{{Name: "chat-0", Fresh: true}}})
	defer epp.Close()
	host := strings.TrimPrefix(epp.URL, "http://")
	prom := promtest.Start(t, promtest.Options{Config: fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s, scrape_timeout: 1s}
scrape_configs:
- job_name: epp
  static_configs: [{targets: [%q], labels: {namespace: llm, service: chat-epp}}]
  metric_relabel_configs:
  - {source_labels: [__name__], regex: '.*flow_control_queue_size', action: drop}
`, host)})
	ps, pc := chatEPPSource(t, prom.URL, eppCollectTarget)
	prom.WaitFor(t, `llm_d_epp_flow_control_pool_saturation{service="chat-epp"}`, 30*time.Second, func(vec model.Vector) bool { return len(vec) == 1 })
	prom.WaitFor(t, `absent({__name__=~".*flow_control_queue_size"})`, 30*time.Second, func(vec model.Vector) bool { return len(vec) == 1 })
	now := time.Now()
	r := ps.Read(t.Context(), []*config.Target{&pc.Targets[0]}, now)[0]
	if !math.IsNaN(r.Obs.Held) || len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Err.Error(), "metric_relabel_configs drop of it leaves held unknown") {
		t.Fatalf("queue family dropped: held %v errors %v; want unknown, the relabel named", r.Obs.Held, r.Errors)
	}
	if d := idleDecision(t, &pc.Targets[0], r.Obs, now); d.Desired != 1 {
		t.Errorf("held unknown: desired %d (%s), want 1", d.Desired, d.Reason)
	}
}

// chatEPPSource is a Prometheus-mode config at url of one target, chat,
// selecting the chat-epp service's series, with target's YAML after its
// selector, and its source.
func chatEPPSource(t *testing.T, url, target string) (*PrometheusSource, *config.File) {
	t.Helper()
	pc, err := config.Parse([]byte(fmt.Sprintf("prometheus: {url: %s}\ntargets:\n- name: chat\n  selector: '{namespace=\"llm\", service=\"chat-epp\"}'%s", url, target)), "prom.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := NewPrometheusSource(pc.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	return ps, pc
}
