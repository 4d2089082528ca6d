package serve

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
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
