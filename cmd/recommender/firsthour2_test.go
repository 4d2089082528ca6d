package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/promtest"
)

// TestFleetRefusesBadControlAndTokens: --control is checked as --listen is
// (exit 2 naming the flag, not a listen error at exit 1), and simulated
// requests longer than max_model_len, which vLLM refuses and the fleet's
// replicas would hold waiting forever, are refused. By hand: the default
// replica serves Meta-Llama-3-8B, whose config.json gives a context of
// 8192 tokens; 8000 + 193 = 8193 is one above it.
func TestFleetRefusesBadControlAndTokens(t *testing.T) {
	wantRefused(t, []string{"fleet", "--control", "nonsense"}, nil,
		`--control "nonsense": must be host:port`, "or off for no fault-drill API")
	wantRefused(t, []string{"fleet", "--prompt-tokens", "8000", "--output-tokens", "193"}, nil,
		"--prompt-tokens 8000 + --output-tokens 193 = 8193 tokens: above max_model_len 8192", "give fewer tokens")
	wantRefused(t, []string{"fleet", "--prompt-tokens", "10000000"}, nil, "above max_model_len 8192")
}

// TestAccuracyHeldOutUnknownModel: a --held-out name no row's model matches
// (here a typo; the file's one model is Qwen/Qwen2.5-7B-Instruct) is
// refused with the models the file has, instead of holding nothing out;
// the names match case-insensitively, as the report matches them.
func TestAccuracyHeldOutUnknownModel(t *testing.T) {
	const gt = "testdata/accuracy-two-stages.csv"
	wantRefused(t, []string{"accuracy", "--ground-truth", gt, "--held-out", "Qwen/Qwen2.5-7B-Instrct"}, nil,
		"--held-out Qwen/Qwen2.5-7B-Instrct: no row of ", "testdata/accuracy-two-stages.csv has that model (its models: Qwen/Qwen2.5-7B-Instruct)")
	if code, _, stderr := runIn(t, nil, "accuracy", "--ground-truth", gt, "--held-out", "qwen/qwen2.5-7b-instruct"); code != exitOK {
		t.Errorf("--held-out in another case: exit %d, want 0; stderr:\n%s", code, stderr)
	}
}

// TestSynthWeekPromtoolWroteNothing: a --promtool that exits 0 without
// writing a block (here a script standing for a wrong binary) is refused
// naming the flag, instead of printing how to serve an empty directory.
func TestSynthWeekPromtoolWroteNothing(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "not-promtool")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "week")
	wantRefused(t, []string{"synth-week", "--data", data, "--promtool", fake, "--days", "1"}, nil,
		"--promtool "+fake+": exited 0 but wrote no TSDB block (a directory with meta.json) in "+data, "is it Prometheus's promtool?")
}

// TestDemoDurationNeedsDemo: --demo-duration alone is refused as a flag
// that would be ignored, not with "--config is required"; with a config
// it would run serve for good, not for the duration.
func TestDemoDurationNeedsDemo(t *testing.T) {
	wantRefused(t, []string{"serve", "--demo-duration", "10s"}, nil, "--demo-duration needs --demo or --demo-zero")
	wantRefused(t, []string{"serve", "--config", "../../examples/serve-embedded.yaml", "--check-config", "--demo-duration", "10s"}, nil, "--demo-duration needs --demo or --demo-zero")
}

// TestSimulatePDOnlyFlags: --kv-link without --pd, and --gpu-hour-price
// with --pd (whose table has no cost column), would be ignored; both are
// refused naming the flag.
func TestSimulatePDOnlyFlags(t *testing.T) {
	wantRefused(t, []string{"simulate", "-q", "--kv-link", "1GB"}, nil, "--kv-link needs --pd")
	wantRefused(t, []string{"simulate", "-q", "--pd", "--gpu-hour-price", "3"}, nil, "--gpu-hour-price with --pd: not supported yet")
}

// TestRunUntilStoppedExit0: fleet and activator, like serve, run until a
// signal stops them; that stop is their end, exit 0 (README's exit codes),
// not 130.
func TestRunUntilStoppedExit0(t *testing.T) {
	for _, args := range [][]string{
		{"fleet", "--rate", "0", "--status", "0", "--control", "off"},
		{"activator", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		var out, errb bytes.Buffer
		code := run(ctx, args, strings.NewReader(""), &out, &errb)
		cancel()
		if code != exitOK {
			t.Errorf("%v stopped: exit %d, want 0; stderr %q", args, code, errb.String())
		}
	}
}

// TestSelectorUnquotedForTheShell: `--selector {namespace="llm"}` typed
// without single quotes reaches infscale as {namespace=llm} (the shell ate
// the double quotes); the refusal shows the form and says to quote it,
// before any connection (the URL here is closed).
func TestSelectorUnquotedForTheShell(t *testing.T) {
	for _, cmd := range []string{"backtest", "profile", "tune"} {
		wantRefused(t, []string{cmd, "--prometheus-url", "http://127.0.0.1:9", "--selector", "{namespace=llm}"}, nil,
			`--selector: not a PromQL label-matcher set such as '{namespace="llm", pod=~"chat-.*"}' (quote it for the shell)`, "selector `{namespace=llm}`")
	}
}

// TestAccuracyFilesSwapped: the ground truth given as --peers (or a peers
// file as --ground-truth) is refused naming the flag and the columns the
// file lacks, so a swap reads as one.
func TestAccuracyFilesSwapped(t *testing.T) {
	const gt = "testdata/accuracy-two-stages.csv"
	wantRefused(t, []string{"accuracy", "--ground-truth", gt, "--peers", gt}, nil,
		"infscale: --peers: ", "accuracy-two-stages.csv:1: header lacks column(s) metric_name, simulator, predicted_ms")
	wantRefused(t, []string{"accuracy", "--ground-truth", "testdata/garbage-trace.csv"}, nil,
		"infscale: --ground-truth: ", "garbage-trace.csv:1: header lacks column(s) experiment, model")
}

// TestHistorySelectorMatchesNothing: on a real (empty) Prometheus, a
// selector matching no series leaves backtest, profile and tune with no
// traffic; each says which counter's query (the selector in it, what to
// paste into Prometheus; it said the bare family name before) over which
// range and which flags to check, as backtest did alone, and why: the
// selector's labels match no series at all (Prometheus's own list of the
// names under it, empty). Exit 1: the query ran, the data is absent. An EPP's counter is asked under its
// llm_d_epp_ name or its deprecated twin (docs/llm-d.md), both named.
func TestHistorySelectorMatchesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	srv := promtest.Start(t, promtest.Options{})
	for _, cmd := range []string{"backtest", "profile", "tune"} {
		code, _, stderr := runIn(t, nil, cmd, "--prometheus-url", srv.URL, "--selector", `{namespace="nope"}`,
			"--start", "2026-11-01T00:00:00Z", "--end", "2026-11-02T00:00:00Z")
		want := "infscale: " + cmd + ": no request completed in the range: the success counter has no samples: vllm:request_success_total{namespace=\"nope\",server=\"\"} or on (namespace, pod, engine, dp_rank, tp_rank, pp_rank, model_name, name, model) vllm:e2e_request_latency_seconds_count{namespace=\"nope\",server=\"\"} over 2026-11-01T00:00:00Z..2026-11-02T00:00:00Z (no series in Prometheus match the selector {namespace=\"nope\"} in the range: its labels match nothing (compare them with count by (job, namespace, service, pod) (up)); check --selector and --server)"
		if code != exitRuntime || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant 1 and %q", cmd, code, stderr, want)
		}
	}
	code, _, stderr := runIn(t, nil, "backtest", "--prometheus-url", srv.URL, "--selector", `{namespace="nope"}`, "--server", "epp",
		"--start", "2026-11-01T00:00:00Z", "--end", "2026-11-02T00:00:00Z")
	if want := `the success counter has no samples: llm_d_epp_request_total{namespace="nope"} or on (namespace, pod, engine, dp_rank, tp_rank, pp_rank, model_name, name, model) inference_objective_request_total{namespace="nope"} over`; code != exitRuntime || !strings.Contains(stderr, want) {
		t.Errorf("backtest --server epp: exit %d, stderr:\n%s\nwant 1 and %q", code, stderr, want)
	}
	// With --config the target's keys chose the series, not the flags
	// (--selector is refused there): the hint names them.
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("prometheus: {url: \""+srv.URL+"\"}\ntargets:\n- {name: chat, server: vllm, selector: '{namespace=\"nope\"}', metrics: [{type: queue, target: 24}], max: 8}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"backtest", "tune"} {
		code, _, stderr := runIn(t, nil, cmd, "--config", cfg, "--target", "chat", "--start", "2026-11-01T00:00:00Z", "--end", "2026-11-02T00:00:00Z")
		want := "over 2026-11-01T00:00:00Z..2026-11-02T00:00:00Z (no series in Prometheus match the selector {namespace=\"nope\"} in the range: its labels match nothing (compare them with count by (job, namespace, service, pod) (up)); check the target's selector: and server: in the config, and --start/--end)"
		if code != exitRuntime || !strings.Contains(stderr, want) {
			t.Errorf("%s --config: exit %d, stderr:\n%s\nwant 1 and %q", cmd, code, stderr, want)
		}
	}
}

// TestFollowSaysAbsent: fleet --follow says once that the followed series
// is missing (a wrong --target held the fleet silently), says nothing while
// it is there, and says it again once it goes missing after that; errors
// of the read pass through.
func TestFollowSaysAbsent(t *testing.T) {
	type read struct {
		n   int
		ok  bool
		err error
	}
	reads := []read{{0, false, nil}, {0, false, nil}, {3, true, nil}, {0, false, nil}, {0, false, errors.New("refused")}}
	i := 0
	f := sayAbsent(func(context.Context) (int, bool, error) { r := reads[i]; i++; return r.n, r.ok, r.err }, "http://s/metrics", "chat", func() int { return 2 })
	wantErr := []string{
		`http://s/metrics has no infscale_desired_replicas{target="chat"} (yet): holding 2 replicas; check --target`,
		"", "", `has no infscale_desired_replicas{target="chat"}`, "refused",
	}
	for k, w := range wantErr {
		n, ok, err := f(context.Background())
		if (w == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), w) || n != reads[k].n || ok != reads[k].ok {
			t.Errorf("read %d: %d %v %v, want %d %v and an error with %q", k+1, n, ok, err, reads[k].n, reads[k].ok, w)
		}
	}
}

// TestSynthWeekLeavesNothingHalfWritten: a promtool that fails after
// writing part of a block, or is still running when the command is
// interrupted, leaves neither --data (an interrupted run left it holding
// promtool's sandbox, and the rerun was refused as not empty) nor the
// --openmetrics file, nor a temporary file beside them; one that writes
// a block leaves both in place. The scripts stand for promtool's faults:
// their seventh argument is the output directory.
func TestSynthWeekLeavesNothingHalfWritten(t *testing.T) {
	for _, c := range []struct {
		name, script string
		cancel       bool
		code         int
	}{
		{"fails", "mkdir -p \"$7/01PART\" && exit 1", false, exitRuntime},
		{"interrupted", "mkdir -p \"$7/01PART\" && exec sleep 30", true, exitInterrupted},
		{"writes a block", "mkdir -p \"$7/01BLOCK\" && echo '{}' > \"$7/01BLOCK/meta.json\"", false, exitOK},
	} {
		dir := t.TempDir()
		fake := filepath.Join(dir, "promtool")
		if err := os.WriteFile(fake, []byte("#!/bin/sh\n"+c.script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		data, om := filepath.Join(dir, "week"), filepath.Join(dir, "week.om")
		ctx, cancel := context.WithCancel(t.Context())
		if c.cancel {
			time.AfterFunc(2*time.Second, cancel)
		}
		var out, errb bytes.Buffer
		code := run(ctx, []string{"synth-week", "--data", data, "--promtool", fake, "--days", "1", "--openmetrics", om}, nil, &out, &errb)
		cancel()
		if code != c.code {
			t.Errorf("%s: exit %d, want %d: %s", c.name, code, c.code, errb.String())
		}
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		want := []string{"promtool"}
		if c.code == exitOK {
			want = []string{"promtool", "week", "week.om"}
			if fi, err := os.Stat(om); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("%s: --openmetrics %v, %v; want mode 0644", c.name, fi, err)
			}
			if _, err := os.Stat(filepath.Join(data, "01BLOCK", "meta.json")); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s: the directory holds %v, want %v", c.name, names, want)
		}
	}
}

// TestSynthWeekOpenMetricsPath: an --openmetrics naming a directory, or
// in a directory that does not exist, is refused before anything is
// written (it failed after the backfill, exit 1, with --data in place).
func TestSynthWeekOpenMetricsPath(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "week")
	wantRefused(t, []string{"synth-week", "--data", data, "--promtool", "/nonexistent/promtool", "--openmetrics", dir}, nil,
		"--openmetrics "+dir+": is a directory")
	wantRefused(t, []string{"synth-week", "--data", data, "--promtool", "/nonexistent/promtool", "--openmetrics", filepath.Join(dir, "no", "week.om")}, nil,
		"--openmetrics "+filepath.Join(dir, "no", "week.om")+": directory "+filepath.Join(dir, "no")+" does not exist")
	afile := filepath.Join(dir, "afile")
	if err := os.WriteFile(afile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, []string{"synth-week", "--data", data, "--promtool", "/nonexistent/promtool", "--openmetrics", filepath.Join(afile, "week.om")}, nil,
		"--openmetrics "+filepath.Join(afile, "week.om")+": "+afile+" is a file, not a directory")
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--data %s: %v, want nothing written", data, err)
	}
}

// TestDecideBareSecondsTarget: --target 2000 for ttft (milliseconds meant,
// as load's --goodput reads a bare number) was 2000 s and decided as if
// no TTFT could ever be late; a bare number of a minute or more is refused
// as the config's target: key refuses it.
func TestDecideBareSecondsTarget(t *testing.T) {
	wantRefused(t, []string{"decide", "--metric", "ttft", "--target", "2000", "--ttft", "3"}, nil,
		"--target (for --metric ttft): 2000 has no unit and would read as seconds (33m20s): write 2000ms for milliseconds, or 2000s")
	code, out, stderr := runIn(t, nil, "decide", "--metric", "ttft", "--target", "2000ms", "--ttft", "3", "--current", "2")
	if code != exitOK || !strings.Contains(out, "desired 3") {
		t.Errorf("--target 2000ms: exit %d, want 0 and desired 3 (ceil(2 x 3/2))\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
}

// TestMissingRelativeSaysWhere: a relative path that names no file, run
// from another directory than the one it is relative to (the README's
// commands are written for the repository root), says which working
// directory it was looked for in: a page, a trace and a file flag alike.
func TestMissingRelativeSaysWhere(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	wd, _ := os.Getwd()
	where := "(looked for in the working directory " + wd + ")"
	wantRefused(t, []string{"decide", "--target", "8", "examples/pages/vllm-0.prom"}, nil,
		"examples/pages/vllm-0.prom: invalid page source: no such file or directory "+where)
	wantRefused(t, []string{"simulate", "--trace", "traces/week.csv"}, nil, "--trace: traces/week.csv: no such file "+where)
	wantRefused(t, []string{"decide", "--behavior", "b.yaml"}, nil, "--behavior b.yaml: no such file "+where)
	// An absolute path names itself: nothing added.
	stderr := wantRefused(t, []string{"simulate", "--trace", filepath.Join(wd, "none.csv")}, nil, "none.csv: no such file")
	if strings.Contains(stderr, "working directory") {
		t.Errorf("absolute path: %s", stderr)
	}
}

// TestJSONLHoldingCSV: a .jsonl file is read as Mooncake's JSON lines by
// its extension; one that holds a CSV (renamed, or exported with the wrong
// extension) said only that it wanted a JSON object. It says the line is
// comma-separated and how to read it as CSV, as a .csv holding JSON lines
// is read by its content.
func TestJSONLHoldingCSV(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(p, []byte("arrival_s,prompt_tokens,output_tokens\n0,100,50\n1.5,200,60\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, []string{"simulate", "--trace", p}, nil,
		"t.jsonl:1: a .jsonl or .json trace is read as Mooncake's JSON lines, but this line is comma-separated (\"arrival_s,prompt_tokens,output_tokens\"): give csv:"+p+" to read it as CSV")
	if code, _, stderr := runIn(t, nil, "simulate", "--trace", "csv:"+p, "--policy", "fixed:1"); code != exitOK {
		t.Errorf("csv:%s: exit %d, want 0\n%s", p, code, stderr)
	}
}

// TestListArgsSplitByFlag: kong ends a list argument (decide's and parse's
// PAGE ...) at the first flag after it, so a page after a flag was "unexpected
// argument PAGE", naming nothing to do. It says the list goes in one run.
func TestListArgsSplitByFlag(t *testing.T) {
	a, b := "../../examples/pages/vllm-0.prom", "../../examples/pages/vllm-1.prom"
	wantRefused(t, []string{"decide", a, "--target", "8", b}, nil,
		"unexpected argument "+b+": the PAGE arguments go in one run, all before the flags or all after them (a flag between two of them ends the list)")
	wantRefused(t, []string{"parse", a, "--output", "json", b}, nil, "the PAGE arguments go in one run")
	// A command without a list argument: kong's message as it is.
	stderr := wantRefused(t, []string{"gpu", "extra"}, nil, "unexpected argument extra")
	if strings.Contains(stderr, "in one run") {
		t.Errorf("gpu extra: %s", stderr)
	}
}
