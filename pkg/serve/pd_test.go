package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
	"github.com/infscale/infscale/pkg/recommend"
)

// runningPage is a vLLM page with running requests and none waiting.
func runningPage(running int) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running %d\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 0\n", running)
	}))
}

// pdWrites records the scale writes by workload name.
type pdWrites struct {
	mu  sync.Mutex
	got map[string]int
}

func (w *pdWrites) Write(_ context.Context, t *config.Target, desired int) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got[t.ScaleTargetRef.Name] = desired
	return true, nil
}

// TestPairEmbedded: a P/D target in embedded mode, its prefill pool one
// page with 6 running, its decode pool two pages with 10 running each,
// beside a one-pool target. Worked by hand with the HPA's arithmetic,
// desired = ceil(current × average / target):
//
//   - prefill (running target 2): ceil(1 × 6/2) = 3;
//   - decode (running target 4): ceil(2 × 10/4) = 5;
//   - neither role has a demand metric: no ratio, no floor (the pair
//     bound needs both demands), so nothing is raised;
//   - solo (running target 5, the prefill page): ceil(1 × 6/5) = 2.
//
// Exported as infscale_desired_replicas{role, target} per pool, solo's
// without a role label; each pool written to its own workload (apply:
// true, scaleTargetRef per role); the audit line per role names it.
func TestPairEmbedded(t *testing.T) {
	p0, d0, d1 := runningPage(6), runningPage(10), runningPage(10)
	defer p0.Close()
	defer d0.Close()
	defer d1.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`targets:
  - name: chat
    apply: true
    roles:
      prefill:
        scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat-prefill}
        scrape: [%s/metrics]
        metrics: [{type: running, target: 2}]
        maxReplicaCount: 8
      decode:
        scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat-decode}
        scrape: [%s/metrics, %s/metrics]
        metrics: [{type: running, target: 4}]
        maxReplicaCount: 8
  - name: solo
    scrape: [%s/metrics]
    metrics: [{type: running, target: 5}]
    maxReplicaCount: 8
`, p0.URL, d0.URL, d1.URL, p0.URL)), "pd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "test")
	var audit strings.Builder
	w := &pdWrites{got: map[string]int{}}
	l := newLoop(t, LoopOptions{Source: NewScrapeSource(time.Second), Metrics: m, Interval: 5 * time.Second, Writer: w, Audit: &audit})
	if err := l.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	l.Cycle(t.Context())
	g := gatherer(m, reg)
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"target": "chat", "role": "prefill"}, 3},
		{map[string]string{"target": "chat", "role": "decode"}, 5},
		{map[string]string{"target": "solo"}, 2},
	} {
		if v, ok := gauge(t, g, "infscale_desired_replicas", c.labels); !ok || v != c.want {
			t.Errorf("infscale_desired_replicas%v = %v (present %v), want %v", c.labels, v, ok, c.want)
		}
	}
	if v, ok := gauge(t, g, "infscale_current_replicas", map[string]string{"target": "chat", "role": "decode"}); !ok || v != 2 {
		t.Errorf("decode current = %v, want 2 (its two pages)", v)
	}
	rr := httptest.NewRecorder()
	metricsHandler(reg, m.table).ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rr.Body.String()
	for _, want := range []string{`infscale_desired_replicas{role="decode",target="chat"} 5`, `infscale_desired_replicas{role="prefill",target="chat"} 3`, `infscale_desired_replicas{target="solo"} 2`} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, grep(body, "infscale_desired_replicas"))
		}
	}
	if w.got["chat-prefill"] != 3 || w.got["chat-decode"] != 5 || len(w.got) != 2 {
		t.Errorf("writes = %v, want chat-prefill 3, chat-decode 5", w.got)
	}
	roles := map[string]int{}
	for line := range strings.SplitSeq(strings.TrimSpace(audit.String()), "\n") {
		var r Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Target == "chat" {
			roles[r.Role] = r.Desired
			if r.Pair == nil || r.Pair.Ratio != nil || r.Pair.Floor != 0 || r.Pair.RaisedFrom != nil {
				t.Errorf("%s pair note = %+v, want no ratio, no floor", r.Role, r.Pair)
			}
		}
	}
	if roles["prefill"] != 3 || roles["decode"] != 5 {
		t.Errorf("audit roles = %v", roles)
	}
	if rec := l.Recent(); len(rec["chat@prefill"]) != 1 || len(rec["chat@decode"]) != 1 || rec["chat@decode"][0].Role != "decode" {
		t.Errorf("Recent = %v", rec)
	}
}

// ratePage is a vLLM page whose counters grow with wall time from large
// bases: per second req requests finish, prompt and gen tokens.
func ratePage(t0 time.Time, req, prompt, gen float64) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s := time.Since(t0).Seconds()
		c := func(base, perSec float64) float64 { return base + perSec*s }
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, demandText(1, c(1e5, req), 0, c(1e8, prompt), c(1e8, gen),
			[3]float64{1, 1, 1}, [3]float64{1, 1, 1}))
	}))
}

// TestPairRatioRaisesDecode: both pools on the demand metric (target
// 0.9, the h100-sxm / llama-3-8b replica). The prefill pool's page
// finishes 20 requests/s of 1,000 prompt tokens and 1 output token (the
// sidecar's max_tokens=1); the decode pool's one page has seen 2
// requests/s so far, of 1,000 prompt and 1,000 output tokens. Worked from
// the rule (docs/llm-d.md, pkg/recommend's RequestSeconds: batch =
// min(MaxBatch, floor(KV / (prompt + output))), step = S0 + S1 × batch
// × (prompt + output/2), seconds = prompt / prefill rate + output × step
// / batch; a decode replica prefills nothing) on the replica's capacity
// fields:
//
//	prefill  = ceil(20 × RS_p(1000, 1) / 0.9)
//	decode   = ceil(2 × RS_d(1000, 1000) / 0.9)           its own demand
//	ratio    = RS_d(1000, 1000) / RS_p(1000, 1)
//	floor    = ceil(20 × RS_p × ratio / 0.9) = ceil(20 × RS_d / 0.9)
//
// and the decode pool exported at the floor, its audit line saying the
// floor raised it from its own demand's count.
func TestPairRatioRaisesDecode(t *testing.T) {
	t0 := time.Now()
	p0, d0 := ratePage(t0, 20, 20000, 20), ratePage(t0, 2, 2000, 2000)
	defer p0.Close()
	defer d0.Close()
	cfg, c := demandPair(t, p0.URL, d0.URL, "[{type: demand, target: 0.9}]")
	rs := func(prompt, output, prefillRate float64) float64 {
		batch := math.Max(1, math.Min(float64(c.MaxBatch), math.Floor(c.KVTokens/(prompt+output))))
		step := c.StepSeconds + c.StepSecondsPerToken*batch*(prompt+output/2)
		return prompt/prefillRate + output*step/batch
	}
	rsP, rsD := rs(1000, 1, c.PrefillTokensPerSecond), rs(1000, 1000, math.Inf(1))
	wantP := int(math.Ceil(20 * rsP / 0.9))
	own := int(math.Ceil(2 * rsD / 0.9))
	floor := int(math.Ceil(20 * rsD / 0.9))
	t.Logf("RS_p %.4f s, RS_d %.4f s: prefill %d, decode own %d, floor %d (ratio %.3f)", rsP, rsD, wantP, own, floor, rsD/rsP)
	if floor <= own || wantP > 5 {
		t.Fatalf("the example does not exercise the bound (floor %d, own %d) or exceeds the first scale-up limit (prefill %d)", floor, own, wantP)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "test")
	var audit strings.Builder
	l := newLoop(t, LoopOptions{Source: NewScrapeSource(time.Second), Metrics: m, Interval: 5 * time.Second, Audit: &audit})
	if err := l.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	l.Cycle(t.Context()) // the counters' baseline
	time.Sleep(1500 * time.Millisecond)
	audit.Reset()
	l.Cycle(t.Context())
	g := gatherer(m, reg)
	for role, want := range map[string]int{"prefill": wantP, "decode": floor} {
		if v, ok := gauge(t, g, "infscale_desired_replicas", map[string]string{"target": "chat", "role": role}); !ok || v != float64(want) {
			t.Errorf("%s desired = %v, want %d", role, v, want)
		}
	}
	for line := range strings.SplitSeq(strings.TrimSpace(audit.String()), "\n") {
		var r Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Pair == nil || r.Pair.Ratio == nil || math.Abs(*r.Pair.Ratio-rsD/rsP) > 1e-3*rsD/rsP {
			t.Errorf("%s pair note %+v, want ratio %.4f", r.Role, r.Pair, rsD/rsP)
			continue
		}
		if r.Role == "decode" && (r.Pair.Floor != floor || r.Pair.RaisedFrom == nil || *r.Pair.RaisedFrom != own) {
			t.Errorf("decode pair note floor %d raised from %v, want floor %d raised from %d", r.Pair.Floor, r.Pair.RaisedFrom, floor, own)
		}
		// The raised pool's reason and last step are the bound's, not its own demand's.
		if n := len(r.Steps); r.Role == "decode" && (r.Reason != "pair" || n == 0 || r.Steps[n-1].Value != floor || !strings.Contains(r.Steps[n-1].Text, fmt.Sprintf("raised from %d to %d", own, floor))) {
			t.Errorf("decode reason %q, steps %+v; want pair, the last step raising %d to %d", r.Reason, r.Steps, own, floor)
		}
	}
}

// TestPairPrometheus is TestPairEmbedded's pair read through a real
// Prometheus scraping the same pages (prefill-0 with 6 running, decode-0
// and decode-1 with 10 each), each role selected by its pods: the same
// decisions, prefill ceil(1 × 6/2) = 3 and decode ceil(2 × 10/4) = 5.
func TestPairPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	p0, d0, d1 := runningPage(6), runningPage(10), runningPage(10)
	defer p0.Close()
	defer d0.Close()
	defer d1.Close()
	lb := func(pod string) map[string]string { return map[string]string{"namespace": "llm", "pod": pod} }
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second, Targets: []promtest.Target{
		{URL: p0.URL + "/metrics", Labels: lb("chat-prefill-0")},
		{URL: d0.URL + "/metrics", Labels: lb("chat-decode-0")},
		{URL: d1.URL + "/metrics", Labels: lb("chat-decode-1")},
	}})
	cfg, err := config.Parse([]byte(fmt.Sprintf(`prometheus: {url: %s}
targets:
  - name: chat
    roles:
      prefill:
        selector: '{namespace="llm", pod=~"chat-prefill-.*"}'
        metrics: [{type: running, target: 2}]
        maxReplicaCount: 8
      decode:
        selector: '{namespace="llm", pod=~"chat-decode-.*"}'
        metrics: [{type: running, target: 4}]
        maxReplicaCount: 8
`, prom.URL)), "pd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewPrometheusSource(cfg.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	prom.WaitFor(t, `count(vllm:num_requests_running{namespace="llm"})`, 60*time.Second,
		func(v model.Vector) bool { return len(v) == 1 && v[0].Value == 3 })
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "test")
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 5 * time.Second})
	if err := l.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	l.Cycle(t.Context())
	g := gatherer(m, reg)
	for role, want := range map[string]float64{"prefill": 3, "decode": 5} {
		if v, ok := gauge(t, g, "infscale_desired_replicas", map[string]string{"target": "chat", "role": role}); !ok || v != want {
			t.Errorf("%s desired = %v (present %v), want %v", role, v, ok, want)
		}
	}
	if v, ok := gauge(t, g, "infscale_current_replicas", map[string]string{"target": "chat", "role": "decode"}); !ok || v != 2 {
		t.Errorf("decode current = %v, want 2 (its two pods)", v)
	}
}

// TestPairKube: a P/D target in kube mode, each role's pods found through
// its own Deployment's selector (llm-d.ai/role=prefill or decode) and its
// decision written to that Deployment's scale. chat-prefill runs 1 pod
// with 6 running, chat-decode 2 pods with 10 each (spec.replicas 1 and 2):
// prefill ceil(1 × 6/2) = 3, decode ceil(2 × 10/4) = 5, as in
// TestPairEmbedded, written 3 and 5.
func TestPairKube(t *testing.T) {
	pod := func(name, role string, srv *httptest.Server) *corev1.Pod {
		p := replicaPod(t, name, srv)
		p.Labels = map[string]string{"app": "chat", "llm-d.ai/role": role}
		return p
	}
	c, _, sc := kubefake.New("default",
		pod("chat-prefill-a", "prefill", pageServer(t, "6", "0")),
		pod("chat-decode-a", "decode", pageServer(t, "10", "0")),
		pod("chat-decode-b", "decode", pageServer(t, "10", "0")))
	t.Cleanup(c.Close)
	sc.Set("llm", kubefake.Deployments, "chat-prefill", 1, "app=chat,llm-d.ai/role=prefill")
	sc.Set("llm", kubefake.Deployments, "chat-decode", 2, "app=chat,llm-d.ai/role=decode")
	cfg, err := config.Parse([]byte(`namespace: llm
targets:
- name: chat
  apply: true
  roles:
    prefill:
      scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat-prefill}
      scrape: {port: http}
      metrics: [{type: running, target: 2}]
      maxReplicaCount: 8
    decode:
      scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat-decode}
      scrape: {port: http}
      metrics: [{type: running, target: 4}]
      maxReplicaCount: 8
`), "kube.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ss := &sources{o: &Options{Cluster: func() (*kube.Cluster, error) { return c, nil }}}
	src, err := ss.build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "test")
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second})
	if err := l.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	l.Cycle(t.Context())
	for role, want := range map[string]int{"prefill": 3, "decode": 5} {
		recs := l.Recent()["chat@"+role]
		if len(recs) != 1 || recs[0].Desired != want || len(recs[0].Errors) != 0 || recs[0].Applied == nil || *recs[0].Applied != want {
			t.Errorf("%s records %+v, want desired and applied %d, no errors", role, recs, want)
		}
		if got := sc.Replicas("llm", kubefake.Deployments, "chat-"+role); got != int32(want) {
			t.Errorf("chat-%s spec.replicas = %d, want %d", role, got, want)
		}
	}
}

// TestPairLowersPrefillTarget: serve decides a pair on the pair rule's
// targets, as the replay does. The prefill pool carries a queuewait guard
// of 0.4 s, so its demand target is lowered from 0.9 to the M/M/1
// utilisation at which the 95th-percentile wait is 0.4 s (docs/llm-d.md):
// ρ·exp(−(1−ρ)·0.4/S) = 0.05, solved here by bisection, with S =
// RS_p(1000, 1) as in TestPairRatioRaisesDecode. The page finishes 20
// requests/s, so prefill = ceil(20 × S / ρ). The decode pool's work
// (2 requests/s) implies a prefill floor far below it.
func TestPairLowersPrefillTarget(t *testing.T) {
	t0 := time.Now()
	p0, d0 := ratePage(t0, 20, 20000, 20), ratePage(t0, 2, 2000, 2000)
	defer p0.Close()
	defer d0.Close()
	cfg, c := demandPair(t, p0.URL, d0.URL, "[{type: demand, target: 0.9}, {type: queuewait, target: 0.4}]")
	batch := math.Max(1, math.Min(float64(c.MaxBatch), math.Floor(c.KVTokens/1001)))
	s := 1000/c.PrefillTokensPerSecond + (c.StepSeconds+c.StepSecondsPerToken*batch*1000.5)/batch
	lo, hi := 0.0, 1.0
	for range 200 {
		rho := (lo + hi) / 2
		if rho*math.Exp(-(1-rho)*0.4/s) > 0.05 {
			hi = rho
		} else {
			lo = rho
		}
	}
	rho := (lo + hi) / 2
	want, at09 := int(math.Ceil(20*s/rho)), int(math.Ceil(20*s/0.9))
	t.Logf("S %.4f s, target %.4f: prefill %d (at 0.9: %d)", s, rho, want, at09)
	if want == at09 || want > 5 {
		t.Fatalf("the example does not tell the lowered target from 0.9 (%d and %d) or exceeds the first scale-up limit", want, at09)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "test")
	l := newLoop(t, LoopOptions{Source: NewScrapeSource(time.Second), Metrics: m, Interval: 5 * time.Second})
	if err := l.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	l.Cycle(t.Context()) // the counters' baseline
	time.Sleep(1500 * time.Millisecond)
	l.Cycle(t.Context())
	if v, ok := gauge(t, gatherer(m, reg), "infscale_desired_replicas", map[string]string{"target": "chat", "role": "prefill"}); !ok || v != float64(want) {
		t.Errorf("prefill desired = %v, want %d (the lowered target %.4f; %d at 0.9)", v, want, rho, at09)
	}
}

// demandPair is a P/D target on the h100-sxm / llama-3-8b replica reading
// prefill and decode pages at the two URLs, the prefill pool on
// prefillMetrics, the decode pool on demand at 0.9, and the prefill
// pool's capacity.
func demandPair(t *testing.T, prefill, decode, prefillMetrics string) (*config.File, *recommend.Capacity) {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`targets:
  - name: chat
    replica: {gpu: h100-sxm, model: llama-3-8b}
    roles:
      prefill:
        scrape: [%s/metrics]
        metrics: %s
        maxReplicaCount: 16
      decode:
        scrape: [%s/metrics]
        metrics: [{type: demand, target: 0.9}]
        maxReplicaCount: 16
`, prefill, prefillMetrics, decode)), "pd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pt, _ := cfg.Targets[0].RoleTarget(recommend.RolePrefill)
	pol, err := pt.Policy()
	if err != nil {
		t.Fatal(err)
	}
	return cfg, pol.Capacity
}

// TestPairRolesSwappedWarned: llm-d's prefill pods generate 1 token a
// request (the sidecar's max_tokens=1), the decode pods the whole outputs.
// A pair whose roles read each other's pods (scrape: lists swapped) is
// warned about in each pool's record, naming the role and the mean output
// it read: the decode pool here reads 20 requests/s of 1 output token, the
// prefill pool 2 requests/s of 1,000. Each pool was decided on the other's
// load without a word. The pair the right way round has no warning.
func TestPairRolesSwappedWarned(t *testing.T) {
	t0 := time.Now()
	pre, dec := ratePage(t0, 20, 20000, 20), ratePage(t0, 2, 2000, 2000)
	defer pre.Close()
	defer dec.Close()
	for name, tc := range map[string]struct {
		prefill, decode string
		want            map[string]string // role -> warning prefix, "" none
	}{
		"swapped": {dec.URL, pre.URL, map[string]string{
			"prefill": "roles.prefill: its pods generated 1000 output tokens a request",
			"decode":  "roles.decode: its pods generated 1 output token a request"}},
		"right": {pre.URL, dec.URL, map[string]string{"prefill": "", "decode": ""}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, _ := demandPair(t, tc.prefill, tc.decode, "[{type: demand, target: 0.9}]")
			l := newLoop(t, LoopOptions{Source: NewScrapeSource(time.Second), Metrics: NewMetrics(prometheus.NewRegistry(), "test"), Interval: 5 * time.Second})
			if err := l.SetConfig(t.Context(), cfg); err != nil {
				t.Fatal(err)
			}
			l.Cycle(t.Context()) // the counters' baseline
			time.Sleep(1500 * time.Millisecond)
			l.Cycle(t.Context())
			for role, want := range tc.want {
				rec := lastRecord(l, "chat@"+role)
				got := strings.Join(rec.Warnings, "\n")
				if want == "" && got != "" || want != "" && !strings.HasPrefix(got, want) {
					t.Errorf("%s warnings %q, want %q", role, got, want)
				}
			}
		})
	}
}
