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
)

// TestParseShard: I/N with 0 <= I < N; "/N" takes I from
// JOB_COMPLETION_INDEX (an indexed Job's).
func TestParseShard(t *testing.T) {
	if i, n, err := parseShard("2/4"); err != nil || i != 2 || n != 4 {
		t.Errorf("2/4: %d/%d %v", i, n, err)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "3")
	if i, n, err := parseShard("/5"); err != nil || i != 3 || n != 5 {
		t.Errorf("/5 with index 3: %d/%d %v", i, n, err)
	}
	for _, bad := range []string{"4/4", "-1/4", "1/0", "1", "a/b", "/2"} {
		if _, _, err := parseShard(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestParseShardErrors: each refusal says which part is wrong; "I/2" (the
// help's placeholder typed as is) and "/2" outside an indexed Job say how
// to give the index.
func TestParseShardErrors(t *testing.T) {
	for _, c := range []struct {
		arg, env string
		unset    bool
		want     string
	}{
		{arg: "I/2", unset: true, want: "I (the shard index, before the /) must be an integer from 0 to 1"},
		{arg: "/2", unset: true, want: "JOB_COMPLETION_INDEX, which is not set (a Kubernetes indexed Job sets it); outside such a Job give the index: 0/2 to 1/2"},
		{arg: "/2", env: "2", want: `JOB_COMPLETION_INDEX="2" is not a shard index from 0 to 1`},
		{arg: "0/x", unset: true, want: "N (the number of shards, after the /) must be an integer >= 1"},
		{arg: "0/0", unset: true, want: "N (the number of shards, after the /) must be an integer >= 1"},
		{arg: "3/2", unset: true, want: "I (the shard index, before the /) must be an integer from 0 to 1"},
		// One number, no slash: not "N after the /" (there is none).
		{arg: "1", unset: true, want: `--shard "1": no /: want I/N with 0 <= I < N, e.g. 0/4`},
	} {
		t.Run(c.arg+"_"+c.env, func(t *testing.T) {
			t.Setenv("JOB_COMPLETION_INDEX", c.env)
			if c.unset {
				os.Unsetenv("JOB_COMPLETION_INDEX")
			}
			_, _, err := parseShard(c.arg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("parseShard(%q) = %v, want an error with %q", c.arg, err, c.want)
			}
		})
	}
}

// TestTuneShardBadInput: --shard needs --config, a config target with a
// tune: block and somewhere to write; each refusal is exit 2 naming it.
func TestTuneShardBadInput(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	noTune := `prometheus: {url: "http://127.0.0.1:1"}
targets:
- {name: chat, server: vllm, selector: '{namespace="llm"}', metrics: [{type: queue, target: 24}], max: 8}
`
	if err := os.WriteFile(cfg, []byte(noTune), 0o644); err != nil {
		t.Fatal(err)
	}
	withTune := filepath.Join(dir, "t.yaml")
	if err := os.WriteFile(withTune, []byte(strings.Replace(noTune, "max: 8}", "max: 8, replica: {gpu: h100-sxm, model: llama-3-8b}, tune: {mode: shadow}}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "--shard", "0/2"}, "--shard needs --config"},
		{[]string{"tune", "--config", cfg, "--shard", "2/2"}, "want I/N"},
		{[]string{"tune", "--config", cfg, "--shard", "0/2"}, "no target has a tune: block"},
		{[]string{"tune", "--config", withTune, "--shard", "0/1"}, "give --out DIR or the target's tune.dir"},
		{[]string{"tune", "--config", withTune, "--shard", "0/1", "--out", dir, "--trace", "reference"}, "--trace does not go with --shard"},
		{[]string{"tune", "--config", cfg, "--out", dir}, "--out goes with --shard"},
		// Flags a shard would ignore are refused (they ran and did nothing).
		{[]string{"tune", "--config", withTune, "--shard", "0/1", "--out", dir, "--max-miss", "5"}, "--max-miss does not go with --shard"},
		{[]string{"tune", "--config", withTune, "--shard", "0/1", "--out", dir, "--stress", "none"}, "--stress does not go with --shard"},
		{[]string{"tune", "--config", withTune, "--shard", "0/1", "--out", dir, "--gpu", "a100-80gb"}, "--gpu does not go with --shard"},
		{[]string{"tune", "--config", withTune, "--shard", "0/1", "--out", dir, "--pd"}, "--pd does not go with --shard"},
		{[]string{"tune", "--config", withTune, "--shard", "0/1", "--out", dir, "--period", "30s"}, "--period does not go with --shard"},
		// Checked as tune on a trace checks it (the shard ran on one core).
		{[]string{"tune", "--config", withTune, "--shard", "0/1", "--out", dir, "--workers=-1"}, "--workers -1: want 0 to 1024 replays at once (0: the number of cores"},
		{[]string{"tune", "--config", withTune, "--shard", "0/1", "--out", dir, "--workers", "5000"}, "--workers 5000: want 0 to 1024"},
		// Bounded as backtest bounds it: 0 was taken as no limit, and a hung
		// Prometheus held the shard for good; -5s and 100h were taken too.
		{[]string{"tune", "--config", withTune, "--shard", "0/1", "--out", dir, "--query-timeout", "0s"}, "--query-timeout 0s"},
		{[]string{"tune", "--config", withTune, "--shard", "0/1", "--out", dir, "--query-timeout=-5s"}, "--query-timeout -5s"},
		{[]string{"tune", "--config", withTune, "--shard", "0/1", "--out", dir, "--query-timeout", "100h"}, "--query-timeout 100h: want 1s to 1h"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), c.args, nil, &out, &errb); code != exitInvalid || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d %q, want %d naming %q", c.args, code, errb.String(), exitInvalid, c.want)
		}
	}
}

// TestTuneShardEmpty: one target with a tune: block is target 0, in shard 0
// of 2; shard 1 has none: exit 0, a line saying so (it printed nothing),
// and with --output json "targets": [] (it was null), before any query.
func TestTuneShardEmpty(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "t.yaml")
	if err := os.WriteFile(cfg, []byte(`prometheus: {url: "http://127.0.0.1:1"}
targets:
- {name: chat, server: vllm, selector: '{namespace="llm"}', metrics: [{type: queue, target: 24}], max: 8, replica: {gpu: h100-sxm, model: llama-3-8b}, tune: {mode: shadow}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"tune", "--config", cfg, "--shard", "1/2", "--out", dir}, nil, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "shard 1/2: no target: "+cfg+" has 1 target(s) with a tune: block, the k-th (from 0) in shard k mod 2") {
		t.Errorf("text: exit %d, stdout %q, stderr %q; want 0 and the no-target line", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"tune", "--config", cfg, "--shard", "1/2", "--out", dir, "--output", "json"}, nil, &out, &errb); code != 0 {
		t.Fatalf("json: exit %d, stderr %q", code, errb.String())
	}
	var got struct {
		Shard   string            `json:"shard"`
		Targets []json.RawMessage `json:"targets"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Shard != "1/2" || got.Targets == nil || len(got.Targets) != 0 {
		t.Errorf("json %s: want shard 1/2 and targets [] (err %v)", out.String(), err)
	}
}

// TestTuneShardOutNotServes: --out writes each result where serve reads it
// only for a target whose tune.dir is that directory. chat reads from
// results/, code has no tune.dir (serve tunes it in process): with --out
// elsewhere/, each is warned about before any query (the run then fails
// on the unreachable Prometheus, as it would have); with --out naming
// results/ another way (results/../results/), only code is.
func TestTuneShardOutNotServes(t *testing.T) {
	dir := t.TempDir()
	results, elsewhere := filepath.Join(dir, "results"), filepath.Join(dir, "elsewhere")
	for _, d := range []string{results, elsewhere} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "t.yaml")
	if err := os.WriteFile(cfg, []byte(`prometheus: {url: "http://127.0.0.1:1"}
targets:
- {name: chat, server: vllm, selector: '{app="chat"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8, replica: {gpu: h100-sxm, model: llama-3-8b}, tune: {dir: `+results+`}}
- {name: code, server: vllm, selector: '{app="code"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8, replica: {gpu: h100-sxm, model: llama-3-8b}, tune: {}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	chat := "infscale: warning: target chat: serve reads its result from tune.dir " + results + ", not from --out " + elsewhere + ": it will not see this run's\n"
	code := func(out string) string {
		return "infscale: warning: target code has no tune.dir: serve tunes it in process and does not read the result written to --out " + out + "\n"
	}
	var stdout, stderr bytes.Buffer
	run(context.Background(), []string{"tune", "--config", cfg, "--shard", "0/1", "--out", elsewhere, "-q", "--query-timeout", "1s"}, nil, &stdout, &stderr)
	if !strings.HasPrefix(stderr.String(), chat+code(elsewhere)) {
		t.Errorf("--out elsewhere: stderr %q, want it to begin with both warnings", stderr.String())
	}
	stderr.Reset()
	other := results + "/../results/"
	run(context.Background(), []string{"tune", "--config", cfg, "--shard", "0/1", "--out", other, "-q", "--query-timeout", "1s"}, nil, &stdout, &stderr)
	if got := stderr.String(); strings.Contains(got, "target chat") || !strings.HasPrefix(got, code(other)) {
		t.Errorf("--out results: stderr %q, want only code's warning", got)
	}
}

// TestTuneShardPartition: the shards of N = 1 to 8 cover a config's 7
// targets with a tune: block exactly once each, the k-th such target (t3
// has none, so t4 is the 4th) in shard k mod N. By hand, N = 3: shard 0
// has t0, t4, t7 (k = 0, 3, 6), shard 1 t1, t5, shard 2 t2, t6; N = 8: one
// each in shards 0 to 6, none in shard 7. The targets fail on the
// unreachable Prometheus: the lines name each shard's targets.
func TestTuneShardPartition(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("prometheus: {url: \"http://127.0.0.1:1\"}\ntargets:\n")
	var tuned []string
	for i := range 8 {
		tune := ", tune: {}"
		if i == 3 {
			tune = ""
		} else {
			tuned = append(tuned, fmt.Sprintf("t%d", i))
		}
		fmt.Fprintf(&b, "- {name: t%d, server: vllm, selector: '{app=\"t%d\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8, replica: {gpu: h100-sxm, model: llama-3-8b}%s}\n", i, i, tune)
	}
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	shard := func(i, n int) []string {
		var out, errb bytes.Buffer
		run(context.Background(), []string{"tune", "--config", cfg, "--shard", fmt.Sprintf("%d/%d", i, n), "--out", dir, "-q", "--query-timeout", "1s"}, nil, &out, &errb)
		var names []string
		for _, l := range strings.Split(out.String(), "\n") {
			if name, _, ok := strings.Cut(l, ": failed: "); ok {
				names = append(names, name)
			}
		}
		return names
	}
	for n := 1; n <= 8; n++ {
		seen := map[string]int{}
		for i := range n {
			for _, name := range shard(i, n) {
				seen[name]++
			}
		}
		for _, name := range tuned {
			if seen[name] != 1 {
				t.Errorf("N=%d: %s in %d shards, want 1 (%v)", n, name, seen[name], seen)
			}
		}
		if len(seen) != len(tuned) {
			t.Errorf("N=%d: shards hold %v, want exactly %v", n, seen, tuned)
		}
	}
	for _, c := range []struct {
		i, n int
		want string
	}{{0, 3, "t0 t4 t7"}, {1, 3, "t1 t5"}, {2, 3, "t2 t6"}, {6, 8, "t7"}, {7, 8, ""}} {
		if got := strings.Join(shard(c.i, c.n), " "); got != c.want {
			t.Errorf("shard %d/%d: %q, want %q", c.i, c.n, got, c.want)
		}
	}
}
