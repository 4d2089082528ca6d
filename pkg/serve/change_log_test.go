package serve

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
)

// TestChangeLogNamesTheMetric: the "desired replicas changed" line names
// the metric the decision took, as the HPA's rescale event names the metric
// above its target, so a log search answers what drove a change. queue:24
// and waiting:2 at 1 replica, running 10 + waiting 20: queue ceil(30/24) = 2,
// waiting ceil(20/2) = 10, the largest; the default scale-up limit
// max(1 + 4, 2 × 1) = 5 binds: 1 -> 5, ScaleUpLimit, metric=waiting. The
// reproduced incident's scale-down 6 -> 2 logged reason=DesiredWithinRange
// alone, the queue's 30 / 20 only in the audit log.
func TestChangeLogNamesTheMetric(t *testing.T) {
	l, src, logs := changeLogLoop(t, `
targets:
- name: chat
  scrape: [http://127.0.0.1:1/metrics]
  metrics: [{type: queue, target: 24}, {type: waiting, target: 2}]
  maxReplicaCount: 8
`)
	src.set("chat", load(1, 10, 20))
	l.Cycle(t.Context())
	want := "target=chat from=1 to=5 reason=ScaleUpLimit metric=waiting"
	if !strings.Contains(logs.String(), `msg="desired replicas changed" `+want) {
		t.Errorf("want the change logged with %q; log:\n%s", want, logs.String())
	}
}

// TestChangeLogNoMetricForZero: a change a metric did not decide names no
// metric. queue:24, 0..3 replicas behind an activator, at zero with 5
// requests held: queue (5 held) / 24 = ceil(0.21) = 1 from zero, but the
// activation decides (docs/recommend.md's Reasons: decide --current 0
// --held 5 --min 0 -> activate): 0 -> its count, reason activate, no
// metric=queue beside it.
func TestChangeLogNoMetricForZero(t *testing.T) {
	l, src, logs := changeLogLoop(t, `
targets:
- name: chat
  scrape: [http://127.0.0.1:1/metrics]
  metrics: [{type: queue, target: 24}]
  minReplicaCount: 0
  maxReplicaCount: 3
  zero: {cooldownPeriod: 120s, held_scrape: 'http://127.0.0.1:2/metrics'}
`)
	rd := load(0, 0, 0)
	rd.Obs.Held = 5
	src.set("chat", rd)
	l.Cycle(t.Context())
	line := ""
	for _, s := range strings.Split(logs.String(), "\n") {
		if strings.Contains(s, "desired replicas changed") {
			line = s
		}
	}
	if !strings.Contains(line, "target=chat from=0 to=") || !strings.Contains(line, "reason=activate") || strings.Contains(line, "metric=") {
		t.Errorf("want a change from 0 with reason=activate and no metric; log:\n%s", logs.String())
	}
}

// changeLogLoop is a loop on the config yaml, its targets read from the
// returned fakeSource, its log written to the returned buffer as text.
func changeLogLoop(t *testing.T, yaml string) (*Loop, *fakeSource, *bytes.Buffer) {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), "change.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	m := NewMetrics(prometheus.NewRegistry(), "test")
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	logs := new(bytes.Buffer)
	l.log = slog.New(slog.NewTextHandler(logs, nil))
	return l, src, logs
}
