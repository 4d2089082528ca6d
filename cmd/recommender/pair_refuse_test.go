package main

import (
	"bytes"
	"context"
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
		{[]string{"backtest", "--plot", "x.pdf"}, []string{`--plot "x.pdf": want a .png or .svg file`}},
		{[]string{"backtest", "--calibrate", "x.json"}, []string{"--calibrate with a prefill/decode pair", "--calibration FILE"}},
		{[]string{"backtest", "--replicas-query", "sum(up)"}, []string{"--replicas-query:", "roles.ROLE.replicas"}},
		{[]string{"backtest", "-p", "oracle"}, []string{"--policy #1:", "oracle"}},
		{[]string{"tune", "--plot", "x.svg"}, []string{"--plot with a prefill/decode pair"}},
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

// TestTunePDFlags: --pd needs --trace or a pair target; backtest's --kv-link a pair; --kv-link needs --pd; --plot is
// refused with --pd; a bad pair policy names its column.
func TestTunePDFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "--pd", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{pod=~"x"}`}, "--pd goes with --trace, or with --config and a pair target"},
		{[]string{"backtest", "--kv-link", "1GB", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{pod=~"x"}`}, "--kv-link goes with a prefill/decode pair"},
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
