package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

// TestTuneConfigTargetTuneBlock: `tune --config FILE --target chat` on a
// target whose tune: block says slo_ttft 2500ms and max_miss 0.01 tunes on
// them, as tune --shard and serve do: the budget 1% (0.01 of requests),
// the demand rows' guards ttft at 2.5 s and queuewait at a fifth of it,
// 0.5 s; --slo-ttft and --max-miss override them. Before, the flags'
// defaults (2 s, 0.1%) ran beside the block.
func TestTuneConfigTargetTuneBlock(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled day and tunes on an hour of it, twice")
	}
	srv := serveLastDay(t)
	cfg := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `prometheus: {url: %s}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 20
  tune: {slo_ttft: 2500ms, max_miss: 0.01}
`, srv.URL), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags       []string
		budget      float64
		ttft, qwait string
		note        bool
	}{
		{nil, 1, "ttft:2.5", "queuewait:0.5", true},
		{[]string{"--slo-ttft", "1s", "--max-miss", "0.1"}, 0.1, "ttft:1", "queuewait:0.2", false},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"tune", "--config", cfg, "--target", "chat", "--start=-1h", "--workers", "2", "--output", "json", "--quiet"}, c.flags...)
		if code := run(context.Background(), args, nil, &stdout, &stderr); code != exitOK {
			t.Fatalf("%v: exit %d, stderr %s", c.flags, code, stderr.String())
		}
		var got struct {
			MaxMissPct float64 `json:"max_miss_pct"`
			Finalists  []struct {
				Policy string `json:"policy"`
			} `json:"finalists"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
			t.Fatalf("%v in %s", err, stdout.String())
		}
		if got.MaxMissPct != c.budget {
			t.Errorf("%v: max_miss_pct %v, want %v", c.flags, got.MaxMissPct, c.budget)
		}
		for _, f := range got.Finalists {
			if strings.HasPrefix(f.Policy, "demand:") && (!strings.Contains(f.Policy, ","+c.ttft+",") || !strings.HasSuffix(f.Policy, ","+c.qwait)) {
				t.Errorf("%v: finalist %s, want its guards %s and %s", c.flags, f.Policy, c.ttft, c.qwait)
			}
		}
		note := "tune: target chat: slo_ttft 2s500ms, max_miss 0.01 from its tune: block"
		if strings.Contains(stderr.String(), note) != c.note {
			t.Errorf("%v: stderr %q, want the note %q: %v", c.flags, stderr.String(), note, c.note)
		}
	}
}

// TestTuneHistoryMostlyGaps: tune on an hour of the synthetic week ending
// at Friday 16:25, whose scrape gap (16:00-16:20, no sample of any series)
// fills 10 minutes and the seconds to the next scrape of the held-out part
// (16:10 to 16:25, the last quarter): refused, exit 1, naming the part and
// its time in gaps, as tune --shard and serve refuse it. Before, the
// command tuned on the flat traffic spread over the gap and said "holds".
func TestTuneHistoryMostlyGaps(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{})
	friday := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC)
	if !tr.Gap[0].Equal(friday.Add(16 * time.Hour)) {
		t.Fatalf("the week's gap starts %s, want Friday 16:00", tr.Gap[0])
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"tune", "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`,
		"--start", "2026-01-09T15:25:00Z", "--end", "2026-01-09T16:25:00Z", "--workers", "2", "--quiet"}, nil, &stdout, &stderr)
	want := "too much of the history is gaps: the held-out part (2026-01-09T16:10:00Z..2026-01-09T16:25:00Z) has no sample for 10m"
	if code != exitRuntime || !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "s of its 15m0s, more than half") ||
		!strings.Contains(stderr.String(), "choose --start and --end around the gaps") {
		t.Errorf("exit %d, stderr %q; want 1 and %q...s of its 15m0s, more than half", code, stderr.String(), want)
	}
}

// TestTuneWarnsOfTheRead: tune prints what the history read warned of,
// as backtest's report does: a --replicas-query that matches nothing
// (infscale_absent_replicas is no series of the backfilled day) leaves no
// observed replicas, said once on stderr; the tuning still runs. Before,
// tune dropped the read's warnings (that one, Prometheus's annotations,
// two models under one selector).
func TestTuneWarnsOfTheRead(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled day and tunes on an hour of it")
	}
	srv := serveLastDay(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"tune", "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`,
		"--replicas-query", "infscale_absent_replicas", "--start=-1h", "--workers", "2", "--quiet"}, nil, &stdout, &stderr)
	want := "infscale: warning: replicas query infscale_absent_replicas returned no samples"
	if code != exitOK || strings.Count(stderr.String(), want) != 1 {
		t.Errorf("exit %d, stderr %q; want 0 and %q once", code, stderr.String(), want)
	}

	// tune --shard (and serve's in-process tuning, through the same
	// TargetOptions.Warn) says it for the target that has it.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte(`prometheus: {url: `+srv.URL+`}
targets:
- name: chat
  selector: '{namespace="llm"}'
  replicas: infscale_absent_replicas
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 20
  tune: {history: 1h}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	code = run(context.Background(), []string{"tune", "--config", cfg, "--shard", "0/1", "--out", dir, "--quiet"}, nil, &stdout, &stderr)
	want = "warning: target chat: replicas query infscale_absent_replicas returned no samples"
	if code != exitOK || strings.Count(stderr.String(), want) != 1 {
		t.Errorf("--shard: exit %d, stderr %q; want 0 and %q once", code, stderr.String(), want)
	}
}
