package serve

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/tune"
)

// TestTuningZeroResultAfterFloorReload: chat scales to zero (cooldown
// 120 s) and adopts a result tuned at zero (min=0, cooldown=120). A
// reload to minReplicaCount 1 without a zero: block drops it: adopted,
// its min 0 and cooldown took the target to zero with nothing to wake
// it. The log says why, scale to zero among the terms, not only
// max_miss, slo_ttft, interval or replica.
func TestTuningZeroResultAfterFloorReload(t *testing.T) {
	dir := t.TempDir()
	cfg := func(zero string) *config.File {
		f, err := config.Parse(fmt.Appendf(nil, `
targets:
- name: chat
  scrape: [http://127.0.0.1:1/metrics]
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  max: 8
%s  tune: {every: 1h, dir: %q, mode: adopt}
`, zero, dir), "tune.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	reg := prometheus.NewRegistry()
	l := newLoop(t, LoopOptions{Source: &fakeSource{}, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock})
	tn := NewTuning(reg)
	tn.Now = clock
	var log bytes.Buffer
	tn.Log = slog.New(slog.NewTextHandler(&log, nil))
	l.SetTuning(tn)
	ctx := context.Background()
	if err := l.SetConfig(ctx, cfg("  minReplicaCount: 0\n  zero: {cooldownPeriod: 120s, held_scrape: 'http://127.0.0.1:2/metrics'}\n")); err != nil {
		t.Fatal(err)
	}
	c := tune.Candidate{Metric: "queue", Target: 8, Options: []tune.Option{
		{Name: "min", Value: 0, Default: 1, Key: "minReplicaCount"},
		{Name: "cooldown", Value: 120, Default: -1, Key: "zero.cooldownPeriod", Duration: true}}}
	if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: now, SLOTTFT: 2, Period: 15, Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
		t.Fatal(err)
	}
	tn.Step(ctx)
	if s, p := tuneState(tn, "chat"); s != TuneStateAdopted || p != c.Policy() {
		t.Fatalf("at zero: state %q %q, want adopted %s; log:\n%s", s, p, c.Policy(), log.String())
	}
	if err := l.SetConfig(ctx, cfg("")); err != nil {
		t.Fatal(err)
	}
	tn.mu.Lock()
	adopted := tn.targets["chat"].adopted
	tn.mu.Unlock()
	if adopted != nil {
		t.Errorf("after the reload to minReplicaCount 1 the result tuned at zero decides: min %d, zero %+v", adopted.Min, adopted.Zero)
	}
	want := `msg="tuned candidate dropped: it was tuned for another max_miss, slo_ttft, interval, replica or scale to zero; the configured policy decides until a new result"`
	if !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "tuned with scale to zero, cooldownPeriod 120s (the target keeps minReplicaCount 1)") {
		t.Errorf("log %q\nwant %s and the difference named", log.String(), want)
	}
}
