package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPairTargetRefusedByHistoryCommands: backtest, tune and profile on a
// roles: target say it is a pair and what replays one, not a generic
// policy error.
func TestPairTargetRefusedByHistoryCommands(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "pair.yaml")
	yaml := `prometheus: {url: "http://127.0.0.1:1"}
targets:
- name: chat
  replica: {gpu: h100-sxm, model: llama-3-8b}
  roles:
    prefill:
      selector: '{pod=~"chat-prefill-.*"}'
      metrics: [{type: demand, target: 0.9}]
      maxReplicaCount: 8
    decode:
      selector: '{pod=~"chat-decode-.*"}'
      metrics: [{type: demand, target: 0.9}]
      maxReplicaCount: 8
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"backtest", "tune", "profile"} {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{cmd, "--config", cfg, "--target", "chat"}, nil, &out, &errb)
		for _, want := range []string{"--target chat:", "is a prefill/decode pair (roles:)", "simulate --pd --trace FILE", "one role's --selector"} {
			if code != exitInvalid || !strings.Contains(errb.String(), want) {
				t.Errorf("%s: exit %d, stderr %q; want exit 2 mentioning %q", cmd, code, errb.String(), want)
			}
		}
	}
}
