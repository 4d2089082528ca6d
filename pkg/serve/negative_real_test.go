package serve

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/config"
)

// TestServeNegativePodRefused: on a real Prometheus, target chat's two pods,
// a running 50 and b running 10 (waiting 0 both), queue target 20, no
// replicas query (2 pods report), scale-down window 0, guard off. By hand:
// queue 60 over 2 pods, ceil(2 x 30 / 20) = 3. Then pod b's page says
// running -40 (a broken exporter): summed, 50 - 40 = 10 was read as load
// with nothing said, and 2 decided (queue 10, the third replica asked for
// missing and counted at target on a scale-down: ceil(3 x (10 + 20) / (3 x
// 20)) = ceil(1.5) = 2; over 2 replicas ceil(2 x 5 / 20) = 1). Now running
// is unknown (reason nan, counted in infscale_query_errors_total), the last
// desired 3 is held (no-data), and one line names the signal, pod b and -40.
// Then pod b runs 30: queue 80, ceil(2 x 40 / 20) = 4, read again (logged
// once: "signal read again"); the current replicas then are the 3 asked for,
// the missing one counted at 0 on a scale-up: ceil(3 x 80 / (3 x 20)) = 4 as
// well.
func TestServeNegativePodRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	var a, b atomic.Value
	page := func(running int) string {
		return fmt.Sprintf("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running %d\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 0\n", running)
	}
	a.Store(page(50))
	b.Store(page(10))
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second, Targets: []promtest.Target{
		{URL: switchPage(t, &a).URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "chat-a"}},
		{URL: switchPage(t, &b).URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "chat-b"}},
	}})
	readsB := func(v float64) {
		t.Helper()
		prom.WaitFor(t, `vllm:num_requests_running{pod="chat-b"}`, 30*time.Second, func(vec model.Vector) bool { return len(vec) == 1 && float64(vec[0].Value) == v })
	}
	readsB(10)
	prom.WaitFor(t, `count(up == 1)`, 30*time.Second, func(v model.Vector) bool { return len(v) == 1 && v[0].Value == 2 })
	cfg, err := config.Parse([]byte(fmt.Sprintf(`prometheus: {url: %s}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm", pod=~"chat-.*"}'
  metrics: [{type: queue, target: 20}]
  max: 8
  guard: {off: true}
  behavior: {scaleDown: {stabilizationWindowSeconds: 0}}
`, prom.URL)), "negative.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewPrometheusSourceFromRoundTripper(prom.URL, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(prometheus.NewRegistry(), "test")
	var logs strings.Builder
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Now: time.Now, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cycle := func() Record {
		l.Cycle(context.Background())
		return lastRecord(l, "chat")
	}

	if r := cycle(); desired(t, m, "chat") != 3 || r.Held || r.Signals.Running == nil || *r.Signals.Running != 60 {
		t.Fatalf("pods 50 and 10: desired %v (%s, held %v, running %v, errors %q), want 3 from running 60", desired(t, m, "chat"), r.Reason, r.Held, r.Signals.Running, r.Errors)
	}

	b.Store(page(-40))
	readsB(-40)
	for i := range 2 {
		r := cycle()
		if got := desired(t, m, "chat"); got != 3 || !r.Held || r.Reason != "no-data" || r.Signals.Running != nil {
			t.Fatalf("cycle %d, pod b at -40: desired %v (%s, held %v, running %v), want 3 held (no-data), running unknown", i+1, got, r.Reason, r.Held, r.Signals.Running)
		}
	}
	if got := queryErrors(m, "chat", "nan"); got != 2 {
		t.Errorf("query_errors_total{reason=nan} = %v, want 2 (running, two cycles)", got)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	var failed []string
	for _, ln := range lines {
		if strings.Contains(ln, "signal read failed") {
			failed = append(failed, ln)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "signal=running") || !strings.Contains(failed[0], "reason=nan") ||
		!strings.Contains(failed[0], `pod=\"chat-b\"} -40 (a live pod's series of running below 0`) {
		t.Errorf("failed-read lines %q, want one naming signal running, reason nan, pod chat-b and -40:\n%s", failed, logs.String())
	}

	b.Store(page(30))
	readsB(30)
	if r := cycle(); desired(t, m, "chat") != 4 || r.Held || r.Signals.Running == nil || *r.Signals.Running != 80 {
		t.Errorf("pod b at 30 again: desired %v (%s, held %v, running %v), want 4 from running 80", desired(t, m, "chat"), r.Reason, r.Held, r.Signals.Running)
	}
	if n := strings.Count(logs.String(), "signal read again"); n != 1 || !strings.Contains(logs.String(), "signal=running") {
		t.Errorf("%d 'signal read again' lines, want 1 for running:\n%s", n, logs.String())
	}
}
