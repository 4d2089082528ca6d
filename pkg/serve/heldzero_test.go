package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
)

// eppZeroPrometheus answers /api/v1/query as Prometheus answers the queries
// pkg/promql builds for an EPP target read one signal a query (BatchSize
// 1) whose pool is at zero: ready endpoints 0 (current 0, known), one pool,
// one series of each pool gauge, running and waiting 0 (no replica), kv
// none, and held as *held says: "0" (the saturation and a queue series
// within the lookback), "gone" (the saturation, no queue series within the
// lookback: Prometheus answers the held query's last branch, -1, as
// TestRealEPPHeldCollectedLookback reads through a real Prometheus; a real
// one cannot be kept past a lookback of 15 minutes or more in a test),
// "off" (no saturation either: no series), "timeout" (Prometheus's query
// timeout, 503 errorType timeout).
func eppZeroPrometheus(t *testing.T, held *atomic.Value) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		w.Header().Set("Content-Type", "application/json")
		vec := func(v ...string) {
			var parts []string
			for _, x := range v {
				parts = append(parts, fmt.Sprintf(`{"metric":{},"value":[%s,"%s"]}`, r.FormValue("time"), x))
			}
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(parts, ","))
		}
		switch {
		case strings.Contains(q, "flow_control_queue_size{"): // held
			switch held.Load().(string) {
			case "0":
				vec("0")
			case "gone":
				vec("-1")
			case "off":
				vec()
			case "timeout":
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`)
			}
		case strings.HasPrefix(q, "count(count by (name)"), strings.HasPrefix(q, "max(count by (__name__"): // pools, pool_series
			vec("1")
		case strings.Contains(q, "average_kv_cache_utilization"):
			vec()
		case strings.Contains(q, "average_running_requests"), strings.Contains(q, "average_queue_size"), strings.Contains(q, "ready_endpoints"):
			vec("0")
		default:
			vec()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// eppZeroConfig is a pool read from its EPP, min 0, held from the
// flow-control queue, cooldown 5 minutes: the held query's lookback is
// 5m + 15m = 20m (promql.FlowQueueLookbackFor).
const eppZeroConfig = `
prometheus: {url: %s, timeout: 1s}
targets:
- name: chat
  selector: '{namespace="llm", service="chat-epp"}'
  server: epp
  metrics: [{type: queue, target: 10}]
  minReplicaCount: 0
  maxReplicaCount: 10
  zero: {flow_control: true, cooldownPeriod: 300s}
`

// TestHeldZeroCarried: a pool idle at zero whose flow-control queue series
// are gone (the router deleted its idle flows' series more than the 20m
// lookback ago) reads held unknown (empty, ErrFlowQueueGone). At zero held
// is the only signal: no decision was valid, the decisions-stale alert
// paged. Now, when the stay at zero began with held known 0
// (State.HeldZeroAt), held reads 0: the decision is valid (desired 0, no
// error counted) and its record says so; a timeout, or no saturation
// either, is still an error; a restart with the state file carries on; a
// fresh serve (no state) keeps the error.
func TestHeldZeroCarried(t *testing.T) {
	var held atomic.Value
	srv := eppZeroPrometheus(t, &held)
	cfg, err := config.Parse([]byte(fmt.Sprintf(eppZeroConfig, srv.URL)), "prom.yaml")
	if err != nil {
		t.Fatal(err)
	}
	store, err := NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	clk := t0
	now := func() time.Time { return clk }
	store.Now = now
	start := func(store *Store) (*Loop, *Metrics, *[]Record) {
		src, err := NewPrometheusSourceFromRoundTripper(srv.URL, nil, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		src.Evaluator.BatchSize = 1
		m := NewMetrics(prometheus.NewRegistry(), "test")
		var recs []Record
		l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Now: now, Store: store, OnDecision: func(r Record) { recs = append(recs, r) }})
		if err := l.SetConfig(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
		return l, m, &recs
	}
	type want struct {
		valid   bool
		errs    string // the record's errors, joined
		warning string // the record's warnings, joined
		empty   float64
	}
	check := func(what string, l *Loop, m *Metrics, recs *[]Record, w want) {
		t.Helper()
		before := len(*recs)
		l.Cycle(t.Context())
		if len(*recs) != before+1 {
			t.Fatalf("%s: %d records, want 1", what, len(*recs)-before)
		}
		r := (*recs)[len(*recs)-1]
		valid := false
		for _, raw := range r.Raw {
			valid = valid || raw.Valid
		}
		errs, warns := strings.Join(r.Errors, "; "), strings.Join(r.Warnings, "; ")
		// At zero, nothing held: idle-to-zero, 0; held unknown (the only
		// signal at zero): no metric known, the last desired 0 held.
		reason := "no-data"
		if w.valid {
			reason = "idle-to-zero"
		}
		if valid != w.valid || r.Desired != 0 || r.Reason != reason || !strings.Contains(errs, w.errs) || (w.errs == "") != (errs == "") || warns != w.warning || queryErrors(m, "chat", "empty") != w.empty {
			t.Errorf("%s: valid %v desired %d (%s) errors %q warnings %q empty %v;\nwant valid %v desired 0 (%s), errors with %q, warnings %q, empty %v",
				what, valid, r.Desired, r.Reason, errs, warns, queryErrors(m, "chat", "empty"), w.valid, reason, w.errs, w.warning, w.empty)
		}
	}
	carried := "held 0: no flow-control queue series within 20m; carried from the known 0 at zero at 2026-01-05T10:00:00Z"

	// A fresh serve (no state) on a pool at zero past the lookback: the
	// error stays, counted (empty), no valid decision.
	held.Store("gone")
	l0, m0, r0 := start(nil)
	check("no state, gone", l0, m0, r0, want{errs: "held: empty: promql: empty: flow-control saturation without a queue series within the lookback", empty: 1})

	// t0: at zero, held known 0 (a queue series within the lookback):
	// valid, desired 0; the stay at zero begins (held_zero_at t0).
	held.Store("0")
	l1, m1, r1 := start(store)
	check("t0, held 0", l1, m1, r1, want{valid: true})
	// t0+15s: the series gone: held 0 carried from t0, valid, nothing counted.
	clk = t0.Add(15 * time.Second)
	held.Store("gone")
	check("t0+15s, gone", l1, m1, r1, want{valid: true, warning: carried})
	// t0+30s: Prometheus times out: an error (never carried), no valid decision.
	clk = t0.Add(30 * time.Second)
	held.Store("timeout")
	check("t0+30s, timeout", l1, m1, r1, want{errs: "held: timeout:"})
	if got := queryErrors(m1, "chat", "timeout"); got != 1 {
		t.Errorf("timeouts counted %v, want 1", got)
	}
	// t0+45s: no saturation either (flow control turned off, the EPP no
	// longer scraped): an error, counted, never carried.
	clk = t0.Add(45 * time.Second)
	held.Store("off")
	check("t0+45s, off", l1, m1, r1, want{errs: "is the flowControl feature gate on", empty: 1})
	// t0+60s: gone again: carried, still from t0 (an unknown held at zero
	// keeps the stay); nothing more counted.
	clk = t0.Add(60 * time.Second)
	held.Store("gone")
	check("t0+60s, gone", l1, m1, r1, want{valid: true, warning: carried, empty: 1})

	// t0+10h (overnight): still carried from t0. A restart a minute later
	// (the state file saved at each decision, within the store's MaxAge
	// of an hour): carried on.
	clk = t0.Add(10 * time.Hour)
	check("t0+10h, gone", l1, m1, r1, want{valid: true, warning: carried, empty: 1})
	clk = t0.Add(10*time.Hour + time.Minute)
	l2, m2, r2 := start(store)
	check("restart, gone", l2, m2, r2, want{valid: true, warning: carried})
}

// TestHeldZeroReload: the carry's proof is a known 0 at zero read by the
// flow-control query (the queue family scraped). A pool at zero whose held
// was read by a zero.held query (here one that reads 0 whatever is
// scraped, `... or vector(0)`: held_zero_at t0), reloaded at t0+15s to
// flow_control with no queue series within the lookback, had held 0
// carried "from the known 0 at zero" of the other query: now it is the
// error (empty, counted), until the flow-control query itself reads 0 at
// zero (t0+30s). A reload that changes only the cooldown keeps it
// (t0+45s: carried from t0+30s, the lookback 10m + 15m = 25m); another
// prometheus.url drops it (t0+60s).
func TestHeldZeroReload(t *testing.T) {
	var held atomic.Value
	srv, srv2 := eppZeroPrometheus(t, &held), eppZeroPrometheus(t, &held)
	parse := func(url, zero string) *config.File {
		t.Helper()
		body := strings.Replace(fmt.Sprintf(eppZeroConfig, url), "zero: {flow_control: true, cooldownPeriod: 300s}", "zero: "+zero, 1)
		cfg, err := config.Parse([]byte(body), "prom.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	flow := parse(srv.URL, "{flow_control: true, cooldownPeriod: 300s}")
	longer := parse(srv.URL, "{flow_control: true, cooldownPeriod: 600s}")
	query := parse(srv.URL, `{held: 'sum(llm_d_epp_flow_control_queue_size{service="chat-epp"}) or vector(0)', cooldownPeriod: 300s}`)
	other := parse(srv2.URL, "{flow_control: true, cooldownPeriod: 300s}")
	clk := t0
	src, err := NewPrometheusSourceFromRoundTripper(srv.URL, nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	src.Evaluator.BatchSize = 1
	m := NewMetrics(prometheus.NewRegistry(), "test")
	var recs []Record
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Now: func() time.Time { return clk }, OnDecision: func(r Record) { recs = append(recs, r) }})
	step := func(sec int, cfg *config.File, h string, valid bool, errs, warning string, empty float64) {
		t.Helper()
		clk = t0.Add(time.Duration(sec) * time.Second)
		if err := l.SetConfig(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
		held.Store(h)
		before := len(recs)
		l.Cycle(t.Context())
		if len(recs) != before+1 {
			t.Fatalf("t0+%ds: %d records, want 1", sec, len(recs)-before)
		}
		r := recs[len(recs)-1]
		ok := false
		for _, raw := range r.Raw {
			ok = ok || raw.Valid
		}
		e, w := strings.Join(r.Errors, "; "), strings.Join(r.Warnings, "; ")
		if ok != valid || r.Desired != 0 || !strings.Contains(e, errs) || (errs == "") != (e == "") || w != warning || queryErrors(m, "chat", "empty") != empty {
			t.Errorf("t0+%ds: valid %v desired %d errors %q warnings %q empty %v; want valid %v desired 0, errors with %q, warnings %q, empty %v",
				sec, ok, r.Desired, e, w, queryErrors(m, "chat", "empty"), valid, errs, warning, empty)
		}
	}
	gone := "held: empty: promql: empty: flow-control saturation without a queue series within the lookback"
	step(0, query, "0", true, "", "", 0)
	step(15, flow, "gone", false, gone, "", 1)
	step(30, flow, "0", true, "", "", 1)
	step(45, longer, "gone", true, "", "held 0: no flow-control queue series within 25m; carried from the known 0 at zero at 2026-01-05T10:00:30Z", 1)
	step(60, other, "gone", false, gone, "", 2)
}

// TestHeldZeroRestartReaderChanged: the carry's proof is of one reader
// (TestHeldZeroReload), across a restart too. A pool at zero whose held
// was read by a zero.held query that reads 0 whatever is scraped (`... or
// vector(0)`: held_zero_at t0, saved in the state file), restarted a
// minute later with zero.flow_control and no queue series within the
// lookback, had held 0 carried "from the known 0 at zero" of the other
// query (the pool kept at zero by a 0 the flow-control query never read):
// now it is the error (empty, counted), as after a reload. A restart with
// the same reader carries on (TestHeldZeroCarried), and so does one that
// changes only the cooldown (the lookback 10m + 15m = 25m).
func TestHeldZeroRestartReaderChanged(t *testing.T) {
	var held atomic.Value
	srv := eppZeroPrometheus(t, &held)
	parse := func(zero string) *config.File {
		t.Helper()
		body := strings.Replace(fmt.Sprintf(eppZeroConfig, srv.URL), "zero: {flow_control: true, cooldownPeriod: 300s}", "zero: "+zero, 1)
		cfg, err := config.Parse([]byte(body), "prom.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	query := parse(`{held: 'sum(llm_d_epp_flow_control_queue_size{service="chat-epp"}) or vector(0)', cooldownPeriod: 300s}`)
	flow := parse("{flow_control: true, cooldownPeriod: 300s}")
	longer := parse("{flow_control: true, cooldownPeriod: 600s}")
	store, err := NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	clk := t0
	store.Now = func() time.Time { return clk }
	// step starts a serve on cfg (a restart: a new Loop on the same state
	// dir) at t0+sec and runs one cycle with held as h.
	step := func(sec int, cfg *config.File, h string, valid bool, errs, warning string) {
		t.Helper()
		clk = t0.Add(time.Duration(sec) * time.Second)
		src, err := NewPrometheusSourceFromRoundTripper(srv.URL, nil, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		src.Evaluator.BatchSize = 1
		m := NewMetrics(prometheus.NewRegistry(), "test")
		var recs []Record
		l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Now: func() time.Time { return clk }, Store: store, OnDecision: func(r Record) { recs = append(recs, r) }})
		if err := l.SetConfig(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
		held.Store(h)
		l.Cycle(t.Context())
		if len(recs) != 1 {
			t.Fatalf("t0+%ds: %d records, want 1", sec, len(recs))
		}
		r := recs[0]
		ok := false
		for _, raw := range r.Raw {
			ok = ok || raw.Valid
		}
		e, w := strings.Join(r.Errors, "; "), strings.Join(r.Warnings, "; ")
		if ok != valid || r.Desired != 0 || !strings.Contains(e, errs) || (errs == "") != (e == "") || w != warning {
			t.Errorf("t0+%ds: valid %v desired %d errors %q warnings %q; want valid %v desired 0, errors with %q, warnings %q",
				sec, ok, r.Desired, e, w, valid, errs, warning)
		}
	}
	gone := "held: empty: promql: empty: flow-control saturation without a queue series within the lookback"
	step(0, query, "0", true, "", "")       // held_zero_at t0, by the query
	step(60, flow, "gone", false, gone, "") // restarted on flow_control: not the query's 0
	step(120, flow, "0", true, "", "")      // the flow-control query reads 0 at zero: held_zero_at t0+120s
	step(180, longer, "gone", true, "", "held 0: no flow-control queue series within 25m; carried from the known 0 at zero at 2026-01-05T10:02:00Z")
}

// TestHeldReaderStable: held_reader is what every state file keeps, so it
// must be the same for the same config in every run and every version:
// one that changed (a config field renamed, reordered, or encoded another
// way) would drop held_zero_at from every target at zero on the upgrade's
// restart, each then in error until its pool's next request. The value is
// worked out by hand: the first 8 bytes of the SHA-256 of this JSON (the
// server's name, the selector, scrape, the pool, the zero keys with the
// cooldown zeroed, prometheus.url), by sha256sum.
// The cooldown does not change it.
func TestHeldReaderStable(t *testing.T) {
	const encoded = `{"Server":"vllm","Selector":"{app=\"chat\"}","Scrape":{"URLs":null,"Pods":null},"Pool":null,` +
		`"Zero":{"Cooldown":"0s","Held":"sum(held)","HeldScrape":"","FlowControl":false},"Prometheus":"http://prom:9090"}`
	const want = "fb1a90e16cb73df1" // printf '%s' "$encoded" | sha256sum | cut -c1-16
	if sum := sha256.Sum256([]byte(encoded)); hex.EncodeToString(sum[:8]) != want {
		t.Fatalf("the test's own figures disagree: sha256 of the JSON is not %s", want)
	}
	vllm, err := modelserver.ParseServer("vllm")
	if err != nil {
		t.Fatal(err)
	}
	for _, cooldown := range []time.Duration{0, 300 * time.Second} {
		tg := &config.Target{Server: vllm, Selector: `{app="chat"}`, Zero: &config.Zero{Held: "sum(held)", Cooldown: model.Duration(cooldown)}}
		if got := heldReader(tg, "http://prom:9090"); got != want {
			t.Errorf("cooldown %v: held_reader %s, want %s (sha256 of %s): every state file's held_reader would change", cooldown, got, want, encoded)
		}
	}
}
