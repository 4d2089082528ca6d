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

// TestTunePDFlags: --pd needs --trace; --kv-link needs --pd; --plot is
// refused with --pd; a bad pair policy names its column.
func TestTunePDFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "--pd", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{pod=~"x"}`}, "--pd goes with --trace"},
		{[]string{"tune", "--trace", "reference", "--kv-link", "1GB"}, "--kv-link goes with --pd"},
		{[]string{"tune", "--trace", "reference", "--pd", "--plot", "x.png"}, "--plot with --pd"},
		{[]string{"simulate", "--pd", "-p", "recommended(prefill=0.7)"}, "wants both prefill=TARGET and decode=TARGET"},
		{[]string{"simulate", "--pd", "-p", "recommended(prefill=0.7,decode=1.5)"}, "decode=1.5: want a demand target in (0, 1]"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, nil, &out, &errb)
		if code != exitInvalid || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", c.args, code, errb.String(), c.want)
		}
	}
}
