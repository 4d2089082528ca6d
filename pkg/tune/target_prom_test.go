package tune

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

// TestTuneTargetHistoryAsCovered: a target tuned an hour after its data
// ends (a Prometheus whose scrapes stopped, or lag) says it was tuned on
// the history the data covers: At within two steps (30 s each: the last
// samples still count in the rate windows after them) of the data's end
// (it said the time asked, an hour later, and serve's staleness check
// reads At), History the 3 h asked less that hour, within two steps.
func TestTuneTargetHistoryAsCovered(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week and tunes on it")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{})
	now := tr.End.Add(time.Hour)
	f, err := config.Parse([]byte(fmt.Sprintf(`prometheus: {url: %s}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  max: 20
  tune: {every: 1h, history: 3h}
`, srv.URL)), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api, err := promql.NewClient(promql.ClientConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	const step = 30 * time.Second
	res, err := TuneTarget(context.Background(), api, &f.Targets[0], now, TargetOptions{Workers: 2, Step: step, Space: Space{
		Metrics: []MetricSpace{{Name: "queue", Targets: []float64{0.5}, Integer: true, PerBatch: true}},
		Dims:    DefaultSpace.Dims,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if d := res.At.Sub(tr.End); d < -2*step || d > 2*step {
		t.Errorf("At %s, want within %s of the data's end %s (asked up to %s)", res.At, 2*step, tr.End, now)
	}
	if want := (2 * time.Hour).Seconds(); res.History < want-2*step.Seconds() || res.History > want+2*step.Seconds() {
		t.Errorf("History %.0f s, want about %.0f (3 h asked, the last hour without data)", res.History, want)
	}
}

// TestTuneTargetShortHistory: a new target whose series began 40 minutes
// ago (the synthetic day's first scrape at 00:00, now 00:40) asks for 7d
// and gets 40 minutes: under config.MinTuneHistory (1h) it is refused,
// saying how much the data covers and what is needed. It was tuned on
// those minutes (or failed naming --stress, a flag tune --shard refuses)
// and a result that "held" on them could be adopted.
func TestTuneTargetShortHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled day and tunes on it")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{Days: 1})
	now := tr.Start.Add(40 * time.Minute)
	f, err := config.Parse([]byte(fmt.Sprintf(`prometheus: {url: %s}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 20
  tune: {history: 7d}
`, srv.URL)), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api, err := promql.NewClient(promql.ClientConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = TuneTarget(context.Background(), api, &f.Targets[0], now, TargetOptions{})
	if !errors.Is(err, ErrShortHistory) {
		t.Fatalf("err %v, want ErrShortHistory", err)
	}
	// The data's span: the day's first scrape, 00:00, to now, 00:40.
	want := "target chat: history: too little history to tune on: the data covers 40m0s (2026-01-05T00:00:00Z..2026-01-05T00:40:00Z) of the 1w asked; at least 1h is needed (a new target is tuned once its series span that)"
	if err.Error() != want {
		t.Errorf("err %q\nwant %q", err, want)
	}
}
