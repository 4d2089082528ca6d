package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPairTargetHistoryFlags: on a roles: target, profile says it is a
// pair and what to run instead; backtest and tune refuse the flags that
// read or draw one pool, each naming the flag, and backtest checks its
// --plot file (before any query: the Prometheus here is unreachable).
func TestPairTargetHistoryFlags(t *testing.T) {
	cfg := writePairConfig(t)
	pair := []string{"--config", cfg, "--target", "chat"}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"profile"}, []string{"--target chat:", "is a prefill/decode pair (roles:)", "schedule: floor", "that role's --selector", "infscale backtest --config"}},
		{[]string{"backtest", "--plot", "x.pdf"}, []string{`--plot "x.pdf": want a file name ending in .png or .svg`}},
		{[]string{"backtest", "--calibrate", "x.json"}, []string{"--calibrate with a prefill/decode pair", "--calibration FILE"}},
		{[]string{"backtest", "--replicas-query", "sum(up)"}, []string{"--replicas-query:", "roles.ROLE.replicas"}},
		{[]string{"backtest", "-p", "oracle"}, []string{"--policy #1:", "oracle"}},
		{[]string{"tune", "--plot", "x.pdf"}, []string{`--plot "x.pdf": want a file name ending in .png or .svg`}},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), append(c.args, pair...), nil, &out, &errb)
		for _, want := range c.want {
			if code != exitInvalid || !strings.Contains(errb.String(), want) {
				t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", c.args, code, errb.String(), want)
			}
		}
	}
}

// TestTunePDFlags: --pd with --prometheus-url needs the pools' selectors, the pair flags --pd, and none goes with
// --trace; backtest's --kv-link a pair; --kv-link needs --pd; --plot with --pd is checked before the replays; a bad
// pair policy names its column.
func TestTunePDFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "--pd", "--prometheus-url", "http://127.0.0.1:1"}, "--pd needs --selector '{...}'"},
		{[]string{"tune", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{pod=~"x"}`, "--decode-selector", `{pod=~"d"}`}, "--decode-selector reads a prefill/decode pair: add --pd"},
		{[]string{"tune", "--trace", "reference", "--pd", "--prefill-selector", `{pod=~"p"}`}, "--prefill-selector chooses a Prometheus history; with --trace it would be ignored"},
		{[]string{"backtest", "--kv-link", "1GB", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{pod=~"x"}`}, "--kv-link goes with a prefill/decode pair"},
		{[]string{"tune", "--trace", "reference", "--kv-link", "1GB"}, "--kv-link goes with --pd"},
		{[]string{"tune", "--trace", "reference", "--pd", "--plot", "/nonexistent-dir/x.png"}, "directory /nonexistent-dir does not exist"},
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

// TestBacktestPDFlags: backtest --prometheus-url --pd refuses, exit 2
// and before any query (the Prometheus is unreachable), the pair flags
// that contradict each other or would be ignored, each naming the flag.
func TestBacktestPDFlags(t *testing.T) {
	pair := writePairConfig(t)
	one := filepath.Join(t.TempDir(), "one.yaml")
	if err := os.WriteFile(one, []byte(`prometheus: {url: "http://127.0.0.1:1"}
targets:
- name: chat
  selector: '{pod=~"chat-.*"}'
  metrics: [{type: queue, target: 24}]
  maxReplicaCount: 8
`), 0o644); err != nil {
		t.Fatal(err)
	}
	url := []string{"backtest", "--prometheus-url", "http://127.0.0.1:1"}
	sel := append(append([]string(nil), url...), "--selector", `{namespace="llm"}`)
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{with(sel, "--prefill-selector", `{pod=~"p-.*"}`), "--prefill-selector reads a prefill/decode pair: add --pd"},
		{with(sel, "--role-label", "role"), "--role-label reads a prefill/decode pair: add --pd"},
		{with(sel, "--decode-replicas-query", "sum(up)"), "--decode-replicas-query reads a prefill/decode pair: add --pd"},
		{with(sel, "--pd", "--replicas-query", "sum(up)"), "--replicas-query reads one pool; with --pd give --prefill-replicas-query and --decode-replicas-query"},
		{with(sel, "--pd", "--prefill-selector", `{pod=~"p-.*"}`, "--decode-selector", `{pod=~"d-.*"}`), "--selector: --prefill-selector and --decode-selector give both pools; drop --selector"},
		{with(url, "--pd", "--prefill-selector", `{pod=~"p-.*"}`, "--decode-selector", `{pod=~"d-.*"}`, "--role-label", "role"), "--role-label: --prefill-selector and --decode-selector give both pools"},
		{with(url, "--pd"), `--pd needs --selector '{...}' (each pool its --role-label llm_d_ai_role="prefill" or "decode"), or --prefill-selector and --decode-selector`},
		{with(url, "--pd", "--prefill-selector", `{pod=~"p-.*"}`), "--pd needs --selector"},
		{with(url, "--pd", "--selector", `{llm_d_ai_role="decode"}`), `--selector: the selector already matches on llm_d_ai_role (llm_d_ai_role="decode")`},
		{with(sel, "--pd", "--role-label", "llm-d.ai/role"), `--role-label: "llm-d.ai/role" is not a Prometheus label name`},
		{with(sel, "--pd", "--prefill-selector", "pod=p"), "--prefill-selector: not a PromQL label-matcher set"},
		{with(sel, "--pd", "--decode-replicas-query", "sum("), "--decode-replicas-query: "},
		// Both pools on the same series (the matchers in another order, or a
		// pool's own selector equal to --selector's split for the other).
		{with(url, "--pd", "--prefill-selector", `{namespace="llm",pod=~"chat-.*"}`, "--decode-selector", `{pod=~"chat-.*", namespace="llm"}`),
			`--prefill-selector and --decode-selector select the same series {namespace="llm",pod=~"chat-.*"}`},
		{with(sel, "--pd", "--prefill-selector", `{namespace="llm",llm_d_ai_role="decode"}`),
			`--prefill-selector and --selector split by --role-label select the same series {llm_d_ai_role="decode",namespace="llm"}`},
		// One pool's matchers all among the other's: it selects the other
		// pool's series too (both were read before, the prefill pool's
		// replay counting the decode pods).
		{with(sel, "--pd", "--prefill-selector", `{namespace="llm"}`),
			`--prefill-selector {namespace="llm"} selects every series that --selector split by --role-label {llm_d_ai_role="decode",namespace="llm"} selects: the prefill pool would count the decode pool's pods too`},
		{with(url, "--pd", "--prefill-selector", `{namespace="llm",pod=~"chat-prefill-.*"}`, "--decode-selector", `{namespace="llm"}`),
			`--decode-selector {namespace="llm"} selects every series that --prefill-selector {namespace="llm",pod=~"chat-prefill-.*"} selects: the decode pool would count the prefill pool's pods too`},
		// The EPP's series are the whole InferencePool's (both roles): it
		// ran the queries and failed with no traffic, exit 1.
		{with(sel, "--pd", "--server", "epp"), "--server epp with --pd: the Endpoint Picker's series describe its whole InferencePool, both roles' pods"},
		{with(sel, "--pd", "--calibrate", "x.json"), "--calibrate with a prefill/decode pair"},
		{with(sel, "--pd", "--plot", "x.pdf"), `--plot "x.pdf": want a file name ending in .png or .svg`},
		{[]string{"backtest", "--config", pair, "--target", "chat", "--prefill-selector", `{pod=~"p-.*"}`}, "--prefill-selector goes with --prometheus-url --pd; with --config each pool's series are its roles.ROLE.selector"},
		{[]string{"backtest", "--config", pair, "--target", "chat", "--role-label", "role"}, "--role-label goes with --prometheus-url --pd"},
		{[]string{"backtest", "--config", one, "--target", "chat", "--pd"}, "--pd: --target chat of " + one + " is one pool (no roles:); leave out --pd, or give a pair target"},
		{[]string{"backtest", "--config", one, "--target", "chat", "--prefill-replicas-query", "sum(up)"}, "--prefill-replicas-query: --target chat of " + one + " is one pool (no roles:); give --replicas-query"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, nil, &out, &errb)
		if code != exitInvalid || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", c.args[1:], code, errb.String(), c.want)
		}
	}
}
