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

	"github.com/infscale/infscale/pkg/tune"
)

// TestTuneShardInterruptAfterWrite: a signal that landed right after a
// target's NAME.json was written ended the shard before the target's line
// was printed: the file serve reads was replaced and nothing said so. The
// signal is sent (the context cancelled) inside the write, once the file is
// there: the shard still prints the target's line naming the file, tunes
// no further target (chat-b, also this shard's, is neither tuned nor
// written), and exits 130 (interrupted). With --output json the targets
// done are the JSON's, as the text lines are.
func TestTuneShardInterruptAfterWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled day and tunes on an hour of it")
	}
	srv := serveLastDay(t)
	for _, output := range []string{"text", "json"} {
		dir := t.TempDir()
		target := func(name string) string {
			return fmt.Sprintf(`- name: %s
  server: vllm
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 20
  tune: {every: 1h, history: 1h, max_miss: 0.01, mode: shadow, dir: %q}
`, name, dir)
		}
		cfg := filepath.Join(dir, "serve.yaml")
		if err := os.WriteFile(cfg, []byte("prometheus: {url: "+srv.URL+"}\npollingInterval: 15s\ntargets:\n"+target("chat")+target("chat-b")), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		old := writeShardResult
		writeShardResult = func(dir string, r tune.TargetResult) error {
			err := old(dir, r)
			cancel() // SIGINT, just after the file is in place
			return err
		}
		var stdout, stderr bytes.Buffer
		code := run(ctx, []string{"tune", "--config", cfg, "--shard", "0/1", "--workers", "2", "--output", output, "--quiet"}, nil, &stdout, &stderr)
		writeShardResult = old
		cancel()
		if code != exitInterrupted {
			t.Fatalf("%s: exit %d, want %d; stderr %s", output, code, exitInterrupted, stderr.String())
		}
		path := tune.ResultPath(dir, "chat")
		if _, ok, err := tune.ReadResult(dir, "chat"); !ok || err != nil {
			t.Fatalf("%s: chat.json: %v %v; want the result written", output, ok, err)
		}
		if _, err := os.Stat(tune.ResultPath(dir, "chat-b")); !os.IsNotExist(err) {
			t.Errorf("%s: chat-b.json: %v; want none (not tuned after the signal)", output, err)
		}
		if output == "text" {
			if out := stdout.String(); !strings.HasPrefix(out, "chat: ") || !strings.HasSuffix(out, " -> "+path+"\n") || strings.Contains(out, "chat-b") {
				t.Errorf("stdout %q: want chat's line naming %s, and only it", out, path)
			}
			continue
		}
		var got struct {
			Targets []struct{ Target, Path string } `json:"targets"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil || len(got.Targets) != 1 || got.Targets[0].Target != "chat" || got.Targets[0].Path != path {
			t.Errorf("json stdout %s (%v): want chat alone, its path %s", stdout.String(), err, path)
		}
	}
}
