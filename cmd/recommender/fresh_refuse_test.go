package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writePairConfig writes a P/D target chat whose Prometheus is
// unreachable (127.0.0.1:1): a command that queries it fails, so a
// refusal shows the flag was checked before any query.
func writePairConfig(t *testing.T) string {
	t.Helper()
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
	return cfg
}

// TestKVLinkZero: a KV link of 0 bytes/s moves nothing; every command
// taking --kv-link refuses it, exit 2, naming the flag, before a replay
// or a query (backtest's Prometheus is unreachable, which would be
// exit 1).
func TestKVLinkZero(t *testing.T) {
	pair := writePairConfig(t)
	for _, args := range [][]string{
		{"simulate", "--pd", "-q", "--kv-link", "0"},
		{"tune", "--trace", "reference", "--pd", "-q", "--kv-link", "0GB"},
		{"backtest", "--config", pair, "--target", "chat", "-q", "--kv-link", "0"},
		{"tune", "--config", pair, "--target", "chat", "-q", "--kv-link", "0"},
		{"gpu", "--pd", "10,2000,200", "--kv-link", "0"},
	} {
		wantRefused(t, args, nil, "--kv-link 0", "want a finite bandwidth > 0")
	}
}

// TestTunePDSLOOnce: a KV link so slow that moving one 8,192-token
// prompt's KV (8,192 x 128 KiB = 1 GiB at 1 B/s: 1,073,741,824 s) takes
// the whole 2 s SLO is refused as simulate --pd refuses it, naming both
// flags, and said once however many workers hit it.
func TestTunePDSLOOnce(t *testing.T) {
	stderr := wantRefused(t, []string{"tune", "--trace", "reference", "--pd", "-q", "--workers", "4", "--kv-link", "1B"}, nil,
		"--slo-ttft 2s with --kv-link 1B", "the SLO leaves the prefill pool no time")
	if n := strings.Count(stderr, "the SLO leaves"); n != 1 {
		t.Errorf("the error is said %d times, want once:\n%s", n, stderr)
	}
}

// TestHistoryNeedsPrometheusURL: backtest, tune and profile on a target
// of a file without prometheus.url (embedded: serve scrapes the
// replicas) say what is missing and what to give instead, each without
// naming another command.
func TestHistoryNeedsPrometheusURL(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "embedded.yaml")
	yaml := `targets:
- name: chat
  scrape: ["http://127.0.0.1:1/metrics"]
  metrics: [{type: queue, target: 24}]
  maxReplicaCount: 8
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"backtest", "tune", "profile"} {
		stderr := wantRefused(t, []string{cmd, "--config", cfg, "--target", "chat"}, nil,
			"embedded.yaml: no prometheus.url", "add prometheus.url, or give --prometheus-url and --selector")
		if strings.Contains(stderr, "backtest needs") {
			t.Errorf("%s: %s", cmd, stderr)
		}
	}
}

// TestPeriodLongerThanReplay: a --period longer than what is replayed
// (the reference trace's 1,500 s; a 7-day history's 604,800 s) leaves
// no decision to compare; simulate, tune and backtest refuse it, exit
// 2, before a replay or a query (the pair's Prometheus is unreachable).
// A period of the whole span still decides once.
func TestPeriodLongerThanReplay(t *testing.T) {
	pair := writePairConfig(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "-q", "--period", "1501s"}, "--period 25m1s: longer than the replay's 1500 s"},
		{[]string{"simulate", "--pd", "-q", "--period", "1h"}, "--period 1h0m0s: longer than the replay's 1500 s"},
		{[]string{"tune", "--trace", "reference", "-q", "--period", "2000s"}, "--period 33m20s: longer than the replay's 1500 s"},
		{[]string{"backtest", "--config", pair, "--target", "chat", "-q", "--period", "200h"}, "--period 200h0m0s: longer than the replay's 6.048e+05 s"},
		{[]string{"tune", "--config", pair, "--target", "chat", "-q", "--period", "200h"}, "--period 200h0m0s: longer than the replay's 6.048e+05 s"},
	} {
		wantRefused(t, c.args, nil, c.want, "so no policy would decide")
	}
	if code, _, stderr := runIn(t, nil, "simulate", "-q", "--period", "1500s", "-p", "fixed:1"); code != exitOK {
		t.Errorf("--period 1500s on the 1,500 s reference trace: exit %d, %s", code, stderr)
	}
}
