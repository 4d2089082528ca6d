package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/config"
)

// TestTuneConfigTargetAtZero: `tune --config FILE --target chat` on a
// target that scales to zero (minReplicaCount 0, zero: with a 90 s
// cooldownPeriod) tunes it as tune --shard does: the winner at min 0 with
// cooldown=90, and the printed serve file keeps minReplicaCount 0 and
// the target's zero: block, loading as printed. Before, the history was
// tuned at floors of 1 to 3 and the file printed minReplicaCount 1 with
// no zero: block: the target turned always-on.
func TestTuneConfigTargetAtZero(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled day and tunes on an hour of it")
	}
	srv := serveLastDay(t)
	held := `sum(infscale_activator_held_requests{service="activator-chat"})`
	cfg := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `prometheus: {url: %s}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  replicas: 'sum(kube_deployment_spec_replicas{namespace="llm",deployment="chat"})'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  minReplicaCount: 0
  maxReplicaCount: 20
  zero: {cooldownPeriod: 90s, held: '%s'}
`, srv.URL, held), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"tune", "--config", cfg, "--target", "chat", "--start=-1h", "--workers", "2", "--output", "json", "--quiet"}, nil, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	var got struct {
		Policy      string `json:"policy"`
		ServeTarget string `json:"serve_target"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v in %s", err, stdout.String())
	}
	f, err := config.Parse([]byte(got.ServeTarget), "printed.yaml")
	if err != nil {
		t.Fatalf("printed serve file: %v\n%s", err, got.ServeTarget)
	}
	tg := f.Targets[0]
	if tg.Min == nil || *tg.Min != 0 || tg.Zero == nil || tg.Zero.Held != held || time.Duration(tg.Zero.Cooldown) != 90*time.Second {
		t.Errorf("winner %s, printed:\n%s\nwant minReplicaCount 0 and zero: {cooldownPeriod: 90s, held: %s}", got.Policy, got.ServeTarget, held)
	}
	if p, err := tg.Policy(); err != nil || p.Min != 0 {
		t.Errorf("printed target's policy: min %d, %v", p.Min, err)
	}
}
