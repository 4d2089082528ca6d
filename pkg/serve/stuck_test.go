package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/infscale/infscale/pkg/config"
)

// switchPage serves whatever page was stored last.
func switchPage(t *testing.T, page *atomic.Value) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, page.Load().(string))
	}))
	t.Cleanup(s.Close)
	return s
}

// The runaway guard is off: these tests pin the stuck rule against the
// HPA's arithmetic (with the guard, the 4 replicas asked for at cycle 1 and
// missing at cycle 2 would also hold the queue for the drain).
func stuckLoop(t *testing.T, urls []string, after int) (*Loop, *Metrics, *time.Time) {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
targets:
- name: chat
  server: vllm
  scrape: [%s]
  metrics: [{type: queue, target: 4}]
  max: 10
  guard: {off: true}
`, strings.Join(urls, ", "))), "stuck.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := NewScrapeSource(2 * time.Second)
	src.StuckAfter = after
	m := NewMetrics(prometheus.NewRegistry(), "test")
	now := t0
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Now: func() time.Time { return now }})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return l, m, &now
}

func stuckGauge(t *testing.T, m *Metrics) string {
	t.Helper()
	m.table.mu.Lock()
	defer m.table.mu.Unlock()
	return fmt.Sprint(m.table.targets["chat"].stuck)
}

// TestStuckEngineDoesNotVote is case C18 of docs/design.md in embedded mode: a vLLM
// replica with waiting 6, running 0, KV 0 (vllm-metal #479) beside a
// healthy one with running 10, waiting 0. Queue target 4 per replica, no
// replicas query (current = pages answered, then the last desired).
func TestStuckEngineDoesNotVote(t *testing.T) {
	var healthy, stuck atomic.Value
	healthy.Store(vllmPage("10", "0", "0.5"))
	stuck.Store(vllmPage("0", "6", "0"))
	h, s := switchPage(t, &healthy), switchPage(t, &stuck)
	l, m, now := stuckLoop(t, []string{h.URL, s.URL}, 0)
	ctx := context.Background()

	// Cycle 1: the stuck page is suspect once, inside the grace: it votes.
	// queue 10 + 6 = 16 over current 2: ratio 16 / (4 x 2) = 2 -> 16/4 = 4
	// (the HPA's default scale-up policies allow +4 pods or +100% per 15 s).
	l.Cycle(ctx)
	r := lastRecord(l, "chat")
	if r.Desired != 4 || *r.Signals.Queue != 16 || r.Stuck == nil || *r.Stuck != 0 {
		t.Fatalf("cycle 1: %+v, want desired 4, queue 16, stuck 0", r)
	}
	if g := stuckGauge(t, m); g != "0" {
		t.Errorf("cycle 1: infscale_stuck_replicas %s, want 0", g)
	}

	// Cycle 2: suspect twice in a row: it does not vote. queue 10 (not 16);
	// current is the last desired 4 (the consumer's spec), reporting 1, so
	// 3 replicas are missing: usage 10 / 1 / 4 = 2.5 > 1 (scale-up) counts
	// them at 0: 2.5 / 4 = 0.625, across 1 from 2.5: keep 4.
	*now = now.Add(15 * time.Second)
	l.Cycle(ctx)
	r = lastRecord(l, "chat")
	if r.Desired != 4 || *r.Signals.Queue != 10 || *r.Signals.Waiting != 0 || *r.Stuck != 1 ||
		len(r.StuckReplicas) != 1 || r.StuckReplicas[0] != s.URL {
		t.Fatalf("cycle 2: %+v, want desired 4, queue 10, waiting 0, stuck [%s]", r, s.URL)
	}
	if g := stuckGauge(t, m); g != "1" {
		t.Errorf("cycle 2: infscale_stuck_replicas %s, want 1", g)
	}
	if err := testutil.GatherAndCompare(m.table, strings.NewReader(`
# HELP infscale_stuck_replicas Replicas read as stuck engines at the last cycle: requests wait but none runs or no token is processed (embedded mode: two consecutive scrapes over at least 15s; Prometheus mode: 2m; docs/design.md case C18). They do not vote (left out of the totals, counted as missing pods). Absent when unknown.
# TYPE infscale_stuck_replicas gauge
infscale_stuck_replicas{target="chat"} 1
`), "infscale_stuck_replicas"); err != nil {
		t.Error(err)
	}

	// Cycle 3: the engine recovers (running 3, KV 0.2): it votes again and
	// the gauge clears. queue 13, current 4, reporting 2, 2 missing:
	// usage 13 / 2 / 4 = 1.625 -> 3.25 / 4 = 0.8125, across 1: keep 4.
	stuck.Store(vllmPage("3", "0", "0.2"))
	*now = now.Add(15 * time.Second)
	l.Cycle(ctx)
	r = lastRecord(l, "chat")
	if r.Desired != 4 || *r.Signals.Queue != 13 || *r.Stuck != 0 || len(r.StuckReplicas) != 0 {
		t.Fatalf("cycle 3: %+v, want desired 4, queue 13, stuck 0", r)
	}
	if g := stuckGauge(t, m); g != "0" {
		t.Errorf("cycle 3: infscale_stuck_replicas %s, want 0", g)
	}
}

// TestStuckEngineDoesNotScaleUp: a stuck replica with a long queue
// (waiting 30) beside running 10, target 4, max 10. Cycle 1 (inside the
// grace) counts it: queue 40 / 4 = 10 from current 2, rate-limited to
// max(2 + 100%, 2 + 4) = 6. Cycle 2, current 6:
//   - stuck replicas not voting: queue 10, reporting 1, 5 missing:
//     usage 10 / 1 / 4 = 2.5, at 0 for the missing: 2.5 / 6 = 0.42,
//     across 1: keep 6;
//   - counted as load (StuckAfter never reached): queue 40, reporting 2,
//     4 missing: usage 40 / 2 / 4 = 5, 10 / 6 = 1.67 -> ceil(1.67 x 6) = 10:
//     10 replicas for a queue that never drains.
func TestStuckEngineDoesNotScaleUp(t *testing.T) {
	for _, tc := range []struct {
		after       int
		wantQueue   float64
		wantDesired int
	}{{0, 10, 6}, {1000, 40, 10}} {
		t.Run(fmt.Sprint("after=", tc.after), func(t *testing.T) {
			var healthy, stuck atomic.Value
			healthy.Store(vllmPage("10", "0", "0.5"))
			stuck.Store(vllmPage("0", "30", "0"))
			h, s := switchPage(t, &healthy), switchPage(t, &stuck)
			l, _, now := stuckLoop(t, []string{h.URL, s.URL}, tc.after)
			l.Cycle(context.Background())
			if r := lastRecord(l, "chat"); r.Desired != 6 {
				t.Fatalf("cycle 1: desired %d, want 6 (%+v)", r.Desired, r.Steps)
			}
			*now = now.Add(15 * time.Second)
			l.Cycle(context.Background())
			r := lastRecord(l, "chat")
			if r.Desired != tc.wantDesired || *r.Signals.Queue != tc.wantQueue {
				t.Errorf("cycle 2: desired %d queue %v, want %d and %v (%+v)", r.Desired, *r.Signals.Queue, tc.wantDesired, tc.wantQueue, r.Steps)
			}
		})
	}
}

// TestStuckPrometheusExcluded: in Prometheus mode pkg/promql's stuck
// queries (recognised here by their min_over_time) say 1 pod is stuck with
// waiting 6 (the C18 shape). The totals leave its waiting out: running 50,
// waiting 10 - 6 = 4, queue 54; reporting 2 - 1 = 1 of current 2 (the
// replicas query), so 1 missing. usage 54 / 1 / 24 = 2.25 > 1: the missing
// pod counts at 0, 2.25 / 2 = 1.125, outside the tolerance: ceil(2.25) = 3.
// Exported, recorded and logged as stuck.
func TestStuckPrometheusExcluded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		one := func(v string) {
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%s,"%s"]}]}}`, r.FormValue("time"), v)
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasPrefix(q, "count(") && strings.Contains(q, "min_over_time"):
			one("1") // stuck pods
		case strings.Contains(q, "min_over_time"):
			one("6") // their waiting
		case strings.HasPrefix(q, "count("):
			one("2")
		case strings.Contains(q, "num_requests_running"):
			one("50")
		case strings.Contains(q, "num_requests_waiting"):
			one("10")
		case strings.Contains(q, "kube_deployment_spec_replicas"):
			one("2")
		default:
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		}
	}))
	defer srv.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf(promConfig, srv.URL)), "prom.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewPrometheusSource(cfg.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	m := NewMetrics(prometheus.NewRegistry(), "test")
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Now: func() time.Time { return t0 },
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	l.Cycle(context.Background())
	r := lastRecord(l, "chat")
	if r.Desired != 3 || *r.Signals.Queue != 54 || *r.Signals.Waiting != 4 || r.Stuck == nil || *r.Stuck != 1 {
		t.Fatalf("record %+v, want desired 3, queue 54, waiting 4, stuck 1", r)
	}
	if len(r.Steps) == 0 || !strings.Contains(r.Steps[0].Text, "1 of 2 replicas missing") {
		t.Errorf("steps %+v: want the stuck pod counted as missing", r.Steps)
	}
	if g := stuckGauge(t, m); g != "1" {
		t.Errorf("infscale_stuck_replicas %s, want 1", g)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "stuck=1") {
		t.Errorf("want a warning about the stuck replica, log:\n%s", logs.String())
	}
	// Prometheus mode counts the stuck pods without naming them: no
	// "replicas=[]" that reads as "none".
	if strings.Contains(logs.String(), "replicas=[]") {
		t.Errorf("log names an empty list of stuck replicas:\n%s", logs.String())
	}
}

// TestStuckPrometheusNothingMatches: a selector and replicas query that
// match no series (a typo, or a workload not deployed yet) leave the
// replica count unknown. count() of no pod is 0, but "0 of an unknown
// number of replicas stuck" is made up: no infscale_stuck_replicas series,
// as in embedded mode when no page answers.
func TestStuckPrometheusNothingMatches(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	defer srv.Close()
	l, m, _ := promLoop(t, srv, promConfig, 1, nil, slog.New(slog.DiscardHandler))
	l.Cycle(context.Background())
	if r := lastRecord(l, "chat"); r.Stuck != nil {
		t.Errorf("record stuck %d, want none (the replica count is unknown)", *r.Stuck)
	}
	if g := stuckGauge(t, m); g != "NaN" {
		t.Errorf("infscale_stuck_replicas %s, want no series", g)
	}
}

// TestStuckNeedsTime: with scrapes 1 s apart, two suspect pages in a row
// are not enough (a long prefill can stall the counters for seconds); the
// replica stops voting once it has looked stuck for DefaultStuckFor (15 s).
// Same pages as TestStuckEngineDoesNotVote: queue 16 while it votes, 10 after.
func TestStuckNeedsTime(t *testing.T) {
	var healthy, stuck atomic.Value
	healthy.Store(vllmPage("10", "0", "0.5"))
	stuck.Store(vllmPage("0", "6", "0"))
	h, s := switchPage(t, &healthy), switchPage(t, &stuck)
	l, _, now := stuckLoop(t, []string{h.URL, s.URL}, 0)
	for _, step := range []struct {
		at        time.Duration
		queue     float64
		wantStuck int
	}{{0, 16, 0}, {time.Second, 16, 0}, {14 * time.Second, 16, 0}, {15 * time.Second, 10, 1}} {
		*now = t0.Add(step.at)
		l.Cycle(context.Background())
		r := lastRecord(l, "chat")
		if *r.Signals.Queue != step.queue || *r.Stuck != step.wantStuck {
			t.Errorf("at +%v: queue %v stuck %d, want %v and %d", step.at, *r.Signals.Queue, *r.Stuck, step.queue, step.wantStuck)
		}
	}
}

// TestPrometheusQueryDurationOncePerBatch: in Prometheus mode one
// evaluation reads every target (docs/metrics.md), so a cycle of three
// targets is one observation of infscale_query_duration_seconds with
// source="prometheus", not three: the other two targets' readings carry no
// time of their own, and observed as 0 they made the dashboard's p95 read
// as 0 s (at 3 targets, 2 of every 3 observations were 0).
func TestPrometheusQueryDurationOncePerBatch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%s,"2"]}]}}`, r.FormValue("time"))
	}))
	defer srv.Close()
	const three = `
prometheus: {url: %s, timeout: 1s}
targets:
- {name: a, selector: '{app="a"}', replicas: 'kube_deployment_spec_replicas{deployment="a"}', metrics: [{type: queue, target: 24}], max: 8}
- {name: b, selector: '{app="b"}', replicas: 'kube_deployment_spec_replicas{deployment="b"}', metrics: [{type: queue, target: 24}], max: 8}
- {name: c, selector: '{app="c"}', replicas: 'kube_deployment_spec_replicas{deployment="c"}', metrics: [{type: queue, target: 24}], max: 8}
`
	cfg, err := config.Parse([]byte(fmt.Sprintf(three, srv.URL)), "prom.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewPrometheusSource(cfg.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "test")
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	l.Cycle(context.Background())
	l.Cycle(context.Background())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "infscale_query_duration_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		// Two cycles, one batch each: 2 observations, each above 0.
		if h.GetSampleCount() != 2 || h.GetSampleSum() <= 0 {
			t.Fatalf("infscale_query_duration_seconds count %d sum %g, want 2 observations (one per cycle) summing above 0", h.GetSampleCount(), h.GetSampleSum())
		}
		return
	}
	t.Fatal("no infscale_query_duration_seconds")
}

// TestStuckUnknownWhenNoPageAnswers: in embedded mode a cycle in which no
// page answered (the replicas down, or unreachable) read no replica, so
// the stuck count is unknown: no infscale_stuck_replicas series and no
// "stuck" in the record, as infscale_current_replicas and the signals in
// that outage (docs/metrics.md: unknown is absent). It exported 0 stuck,
// an answer read from nothing. A page that answers again brings it back.
func TestStuckUnknownWhenNoPageAnswers(t *testing.T) {
	var page atomic.Value
	page.Store(vllmPage("10", "0", "0.5"))
	var down atomic.Bool
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "replica not running", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, page.Load().(string))
	}))
	t.Cleanup(s.Close)
	l, m, now := stuckLoop(t, []string{s.URL}, 0)
	ctx := context.Background()
	l.Cycle(ctx)
	if g := stuckGauge(t, m); g != "0" {
		t.Fatalf("cycle 1 (the page answers): infscale_stuck_replicas %s, want 0", g)
	}
	down.Store(true)
	*now = now.Add(15 * time.Second)
	l.Cycle(ctx)
	if g := stuckGauge(t, m); g != "NaN" {
		t.Errorf("cycle 2 (no page answers): infscale_stuck_replicas %s, want no series", g)
	}
	if r := lastRecord(l, "chat"); r.Stuck != nil {
		t.Errorf("cycle 2 (no page answers): record's stuck %d, want none (unknown)", *r.Stuck)
	}
	down.Store(false)
	*now = now.Add(15 * time.Second)
	l.Cycle(ctx)
	if g := stuckGauge(t, m); g != "0" {
		t.Errorf("cycle 3 (the page answers again): infscale_stuck_replicas %s, want 0", g)
	}
}
