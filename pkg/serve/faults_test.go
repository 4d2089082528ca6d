package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
)

// promAnswers is a fake Prometheus for the fault tests: each query is
// answered by the first rule whose needle it contains (in order), else with
// an empty vector. A rule's answer is a list of sample values ("NaN"
// allowed; none: an empty result), or an HTTP status with an error body.
type promAnswers struct {
	mu      sync.Mutex
	rules   []promRule
	queries atomic.Int64
}

type promRule struct {
	needle  string
	values  []string
	status  int    // 0: 200 with values
	warning string // with status 0: the answer's warnings field
}

func (p *promAnswers) set(rules ...promRule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = rules
}

func (p *promAnswers) serve(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.queries.Add(1)
		q := r.FormValue("query")
		p.mu.Lock()
		rules := p.rules
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		for _, rule := range rules {
			if !strings.Contains(q, rule.needle) {
				continue
			}
			if rule.status != 0 {
				w.WriteHeader(rule.status)
				fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"refused by the fake"}`)
				return
			}
			writeVector(w, r, rule.values, rule.warning)
			return
		}
		writeVector(w, r, nil)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// vllmRules answers a one-target vLLM plan: no stuck pod, pods reporting,
// running and waiting totals, and the replicas query; rules put before
// them take precedence.
func vllmRules(pods, running, waiting string, before ...promRule) []promRule {
	return append(before,
		promRule{needle: "min_over_time"}, // pkg/promql's stuck queries: no pod is stuck
		promRule{needle: "count(", values: []string{pods}},
		promRule{needle: "num_requests_running", values: []string{running}},
		promRule{needle: "num_requests_waiting", values: []string{waiting}},
		promRule{needle: "kube_deployment_spec_replicas", values: []string{pods}},
	)
}

// writeVector answers r with a vector of vals, one pod each, at the
// evaluation time r asks (as Prometheus does), with warnings (at most one,
// "" none).
func writeVector(w http.ResponseWriter, r *http.Request, vals []string, warnings ...string) {
	var parts []string
	for i, v := range vals {
		parts = append(parts, fmt.Sprintf(`{"metric":{"pod":"p%d"},"value":[%s,"%s"]}`, i, r.FormValue("time"), v))
	}
	warn := ""
	for _, w := range warnings {
		if w != "" {
			warn = fmt.Sprintf(`"warnings":[%q],`, w)
		}
	}
	fmt.Fprintf(w, `{"status":"success",%s"data":{"resultType":"vector","result":[%s]}}`, warn, strings.Join(parts, ","))
}

// promLoop is a Loop over the fake at srv with config body (%s: the URL), a
// manual clock starting at t0 (advance *now), one query per target and
// signal (BatchSize 1) unless batch > 1.
func promLoop(t *testing.T, srv *httptest.Server, body string, batch int, store *Store, lg ...*slog.Logger) (*Loop, *Metrics, *time.Time) {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(body, srv.URL)), "faults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewPrometheusSourceFromRoundTripper(srv.URL, nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	src.Evaluator.BatchSize = batch
	now := t0
	m := NewMetrics(prometheus.NewRegistry(), "test")
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Now: func() time.Time { return now }, Store: store})
	if len(lg) > 0 {
		l.log = lg[0]
	}
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return l, m, &now
}

// chatConfig is one Prometheus-mode target with a replicas query (%s: the
// fake's URL); zeroConfig adds scale to zero with a 60 s cooldown.
const chatConfig = `
prometheus: {url: %s}
targets:
- name: chat
  selector: '{app="chat"}'
  replicas: 'kube_deployment_spec_replicas{deployment="chat"}'
  metrics: [{type: queue, target: 4}]
  max: 8
`

const zeroConfig = chatConfig + `  min: 0
  zero: {cooldown: 60s, held: 'sum(held_requests{host="chat"})'}
`

// Issue 13 item 1 against a fake Prometheus: 1 replica, running and
// waiting 0, min 0 with a 60 s cooldown, and the held query empty (then
// HTTP 500): for 10 minutes (40 cycles, far beyond the cooldown) desired
// stays 1 (cooldown), /debug/decisions shows held null and no step says
// "held 0". Once held reads 0, the cooldown counts from the last unknown
// reading: 4 cycles later (60 s) desired is 0.
func TestServeZeroUnknownHeld(t *testing.T) {
	fake := &promAnswers{}
	for _, held := range []promRule{{needle: "held_requests"}, {needle: "held_requests", status: 500}} {
		fake.set(vllmRules("1", "0", "0", held)...)
		l, m, now := promLoop(t, fake.serve(t), zeroConfig, 1, nil)
		for i := 0; i < 40; i++ {
			l.Cycle(context.Background())
			r := lastRecord(l, "chat")
			if got := desired(t, m, "chat"); got != 1 {
				t.Fatalf("held status %d, cycle %d: desired %v (%s), want 1", held.status, i, got, r.Reason)
			}
			if r.Signals.Held != nil {
				t.Fatalf("held %v, want null (unknown)", *r.Signals.Held)
			}
			for _, s := range r.Steps {
				if s.Reason == recommend.ReasonIdleToZero {
					t.Fatalf("step %+v reads an unknown held as 0 (idle to zero)", s)
				}
			}
			*now = now.Add(15 * time.Second)
		}
		fake.set(vllmRules("1", "0", "0", promRule{needle: "held_requests", values: []string{"0"}})...)
		lastUnknown := now.Add(-15 * time.Second) // the last cycle's time
		for ; now.Sub(lastUnknown) < 60*time.Second; *now = now.Add(15 * time.Second) {
			l.Cycle(context.Background())
			if got := desired(t, m, "chat"); got != 1 {
				t.Fatalf("%v after the last unknown held: %v, want 1 (cooldown)", now.Sub(lastUnknown), got)
			}
		}
		l.Cycle(context.Background()) // 60 s after the last unknown reading
		if got, r := desired(t, m, "chat"), lastRecord(l, "chat"); got != 0 || r.Reason != "idle-to-zero" {
			t.Errorf("60 s of known idleness: %v (%s), want 0 idle-to-zero", got, r.Reason)
		}
	}
}

const ttftConfig = `
prometheus: {url: %s}
targets:
- name: chat
  selector: '{app="chat"}'
  replicas: 'kube_deployment_spec_replicas{deployment="chat"}'
  metrics: [{type: queue, target: 4}, {type: ttft, target: 2s}]
  max: 8
  behavior: {scaleDown: {stabilizationWindowSeconds: 0}}
`

// Issue 13 item 2 against a fake Prometheus: 5 replicas, running 0,
// waiting 0, the TTFT quantile NaN (no request finished in the window):
// the ttft metric abstains, the queue's ceil(0/4) = 0 decides, min 1, the
// default scale-down limit (100 % per 15 s) allows 5 → 1 at once; no
// query error is counted for it. A TTFT read that fails (HTTP 500) is
// unknown and holds 5 (partial-data).
func TestServeIdleTTFTAbstains(t *testing.T) {
	for _, tc := range []struct {
		ttft   promRule
		want   float64
		reason string
	}{
		{promRule{needle: "histogram_quantile", values: []string{"NaN"}}, 1, "TooFewReplicas"},
		{promRule{needle: "histogram_quantile", status: 500}, 5, "partial-data"},
	} {
		fake := &promAnswers{}
		fake.set(vllmRules("5", "0", "0", tc.ttft)...)
		l, m, _ := promLoop(t, fake.serve(t), ttftConfig, 1, nil)
		l.Cycle(context.Background())
		if got, r := desired(t, m, "chat"), lastRecord(l, "chat"); got != tc.want || r.Reason != tc.reason {
			t.Errorf("ttft status %d: desired %v (%s), want %v (%s); steps %v", tc.ttft.status, got, r.Reason, tc.want, tc.reason, r.Steps)
		}
		if got := queryErrors(m, "chat", "nan"); got != 0 {
			t.Errorf("query_errors_total{reason=nan} = %v, want 0 (an idle quantile is not a failed read)", got)
		}
	}
}

// Issue 13 item 4 against a fake Prometheus: a state file saved at
// desired 5 ten minutes before the restart (older than the 300 s
// scale-down window, younger than the 1 h MaxAge); 5 replicas with running
// and waiting 0 ask for ceil(0/4) = 0, min 1. The downtime is unknown, so
// the first cycle holds 5 (it dropped 5 → 1 at once), and so does every
// cycle until a full window of fresh observations: 1 at restart + 300 s.
// A state file older than MaxAge is ignored with a log line naming it.
func TestServeRestartHoldsAWindow(t *testing.T) {
	fake := &promAnswers{}
	fake.set(vllmRules("5", "0", "0")...)
	srv := fake.serve(t)
	for _, age := range []time.Duration{10 * time.Minute, 2 * time.Hour} {
		dir := t.TempDir()
		store, err := NewStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		saved := t0.Add(-age).Format(time.RFC3339)
		writeState(t, dir, "chat", `{"version":1,"desired":5,"current":5,"state":{"recommendations":[{"at":"`+saved+`","replicas":5}],"last_desired":5,"last_at":"`+saved+`"},"saved_at":"`+saved+`"}`)
		store.Now = func() time.Time { return t0 }
		var logs strings.Builder
		l, m, now := promLoop(t, srv, chatConfig, 1, store, slog.New(slog.NewTextHandler(&logs, nil)))
		if age > time.Hour {
			if !strings.Contains(logs.String(), "state file ignored") || !strings.Contains(logs.String(), "chat.json") {
				t.Errorf("a 2 h old state file ignored without a log line naming it: %q", logs.String())
			}
			continue
		}
		for ; now.Sub(t0) < 300*time.Second; *now = now.Add(15 * time.Second) {
			l.Cycle(context.Background())
			if got, r := desired(t, m, "chat"), lastRecord(l, "chat"); got != 5 {
				t.Fatalf("%v after the restart: %v (%s), want 5 held", now.Sub(t0), got, r.Reason)
			}
		}
		l.Cycle(context.Background()) // t0 + 300 s: the window (t0, t0+300] is all fresh
		if got := desired(t, m, "chat"); got != 1 {
			t.Errorf("a full window after the restart: %v, want 1", got)
		}
	}
}

// Issue 13 item 9 against a fake Prometheus: 100 targets, every batched
// query answered 400 (bad_data), every single-target query answered. The
// first cycle sends the plan's B batches and retries each target alone
// once (B + 100·B: the fallback); the cycles after it, inside the backoff
// (at least 30 s), send the B batches only (it was 447 queries every
// cycle), and each target's failed reads are counted in
// infscale_query_errors_total{reason="bad_data"}.
func TestServeRejectedBatchBounded(t *testing.T) {
	fake := &promAnswers{}
	fake.set(vllmRules("2", "1", "1", promRule{needle: "label_replace(", status: 400})...)
	var body strings.Builder
	body.WriteString("prometheus: {url: %s}\ntargets:\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&body, "- {name: t%d, selector: '{app=\"t%d\"}', replicas: 'kube_deployment_spec_replicas{deployment=\"t%d\"}', metrics: [{type: queue, target: 4}], max: 8}\n", i, i, i)
	}
	l, m, now := promLoop(t, fake.serve(t), body.String(), 0, nil)
	src := l.source.(*PrometheusSource)
	l.Cycle(context.Background())
	first := int(fake.queries.Swap(0))
	batches := first / 101 // B + 100·B = 101·B
	if batches < 1 || first != 101*batches || src.Queries() != first {
		t.Fatalf("first cycle: %d queries (source says %d), want 101 × the batches", first, src.Queries())
	}
	if r := lastRecord(l, "t7"); r.Signals.Running == nil || *r.Signals.Running != 1 {
		t.Errorf("t7 after the fallback: running %v, want 1 (read alone)", r.Signals.Running)
	}
	*now = now.Add(15 * time.Second)
	l.Cycle(context.Background())
	// The batches only (the stuck batch is sent every 30 s: one fewer).
	if got := int(fake.queries.Swap(0)); got > batches || got < batches-1 {
		t.Errorf("second cycle: %d queries, want the %d batches at most", got, batches)
	}
	if got := queryErrors(m, "t7", "bad_data"); got < 1 {
		t.Errorf("query_errors_total{target=t7,reason=bad_data} = %v, want counted", got)
	}
	if r := lastRecord(l, "t7"); r.Reason != "no-data" {
		t.Errorf("t7 in the backoff: %s, want no-data (unknown, held)", r.Reason)
	}
}

// Issue 13 item 6: a reload that fails for any reason keeps the running
// configuration: a file nested 40,000 deep (it ran the YAML parser out of
// memory and killed serve) is refused by position, and a loader that
// panics is recovered; both targets are still configured afterwards.
func TestReloadFailureKeepsConfig(t *testing.T) {
	l, _ := newTestLoop(t, &fakeSource{}, nil)
	path := filepath.Join(t.TempDir(), "serve.yaml")
	deep := "targets: " + strings.Repeat("[", 40000) + strings.Repeat("]", 40000) + "\n"
	if err := os.WriteFile(path, []byte(deep), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := reload(t.Context(), l, config.Load, path); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("deep file: %v, want the nesting refused", err)
	}
	if _, err := reload(t.Context(), l, func(string) (*config.File, error) { panic("boom") }, path); err == nil || !strings.Contains(err.Error(), "panic") {
		t.Errorf("panicking loader: %v, want the panic as an error", err)
	}
	if n := len(l.Recent()); n != 2 {
		t.Errorf("%d targets after the failed reloads, want the 2 running", n)
	}
}

// Issue 13 item 5 against a fake Prometheus that answers the duplicated
// query (count of series minus count per pod) with 2: the target's copies
// are counted in infscale_deduplicated_series_total each cycle (2 + 2 =
// 4) and logged once.
func TestServeDuplicatesCountedAndLoggedOnce(t *testing.T) {
	fake := &promAnswers{}
	fake.set(vllmRules("2", "1", "1", promRule{needle: ") - count(", values: []string{"2"}})...)
	l, m, now := promLoop(t, fake.serve(t), chatConfig, 1, nil)
	var logs strings.Builder
	l.log = slog.New(slog.NewTextHandler(&logs, nil))
	l.Cycle(context.Background())
	*now = now.Add(15 * time.Second)
	l.Cycle(context.Background())
	if got := counterValue(t, m, "deduplicated_series_total", "chat", ""); got != 4 {
		t.Errorf("deduplicated_series_total %v, want 4", got)
	}
	if n := strings.Count(logs.String(), "duplicated series folded"); n != 1 {
		t.Errorf("%d log lines, want 1:\n%s", n, logs.String())
	}
}

// FuzzStoreLoad: any bytes as a state file load or fail with an error
// naming the file; a loaded one has a desired value in range.
func FuzzStoreLoad(f *testing.F) {
	f.Add([]byte(`{"version":1,"desired":3,"current":2,"state":{"recommendations":[{"at":"2026-01-05T10:00:00Z","replicas":3}]},"saved_at":"2026-01-05T10:00:00Z"}`))
	f.Add([]byte(`{"version":1,"desired":5,"desired":1,"state":{},"saved_at":"2026-01-05T10:00:00Z"}`))
	f.Add([]byte(`{"version":1,"desired":99999999999,"state":{}}`))
	f.Add([]byte(strings.Repeat("[", 20000)))
	dir := f.TempDir()
	store := &Store{Dir: dir, Now: func() time.Time { return t0 }}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, "chat.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := store.Load("chat")
		if err != nil && !strings.Contains(err.Error(), "chat.json") {
			t.Fatalf("error %q does not name the file", err)
		}
		if p != nil && (p.Desired < 0 || p.Desired > MaxRestoredReplicas) {
			t.Fatalf("desired %d out of range", p.Desired)
		}
	})
}

// Issue 13 item 3 in embedded mode: four pages, each running{engine="0"} 2
// and running{engine="1"} NaN, scale-down window 0. Each replica's running
// is unknown, so the queue is: no-data, keep the 4 pages (it went 4 → 2,
// reading 2 per page: ceil(8/4) = 2), and the NaN is counted (reason nan).
func TestScrapeNaNEngineHolds(t *testing.T) {
	var page atomic.Value
	page.Store("vllm:num_requests_running{engine=\"0\"} 2\nvllm:num_requests_running{engine=\"1\"} NaN\nvllm:num_requests_waiting{engine=\"0\"} 0\nvllm:num_requests_waiting{engine=\"1\"} 0\n")
	var urls []string
	for i := 0; i < 4; i++ {
		urls = append(urls, switchPage(t, &page).URL+"/metrics")
	}
	l, m := scrapeQueueCycle(t, urls, 4)
	if got, r := desired(t, m, "chat"), lastRecord(l, "chat"); got != 4 || r.Reason != "no-data" {
		t.Errorf("desired %v (%s), want 4 no-data", got, r.Reason)
	}
	if got := queryErrors(m, "chat", "nan"); got != 4 {
		t.Errorf("query_errors_total{reason=nan} = %v, want 4 (one per page)", got)
	}
}

// TestScrapeKVOnlyPageDoesNotVoteLoad: two pages running 12 and waiting 2
// each, a third with its KV usage but no running or waiting sample (its
// families renamed by a server upgrade, or the page cut after the KV
// line), queue target 16, scale-down window 0. The third replica's load is
// unknown: a missing pod for the HPA's rule, counted at target on a
// scale-down, so (28 + 16) / (3 × 16) = 0.92 is inside the tolerance and 3
// stay, as Prometheus mode counts reporting pods by their running series.
// It voted as a replica running nothing: 28 / (3 × 16) = 0.58, desired
// ceil(28 / 16) = 2, with nothing said. Its page is named in a warning.
func TestScrapeKVOnlyPageDoesNotVoteLoad(t *testing.T) {
	var busy, kvOnly atomic.Value
	busy.Store("vllm:num_requests_running 12\nvllm:num_requests_waiting 2\nvllm:kv_cache_usage_perc 0.3\n")
	kvOnly.Store("vllm:num_reqs_running 12\nvllm:num_reqs_waiting 2\nvllm:kv_cache_usage_perc 0.3\n")
	renamed := switchPage(t, &kvOnly).URL + "/metrics"
	urls := []string{switchPage(t, &busy).URL + "/metrics", switchPage(t, &busy).URL + "/metrics", renamed}
	l, m := scrapeQueueCycle(t, urls, 16)
	r := lastRecord(l, "chat")
	if got := desired(t, m, "chat"); got != 3 || r.Current != 3 {
		t.Errorf("desired %v (%s) from current %d, want 3 from 3", got, r.Reason, r.Current)
	}
	if len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], renamed+": ") || !strings.Contains(r.Warnings[0], "no running or waiting sample") {
		t.Errorf("warnings %q, want one naming %s: no running or waiting sample", r.Warnings, renamed)
	}
}

// TestServeShowsPrometheusWarnings: Prometheus sends its values with
// warnings (a PromQL annotation: the arithmetic's, over data it read
// whole). They were dropped: the decision read the values and nothing said
// they came with a warning. The values are still read (running 1 +
// waiting 7 = 8 over target 4: desired 2), and the warning is in the
// decision record and logged at warn, at most once a minute per target
// (cycles 15 s apart: logged at 0 s and 60 s, 3 suppressed in between).
// A warning of data not read (a partial answer) is TestServePartialAnswer's.
func TestServeShowsPrometheusWarnings(t *testing.T) {
	const w = "PromQL warning: encountered a mix of histograms and floats for metric name vllm:num_requests_waiting"
	fake := &promAnswers{}
	fake.set(vllmRules("1", "1", "7",
		promRule{needle: "min_over_time"}, // the stuck queries (they read the waiting family too): none
		promRule{needle: "num_requests_waiting", values: []string{"7"}, warning: w})...)
	l, m, now := promLoop(t, fake.serve(t), chatConfig, 1, nil)
	var logs strings.Builder
	l.log = slog.New(slog.NewTextHandler(&logs, nil))
	for range 5 {
		l.Cycle(context.Background())
		*now = now.Add(15 * time.Second)
	}
	if got, r := desired(t, m, "chat"), lastRecord(l, "chat"); got != 2 || len(r.Warnings) != 1 || r.Warnings[0] != w {
		t.Errorf("desired %v, record warnings %q; want 2 and [%q]", got, r.Warnings, w)
	}
	if n := strings.Count(logs.String(), "prometheus answered with warnings"); n != 2 || !strings.Contains(logs.String(), "suppressed_since_last=3") ||
		!strings.Contains(logs.String(), w) {
		t.Errorf("%d log lines, want 2 (at 0 s and 60 s, 3 suppressed), naming the warning:\n%s", n, logs.String())
	}
}

// TestServePartialAnswer: a Thanos querier whose store of two of the four
// pods is down answers 200 with the other two's series and a warning (its
// partial response; VictoriaMetrics says "isPartial": true). 4 pods run 3
// and have 2 waiting each: queue 20 over target 4, desired 5. Then the
// store goes: the answers say running 6 and waiting 4 (half). Read as
// complete that was a queue of 10, ceil(10 / 4) = 3 with no stabilisation
// window: two replicas gone on a storage outage. The signals are unknown
// instead (reason partial, counted per signal), so the last desired, 5,
// is held (no-data) until the answers are whole again.
func TestServePartialAnswer(t *testing.T) {
	const w = `receive series from Addr: prometheus-b:10901 LabelSets: {replica="b"}: rpc error: code = Unavailable desc = connection refused`
	fake := &promAnswers{}
	fake.set(vllmRules("4", "12", "8")...)
	l, m, now := promLoop(t, fake.serve(t), chatConfig+"  behavior: {scaleDown: {stabilizationWindowSeconds: 0}}\n", 1, nil)
	l.Cycle(context.Background())
	if got := desired(t, m, "chat"); got != 5 {
		t.Fatalf("desired %v on whole answers, want 5 (ceil(20 / 4))", got)
	}
	fake.set(vllmRules("4", "12", "8",
		promRule{needle: "min_over_time"},
		promRule{needle: "count(", values: []string{"4"}},
		promRule{needle: "num_requests_running", values: []string{"6"}, warning: w},
		promRule{needle: "num_requests_waiting", values: []string{"4"}, warning: w})...)
	for range 3 {
		*now = now.Add(15 * time.Second)
		l.Cycle(context.Background())
		if got, r := desired(t, m, "chat"), lastRecord(l, "chat"); got != 5 || r.Reason != "no-data" {
			t.Fatalf("desired %v (%s) on partial answers, want 5 held (no-data); errors %q", got, r.Reason, r.Errors)
		}
	}
	if got := queryErrors(m, "chat", "partial"); got != 6 {
		t.Errorf("query_errors_total{reason=partial} = %v, want 6 (running and waiting, 3 cycles)", got)
	}
	if r := lastRecord(l, "chat"); len(r.Errors) != 2 || !strings.Contains(r.Errors[0], "the answer is partial") || !strings.Contains(r.Errors[0], "prometheus-b:10901") {
		t.Errorf("record errors %q, want running's and waiting's, saying partial and quoting the warning", r.Errors)
	}
	fake.set(vllmRules("4", "6", "2")...)
	*now = now.Add(15 * time.Second)
	l.Cycle(context.Background())
	if got := desired(t, m, "chat"); got != 2 {
		t.Errorf("desired %v once whole again (queue 8), want 2", got)
	}
}

// TestServeReusedStuckErrorCountedOnce: the stuck count is read every 30 s
// and reused between (docs/promql.md, "Stuck cadence"), its error too
// unless Prometheus failed (refused, 5xx, timeout: read again at the next
// cycle, pkg/promql's TestStuckReadAgainAfterOutage). Prometheus answers
// the stuck query with two different counts once, at t0 (ambiguous), then
// answers it again: cycles 15 s apart read it at t0 (failed) and t0+30 s
// (no pod stuck). The failure was counted at t0 and again at t0+15 s, whose
// cycle read nothing of it: counted once now, and the t0+15 s record says
// the error is the read's at t0.
func TestServeReusedStuckErrorCountedOnce(t *testing.T) {
	fake := &promAnswers{}
	fake.set(vllmRules("2", "8", "0", promRule{needle: "min_over_time", values: []string{"1", "2"}})...)
	l, m, now := promLoop(t, fake.serve(t), chatConfig, 1, nil)
	l.Cycle(context.Background()) // t0: the stuck read fails
	fake.set(vllmRules("2", "8", "0")...)
	*now = now.Add(15 * time.Second)
	l.Cycle(context.Background()) // t0+15 s: reused
	r := lastRecord(l, "chat")
	if got := counterValue(t, m, "query_errors_total", "chat", "ambiguous"); got != 1 {
		t.Errorf("query_errors_total{reason=ambiguous} %v after the reuse, want 1 (the read at t0)", got)
	}
	if len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "stuck: ambiguous:") || !strings.Contains(r.Errors[0], "(read at 2026-01-05T10:00:00Z, reused until the next read)") {
		t.Errorf("t0+15 s record errors %q, want the stuck read's of t0, said reused", r.Errors)
	}
	*now = now.Add(15 * time.Second)
	l.Cycle(context.Background()) // t0+30 s: read again
	if r := lastRecord(l, "chat"); len(r.Errors) != 0 || r.Stuck == nil || *r.Stuck != 0 {
		t.Errorf("t0+30 s: errors %q, stuck %v; want none and 0", r.Errors, r.Stuck)
	}
	if got := counterValue(t, m, "query_errors_total", "chat", "ambiguous"); got != 1 {
		t.Errorf("query_errors_total{reason=ambiguous} %v, want 1", got)
	}
}

// scrapeQueueCycle runs one cycle of target chat (vLLM pages at urls, the
// queue metric at target, max 10, scale-down window 0) at t0.
func scrapeQueueCycle(t *testing.T, urls []string, target int) (*Loop, *Metrics) {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
targets:
- name: chat
  server: vllm
  scrape: [%s]
  metrics: [{type: queue, target: %d}]
  max: 10
  behavior: {scaleDown: {stabilizationWindowSeconds: 0}}
`, strings.Join(urls, ", "), target)), "chat.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(prometheus.NewRegistry(), "test")
	l := newLoop(t, LoopOptions{Source: NewScrapeSource(2 * time.Second), Metrics: m, Interval: 15 * time.Second, Now: func() time.Time { return t0 }})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	l.Cycle(context.Background())
	return l, m
}
