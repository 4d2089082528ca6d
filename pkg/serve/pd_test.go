package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
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
