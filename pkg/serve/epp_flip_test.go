package serve

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/internal/epptest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/scrape"
)

// TestEPPServiceURLFlipsBetweenReplicas: a server: epp target's scrape URL
// is the EPP's Service (http://chat-epp.llm.svc:9090/metrics, as a user
// writes it) in front of two EPP replicas of pool chat, which answer in
// turn: replica A (started 1 h ago, 1,500 requests, 0 held) and replica B
// (started 2 h ago, 9,000 requests, 3 held). Each flip is another
// process's page (scrape.OtherProcess), so it gives no arrival rate (as a
// model server's page behind a Service, TestScrapeURLFlipsBetweenPods) and
// is a bad_data page error naming the URL, the EPP replicas and what to
// do; before, readEPP dropped that verdict: the rate was absent but no
// error said why, and the held count flipped 0, 3, 0 with no word (each
// replica's own queue, the other's requests unseen). The held count is not
// changed: the page read is one replica's, a lower bound of what the pool
// holds, and at zero it still wakes the pool. Two pages of replica A in a
// row give its rate and no error.
func TestEPPServiceURLFlipsBetweenReplicas(t *testing.T) {
	now := time.Now()
	page := func(start time.Time, requests, held float64) string {
		s := eppBusyPool()
		s.Requests, s.InputTokens, s.OutputTokens = requests, requests*1000, requests*200
		s.Flows = []epptest.Flow{{FairnessID: "a", Priority: "0", Held: held}}
		return epptest.Page(s) + fmt.Sprintf("# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %d\n", start.Unix())
	}
	a := page(now.Add(-time.Hour), 1500, 0)
	a2 := page(now.Add(-time.Hour), 1650, 0)
	b := page(now.Add(-2*time.Hour), 9000, 3)
	var cur atomic.Pointer[string]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, *cur.Load())
	}))
	defer srv.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics]\n%s", srv.URL, eppTarget)), "epp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tg := &cfg.Targets[0]
	src := NewScrapeSource(5 * time.Second)
	var began time.Time // of the last read
	read := func(p string) Reading {
		began = time.Now()
		cur.Store(&p)
		time.Sleep(50 * time.Millisecond) // the pages' times apart
		return src.Read(t.Context(), []*config.Target{tg}, time.Now())[0]
	}
	read(a)
	says := []string{"answered another process's page than at its previous scrape", "answered a page whose process started at"}
	for i, c := range []struct {
		page string
		held float64
	}{{b, 3}, {a, 0}} {
		rd := read(c.page)
		if !math.IsNaN(rd.Obs.ArrivalRate) {
			t.Errorf("flip %d: arrival rate %v, want absent (NaN): no rate across two EPP replicas", i+1, rd.Obs.ArrivalRate)
		}
		if rd.Obs.Held != c.held {
			t.Errorf("flip %d: held %v, want %v (the replica read: its own queue)", i+1, rd.Obs.Held, c.held)
		}
		var found bool
		for _, e := range rd.Errors {
			msg := e.Err.Error()
			if e.Signal == "page" && e.Reason == "bad_data" && strings.Contains(msg, srv.URL+"/metrics "+says[i]) &&
				strings.Contains(msg, "several EPP replicas behind one URL (a Service?)") && strings.Contains(msg, "its flow-control queue is that replica's alone") &&
				strings.Contains(msg, "list each EPP pod's own URL") && strings.Contains(msg, "inferencePoolRef") {
				found = true
			}
		}
		if !found {
			t.Errorf("flip %d: errors %+v; want a bad_data page error naming the URL, the EPP replicas and what to do", i+1, rd.Errors)
		}
	}
	start := began
	rd := read(a2)
	// 150 requests between the last two pages: at least 50 ms apart, at
	// most the time since the previous read began.
	if lo, hi := 150/time.Since(start).Seconds(), 150/0.05; !(rd.Obs.ArrivalRate >= lo && rd.Obs.ArrivalRate <= hi) || len(rd.Errors) != 0 {
		t.Errorf("replica A twice: arrival rate %v (errors %v), want %.0f..%.0f and no error", rd.Obs.ArrivalRate, rd.Errors, lo, hi)
	}
}

// TestEPPAuthHint: llm-d-router's chart serves the EPP's /metrics behind
// authentication by default; controller-runtime's filter answers a request
// without a token 401 "Unauthorized". A server: epp target listing the
// EPP's URL (docs/llm-d.md's first example) read only "HTTP status 401
// Unauthorized"; the page error now says the target sends no token and
// the three ways out. With scrape.bearer_token_file (inferencePoolRef),
// 401 is the token refused and 403 the account not allowed.
func TestEPPAuthHint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	}))
	defer srv.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf("targets:\n- name: chat\n  scrape: [%s/metrics]\n%s", srv.URL, eppTarget)), "epp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rd := NewScrapeSource(5*time.Second).Read(t.Context(), []*config.Target{&cfg.Targets[0]}, time.Now())[0]
	var found bool
	for _, e := range rd.Errors {
		msg := e.Err.Error()
		if e.Signal == "page" && e.Reason == "unavailable" && strings.Contains(msg, srv.URL+"/metrics: cannot fetch metrics page: HTTP status 401 Unauthorized (llm-d-router's chart serves the EPP's /metrics behind authentication by default, and this target sends no token: give inferencePoolRef with scrape: {bearer_token_file:") {
			found = true
		}
	}
	if !found || rd.CurrentKnown {
		t.Errorf("errors %+v (current known %v); want the 401 page error saying the target sends no token, current unknown", rd.Errors, rd.CurrentKnown)
	}
	withToken := &config.Target{Name: "chat", Scrape: config.Scrape{Pods: &config.PodScrape{BearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}}}
	for code, want := range map[int]string{
		401: "HTTP status 401 Unauthorized (the EPP refused the token of scrape.bearer_token_file /var/run/secrets/kubernetes.io/serviceaccount/token: its TokenReview failed",
		403: "HTTP status 403 Forbidden (the token of scrape.bearer_token_file /var/run/secrets/kubernetes.io/serviceaccount/token is valid but its service account may not get /metrics: bind it a ClusterRole with nonResourceURLs: [/metrics], verbs: [get]",
	} {
		err := eppAuthHint(withToken, fmt.Errorf("u: %w: %w", scrape.ErrFetch, &scrape.StatusError{Code: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code))}))
		if !errors.Is(err, scrape.ErrFetch) || !strings.Contains(err.Error(), want) {
			t.Errorf("%d: %v, want ErrFetch with %q", code, err, want)
		}
	}
	if err := eppAuthHint(withToken, fmt.Errorf("u: %w: %w", scrape.ErrFetch, &scrape.StatusError{Code: 500, Status: "500 Internal Server Error"})); err.Error() != "u: cannot fetch metrics page: HTTP status 500 Internal Server Error" {
		t.Errorf("500: %v, want it as it was", err)
	}
}

// gieInferenceModelEraPage is an EPP page of the Gateway API Inference
// Extension before InferenceObjective (its site-src/guides/metrics.md at
// 04a4fdf23f6c lists the families): inference_model_* request families,
// the pool's KV and queue averages and ready pods, no running average.
// Pool chat: 3 ready pods averaging 12 waiting and KV 0.5.
const gieInferenceModelEraPage = `# HELP inference_model_request_total [ALPHA] Counter of inference model requests broken out for each model and target model.
# TYPE inference_model_request_total counter
inference_model_request_total{model_name="m",target_model_name="m"} 1000
# HELP inference_model_running_requests [ALPHA] Inference model number of running requests in each model.
# TYPE inference_model_running_requests gauge
inference_model_running_requests{model_name="m"} 60
# HELP inference_pool_average_kv_cache_utilization [ALPHA] The average kv cache utilization for an inference server pool.
# TYPE inference_pool_average_kv_cache_utilization gauge
inference_pool_average_kv_cache_utilization{name="chat"} 0.5
# HELP inference_pool_average_queue_size [ALPHA] The average number of requests pending in the model server queue.
# TYPE inference_pool_average_queue_size gauge
inference_pool_average_queue_size{name="chat"} 12
# HELP inference_pool_ready_pods [ALPHA] The number of ready pods for an inference server pool.
# TYPE inference_pool_ready_pods gauge
inference_pool_ready_pods{name="chat"} 3
`

// TestEPPInferenceModelEra: an older EPP (the Gateway API Inference
// Extension's InferenceModel era) has no running average. On queue
// (running + waiting) the pool is not decided: running is unknown, and its
// error now names that EPP and what to scale on (it said only "a router
// that renamed or dropped it"); the current 3 is kept. On waiting it is
// decided from the page as llm-d-router's: waiting 3 x 12 = 36, target 10
// per replica: ceil(36 / 10) = 4 (ratio 36 / 30 = 1.2, past the 10%
// tolerance).
func TestEPPInferenceModelEra(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, gieInferenceModelEraPage)
	}))
	defer srv.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`targets:
- name: onqueue
  server: epp
  scrape: [%[1]s/metrics]
  metrics: [{type: queue, target: 10}]
  maxReplicaCount: 10
- name: onwaiting
  server: epp
  scrape: [%[1]s/metrics]
  metrics: [{type: waiting, target: 10}]
  maxReplicaCount: 10
`, srv.URL)), "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "test")
	var audit strings.Builder
	l := newLoop(t, LoopOptions{Source: NewScrapeSource(time.Second), Metrics: m, Interval: 5 * time.Second, Audit: &audit})
	if err := l.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	l.Cycle(t.Context())
	g := gatherer(m, reg)
	for target, want := range map[string]float64{"onqueue": 3, "onwaiting": 4} {
		if v, ok := gauge(t, g, "infscale_desired_replicas", map[string]string{"target": target}); !ok || v != want {
			t.Errorf("%s: desired %v (present %v), want %v", target, v, ok, want)
		}
	}
	if !strings.Contains(audit.String(), "or an EPP from before it was written (the Gateway API Inference Extension's InferenceModel-era EPP, whose request families are inference_model_*, has no running average: scale it on waiting or kv, or upgrade it)") {
		t.Errorf("audit lacks the older EPP's running error:\n%s", audit.String())
	}
}
