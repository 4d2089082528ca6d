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

// TestKVLinkBits: a link quoted in bits (10Gb, 10 GbE's 10 gigabits a
// second) was read as 10 GB/s, 8 times the 1.25 GB/s the link moves; every
// command taking --kv-link refuses it, exit 2, pointing at bytes. 25GB,
// 1.25GB and 1e9B (bytes) are parsed: 25e9, 1.25e9 and 1e9 bytes/s.
func TestKVLinkBits(t *testing.T) {
	pair := writePairConfig(t)
	for _, bits := range []string{"10Gb", "10 Gb", "10gb", "10Gbit", "10Gbps", "100Mb/s", "200Gib"} {
		for _, args := range [][]string{
			{"simulate", "--pd", "-q", "--kv-link", bits},
			{"tune", "--config", pair, "--target", "chat", "-q", "--kv-link", bits},
			{"gpu", "--pd", "10,2000,200", "--kv-link", bits},
		} {
			wantRefused(t, args, nil, "--kv-link", "is in bits", "10 Gb/s is 1.25GB")
		}
	}
	for s, want := range map[string]float64{"25GB": 25e9, "1.25GB": 1.25e9, "1e9B": 1e9, "2": 2e9} {
		if got, err := parseLinkBytes(s); err != nil || got != want {
			t.Errorf("parseLinkBytes(%q) = %v, %v; want %v", s, got, err, want)
		}
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

// TestSimulatePDTimelineCSV: --output csv --timeline with --pd prints
// the pools' timelines (it printed the summary table only): one line per
// policy, role and period, as many periods per pool as the one-pool
// timeline of the same trace has, and pd(fixed:1;fixed:2) asks 1
// prefill and 2 decode replicas in every one, with no reason or metric
// (fixed:N does not decide through pkg/recommend).
func TestSimulatePDTimelineCSV(t *testing.T) {
	code, out, stderr := runIn(t, nil, "simulate", "--pd", "-q", "--output", "csv", "--timeline", "-p", "pd(fixed:1;fixed:2)")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, one, _ := runIn(t, nil, "simulate", "-q", "--output", "csv", "--timeline", "-p", "fixed:1")
	periods := strings.Count(one, "\n") - 1
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if want := "policy,role,t_s,arrival_rate,desired,ready,starting,draining,running,waiting,held,ttft_p95_s,misses,reason,metric"; lines[0] != want {
		t.Fatalf("header %q, want %q", lines[0], want)
	}
	count := map[string]int{}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) != 15 || f[0] != "pd(fixed:1;fixed:2)" || f[13] != "" || f[14] != "" {
			t.Fatalf("line %q", l)
		}
		count[f[1]]++
		if want := map[string]string{"prefill": "1", "decode": "2"}[f[1]]; f[4] != want {
			t.Errorf("line %q: desired %s, want %s", l, f[4], want)
		}
	}
	if periods < 1 || count["prefill"] != periods || count["decode"] != periods || len(count) != 2 {
		t.Errorf("rows per role %v, want %d each (the one-pool timeline's periods)", count, periods)
	}
}

// TestPlotIsADirectory: a --plot naming a directory is refused before the
// replay, exit 2 (it was found only when the plot was written, exit 1,
// after the whole run), by simulate, tune and backtest (its Prometheus
// unreachable: the refusal comes before any query).
func TestPlotIsADirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plot.svg")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"simulate", "-q", "--plot", dir},
		{"tune", "--trace", "reference", "-q", "--plot", dir},
		{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{pod=~"chat-.*"}`, "-q", "--plot", dir},
	} {
		wantRefused(t, args, nil, "--plot \""+dir+"\": is a directory")
	}
}

// TestLoadUnresolvableHost: a URL whose host does not resolve (.invalid
// never does, RFC 2606) is refused before any load, exit 2, naming the URL
// and the host.
func TestLoadUnresolvableHost(t *testing.T) {
	wantRefused(t, []string{"load", "http://chat.invalid:8000", "--concurrency", "1", "--duration", "5s"}, nil,
		"URL http://chat.invalid:8000: host chat.invalid does not resolve", "give the server's IP address")
}
