package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/infscale/infscale/pkg/replica"
)

// The first-hour defects of issue 24: each bad input is refused with exit
// 2 and one message naming the flag, file or position as typed and what to
// give instead.

// runIn runs the binary's run on args with stdin, returning the exit code
// and both streams.
func runIn(t *testing.T, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, stdin, &out, &errb)
	return code, out.String(), errb.String()
}

// wantRefused checks exit 2 and that stderr holds every want.
func wantRefused(t *testing.T, args []string, stdin io.Reader, want ...string) string {
	t.Helper()
	code, _, stderr := runIn(t, stdin, args...)
	if code != exitInvalid {
		t.Errorf("%v: exit %d, want 2; stderr:\n%s", args, code, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%v: stderr lacks %q:\n%s", args, w, stderr)
		}
	}
	return stderr
}

// TestDemosInterrupted: a signal (the context) ends either demo with its
// summary, marked interrupted, and exit 0, as serve stops on one.
func TestDemosInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs both demos for seconds")
	}
	for _, demo := range []string{"--demo", "--demo-zero"} {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		var out, errb bytes.Buffer
		code := run(ctx, []string{"serve", demo, "--demo-duration", "10s", "--listen", "127.0.0.1:0"}, nil, &out, &errb)
		cancel()
		if code != exitOK || !strings.Contains(out.String(), "\nsummary: ") || !strings.Contains(out.String(), "interrupted") {
			t.Errorf("%s stopped after 4 s: exit %d, want 0 with a summary saying interrupted\nstdout:\n%s\nstderr:\n%s", demo, code, out.String(), errb.String())
		}
	}
}

// replicaAliases are the flags of gpu with an old spelling: name -> alias.
func replicaAliases(t *testing.T) map[string]*kong.Flag {
	t.Helper()
	var cli CLI
	p, err := newParser(&cli, io.Discard, io.Discard, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*kong.Flag{}
	for _, f := range flagsOf(p.Model) {
		if len(f.Aliases) > 0 {
			out[f.Name] = f
		}
	}
	if len(out) < 25 {
		t.Fatalf("%d aliased flags, want the replica flags' 27", len(out))
	}
	return out
}

// TestAliasesNamedAsTyped: every hidden --replica-* alias with a value it
// cannot take is named as typed in the error, never as its new name; and
// given beside its new name it is refused as one flag given twice.
func TestAliasesNamedAsTyped(t *testing.T) {
	for name, f := range replicaAliases(t) {
		alias := f.Aliases[0]
		stderr := wantRefused(t, []string{"gpu", "--" + alias + "=nope"}, nil, "--"+alias+": ", "use --"+name)
		if strings.Contains(strings.ReplaceAll(stderr, "use --"+name+"\n", ""), "--"+name+":") {
			t.Errorf("--%s=nope: the error names --%s:\n%s", alias, name, stderr)
		}
		both := []string{"gpu", "--" + name, "1", "--" + alias, "1"}
		if f.IsBool() {
			both = []string{"gpu", "--" + name, "--" + alias}
		}
		wantRefused(t, both, nil, "--"+alias+" and --"+name+" are one flag (--"+alias+" is its old spelling): give it once, as --"+name)
	}
	// The conflict is reported whichever comes first.
	wantRefused(t, []string{"decide", "--queue", "4", "--replica-gpu", "h100-sxm", "--gpu", "a100-80gb"}, nil,
		"--replica-gpu and --gpu are one flag")
	// An empty value ran on the default (h100-sxm) as if not given.
	wantRefused(t, []string{"gpu", "--gpu", ""}, nil, "--gpu is given an empty value: give one, or leave the flag out for its default")
	wantRefused(t, []string{"gpu", "--replica-model="}, nil, "--replica-model is given an empty value")
	// One spelling given twice keeps the last, as Go's flag package does,
	// so that a wrapper may append an override.
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"gpu", "--gpu", "h100-sxm", "--gpu", "a100-80gb"}, nil, &out, &errb); code != exitOK || !strings.Contains(out.String(), "on 1 x a100-80gb") {
		t.Errorf("--gpu twice: exit %d, stdout %q, stderr %q; want 0 on a100-80gb (the last)", code, out.String(), errb.String())
	}
}

// TestFlagValueErrors: a duration, whole number, decimal or percentage
// that does not read names the flag, the value and the accepted forms.
func TestFlagValueErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--slo-ttft", "2"}, `infscale: --slo-ttft: "2" has no unit: write 2s for seconds or 2ms for milliseconds (a duration is a number with a unit (ns, us, ms, s, m, h), e.g. 2s, 500ms, 1m30s)` + "\n"},
		{[]string{"simulate", "--drain", "1d"}, `infscale: --drain: "1d": days are not a unit here: write 24h (a duration is a number with a unit (ns, us, ms, s, m, h), e.g. 2s, 500ms, 1m30s)` + "\n"},
		// NaN, Inf and 1e3 read as floats, but NaNs, Infs and 1e3s are no
		// durations: no unit is suggested for them.
		{[]string{"simulate", "--slo-ttft", "NaN"}, `infscale: --slo-ttft: "NaN" is not a duration: want a number with a unit (ns, us, ms, s, m, h), e.g. 2s, 500ms, 1m30s` + "\n"},
		{[]string{"simulate", "--period", "Inf"}, `infscale: --period: "Inf" is not a duration: want a number with a unit (ns, us, ms, s, m, h), e.g. 2s, 500ms, 1m30s` + "\n"},
		{[]string{"simulate", "--period", "1e3"}, `infscale: --period: "1e3" is not a duration: want a number with a unit (ns, us, ms, s, m, h), e.g. 2s, 500ms, 1m30s` + "\n"},
		{[]string{"simulate", "--period", "1.5"}, `infscale: --period: "1.5" has no unit: write 1.5s for seconds or 1.5ms for milliseconds`},
		{[]string{"simulate", "--period", "fast"}, `infscale: --period: "fast" is not a duration: want a number with a unit (ns, us, ms, s, m, h), e.g. 2s, 500ms, 1m30s` + "\n"},
		// 2^63 ns is 2562047h47m16.85s.
		{[]string{"simulate", "--period", "3000000h"}, `infscale: --period: "3000000h" is out of range: at most 2562047h` + "\n"},
		{[]string{"simulate", "--initial", "1.5"}, `infscale: --initial: "1.5" is not a whole number: want an integer in decimal digits, e.g. 4` + "\n"},
		// kong read 0x10 as 16 and 017 as octal 15: decimal digits only.
		{[]string{"simulate", "--initial", "0x10"}, ""},
		{[]string{"simulate", "--max-batched-tokens", "99999999999999999999"}, `infscale: --max-batched-tokens: "99999999999999999999" is out of range: want -9223372036854775808 to 9223372036854775807` + "\n"},
		{[]string{"simulate", "--rate-scale", "2x"}, `infscale: --rate-scale: "2x" is not a number: want a decimal number without a unit, e.g. 0.5 or 12` + "\n"},
		{[]string{"tune", "--max-miss", "0.1%%"}, `infscale: --max-miss: "0.1%%" is not a percentage: want a number of percent, with or without %, e.g. 0.1 or 0.1% (one in a thousand)` + "\n"},
		{[]string{"decide", "--cpu", "sixty"}, `infscale: --cpu: "sixty" is not a percentage`},
	} {
		code, _, stderr := runIn(t, nil, c.args...)
		if c.want == "" {
			if code != exitInvalid || !strings.Contains(stderr, `"0x10" is not a whole number`) {
				t.Errorf("%v: exit %d, stderr %q; want 2, not a whole number", c.args, code, stderr)
			}
			continue
		}
		if code != exitInvalid || !strings.HasPrefix(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr\n%q\nwant 2 and\n%q", c.args, code, stderr, c.want)
		}
	}
}

// TestPercentFlags: a percentage flag reads 0.1 and 0.1% alike, as 0.1
// percent.
func TestPercentFlags(t *testing.T) {
	for _, v := range []string{"0.1", "0.1%", " 0.1 %"} {
		var cli CLI
		p, err := newParser(&cli, io.Discard, io.Discard, func(int) {})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Parse([]string{"tune", "--max-miss", v, "--trace", "reference"}); err != nil {
			t.Fatalf("--max-miss %q: %v", v, err)
		}
		if cli.Tune.MaxMiss != 0.1 {
			t.Errorf("--max-miss %q = %v, want 0.1", v, cli.Tune.MaxMiss)
		}
	}
	// --kv reads 0.9 and 90% alike, as the policy strings' kv:90%: at
	// target 0.6 over 2 replicas, ceil(2 x 0.9 / 0.6) = 3.
	for _, v := range []string{"0.9", "90%"} {
		wantDecision(t, decideOK(t, "--metric", "kv", "--target", "0.6", "--kv", v, "--current", "2"), 3, "DesiredWithinRange")
	}
	wantRefused(t, []string{"decide", "--kv", "150%"}, nil, "--kv 1.5 (150%): want a fraction in [0, 1] or a percentage")
	d := decideOK(t, "--metric", "cpu", "--target", "60", "--cpu", "90%", "--current", "2")
	// The HPA's rule: ceil(2 x 90 / 60) = 3.
	wantDecision(t, d, 3, "DesiredWithinRange")
}

// TestDecideNothingToDecide: decide without a page or a signal, or with an
// empty page, is refused (it decided no-data and exited 0), and an empty
// page is said to be empty, not answered with every server's families.
func TestDecideNothingToDecide(t *testing.T) {
	wantRefused(t, []string{"decide"}, strings.NewReader(""), "infscale: nothing to decide on: give the replicas' /metrics pages")
	wantRefused(t, []string{"decide", "--state", filepath.Join(t.TempDir(), "s.json")}, nil, "nothing to decide on")
	for _, c := range []struct{ stdin, want string }{
		{"", "infscale: stdin: no known server profile: the page is empty (0 bytes): want a model server's /metrics text"},
		{"\n \n", "stdin: no known server profile: the page is empty (3 bytes, white space only)"},
		{"# a comment\n", "stdin: no known server profile: the page has no metric families (comments only)"},
	} {
		stderr := wantRefused(t, []string{"decide", "-"}, strings.NewReader(c.stdin), c.want)
		if strings.Contains(stderr, "vllm:num_requests_running") || strings.Count(stderr, "\n") > 1 {
			t.Errorf("stdin %q: the error lists families or runs over lines:\n%s", c.stdin, stderr)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty.prom")
	os.WriteFile(empty, nil, 0o644)
	wantRefused(t, []string{"parse", empty}, nil, empty+": no known server profile: the page is empty (0 bytes)")
}

// TestUnknownReplicaNames: decide (and load) refuse an unknown --gpu or
// --model even when no demand metric uses the replica, listing the
// catalog's names as gpu does.
func TestUnknownReplicaNames(t *testing.T) {
	gpus, models := strings.Join(replica.GPUNames(), ", "), strings.Join(replica.ModelNames(), ", ")
	wantRefused(t, []string{"decide", "--queue", "8", "--gpu", "X"}, nil, `--gpu: unknown GPU "X" (allowed: `+gpus+")")
	wantRefused(t, []string{"decide", "--queue", "8", "--model", "Y"}, nil, `--model: unknown model "Y" (allowed: `+models+")")
	wantRefused(t, []string{"gpu", "--gpu", "X"}, nil, `--gpu: unknown GPU "X" (allowed: `+gpus+")")
	wantRefused(t, []string{"load", "http://127.0.0.1:1", "--concurrency", "1", "--gpu", "X"}, nil, `--gpu: unknown GPU "X"`)
}

// TestConfigFlagMissingFile: a --config that does not exist is named with
// the flag, in every command that takes one.
func TestConfigFlagMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	want := "infscale: --config " + missing + ": no such file: want serve's YAML configuration (docs/config.md; examples/serve-*.yaml are some)\n"
	for _, args := range [][]string{
		{"serve", "--check-config", "--config", missing},
		{"serve", "--config", missing},
		{"backtest", "--config", missing, "--target", "chat"},
	} {
		if code, _, stderr := runIn(t, nil, args...); code != exitInvalid || stderr != want {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", args, code, stderr, want)
		}
	}
}

// TestTraceFileErrors: a trace path with no file says so in one line; the
// catalogue of specs is for a spec that does not parse, and is one line.
func TestTraceFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.csv")
	if code, _, stderr := runIn(t, nil, "simulate", "--trace", missing); code != exitInvalid || stderr != "infscale: --trace: "+missing+": no such file\n" {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runIn(t, nil, "simulate", "--trace", "csv:"+missing); code != exitInvalid || stderr != "infscale: --trace: "+missing+": no such file\n" {
		t.Errorf("csv: missing file: exit %d, stderr %q", code, stderr)
	}
	for _, spec := range []string{"synthtic:poisson,rate=1", "referense"} {
		stderr := wantRefused(t, []string{"simulate", "--trace", spec}, nil, "reference, synthetic:poisson|step|diurnal|onoff,KEY=VALUE,..., or a file", "docs/simulate.md#traces")
		if strings.Count(stderr, "\n") != 1 || len(stderr) > 400 {
			t.Errorf("%s: the catalogue is not one short line:\n%s", spec, stderr)
		}
	}
}

// TestSimulateWindowOutsideTrace: a --window that starts past the trace's
// end, or holds no request, is refused before any replay, naming the span.
// The reference trace spans 1500 s (pkg/trace.ReferenceShape) and is silent
// from 960 s to 1320 s.
func TestSimulateWindowOutsideTrace(t *testing.T) {
	code, _, stderr := runIn(t, nil, "simulate", "--window", "2h:3h", "--policy", "fixed:1")
	want := "infscale: --window 2h:3h: starts at 7200 s (2h), at or past the end of the trace: reference spans 1500 s (25m); want a START below that, e.g. --window 0:1500\n"
	if code != exitInvalid || stderr != want {
		t.Errorf("exit %d, stderr\n%q\nwant 2 and\n%q", code, stderr, want)
	}
	// At --rate-scale 2 the trace spans 750 s.
	wantRefused(t, []string{"simulate", "--window", "800:900", "--rate-scale", "2", "--policy", "fixed:1"}, nil,
		"--window 800:900: starts at 800 s (13m20s), at or past the end of the trace: reference x2 spans 750 s (12m30s) at --rate-scale 2")
	wantRefused(t, []string{"simulate", "--window", "1000:1300", "--policy", "fixed:1"}, nil,
		"--window 1000:1300: no request arrives between 1000 s (16m40s) and 1300 s (21m40s) (reference spans 1500 s (25m)); choose a window with traffic")
}

// TestSimulateWindowZeroSpan: a --window on a trace whose requests all
// arrive at one instant (one request, say) is refused saying so; it
// suggested "--window 0:0", itself refused (an end after the start).
func TestSimulateWindowZeroSpan(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"one.csv": "0,10,10\n", "same.csv": "0,10,10\n0,20,20\n"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"simulate", "tune"} {
			stderr := wantRefused(t, []string{cmd, "--trace", p, "--window", "0:10", "-q"}, nil,
				"--window 0:10: every request of "+name+" arrives at second 0 (a span of 0 s): no window can cut it; leave --window out")
			if strings.Contains(stderr, "--window 0:0") {
				t.Errorf("%s %s: suggests the window 0:0, which is refused:\n%s", cmd, name, stderr)
			}
		}
	}
}

// TestSimulateInitialBounds: --initial 0 was read as the flag left out
// (the warm start, a replica or more), so a run asked to start with no
// replica silently started warm; it is refused, as a negative count is,
// naming the flag (the negative one named "initial replicas").
func TestSimulateInitialBounds(t *testing.T) {
	for _, v := range []string{"0", "-1"} {
		wantRefused(t, []string{"simulate", "--initial=" + v, "-p", "fixed:1", "-q"}, nil,
			"infscale: --initial "+v+": want 1 to 10000 replicas ready at second 0; leave the flag out for the warm start")
	}
	if code, _, stderr := runIn(t, nil, "simulate", "--initial", "1", "-p", "fixed:1", "-q"); code != exitOK {
		t.Errorf("--initial 1: exit %d: %s", code, stderr)
	}
}

// TestSimulateSeedIgnored: --seed seeds generated traces only; on a trace
// file, or a synthetic spec with its own seed=, it was ignored without a
// word (ten seeds, ten identical runs), as no other flag is.
func TestSimulateSeedIgnored(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(p, []byte("0,10,10\n30,10,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, []string{"simulate", "--trace", p, "--seed", "2", "-p", "fixed:1", "-q"}, nil,
		"infscale: --seed 2: seeds generated traces (reference, synthetic:...); the trace file "+p+" replays its own rows, so it would be ignored; drop it")
	wantRefused(t, []string{"simulate", "--trace", "synthetic:poisson,duration=1m,seed=3", "--seed", "2", "-p", "fixed:1", "-q"}, nil,
		"infscale: --seed 2: the spec's seed=3 wins; give one of them")
	for _, args := range [][]string{
		{"--seed", "2"}, {"--trace", "synthetic:poisson,duration=1m", "--seed", "2"}, {"--trace", p},
		{"--trace", "synthetic:poisson,duration=1m,seed=3"},
	} {
		if code, _, stderr := runIn(t, nil, append([]string{"simulate", "-p", "fixed:1", "-q"}, args...)...); code != exitOK {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}

// TestGeneratedTraceEmpty: a synthetic spec that draws no request is
// refused once, naming --trace, as an empty file is; with optimal among
// the policies a second line "policy optimal: trace has no requests"
// followed (without infscale's prefix), and with optimal alone it was the
// only line, naming neither the flag nor the trace.
func TestGeneratedTraceEmpty(t *testing.T) {
	spec := "synthetic:step,low=0,high=0"
	want := "infscale: --trace: " + spec + ": trace has no requests\n"
	for _, args := range [][]string{
		{"simulate", "--trace", spec, "-q"},
		{"simulate", "--trace", spec, "-p", "optimal", "-q"},
		{"simulate", "--trace", spec, "-p", "fixed:1", "-q"},
		{"tune", "--trace", spec, "-q"},
	} {
		if code, _, stderr := runIn(t, nil, args...); code != exitInvalid || stderr != want {
			t.Errorf("%v: exit %d, stderr\n%q\nwant 2 and\n%q", args, code, stderr, want)
		}
	}
}

// TestNoCommand: infscale alone prints the whole usage, every command
// with its help line, and says to choose one (exit 2).
func TestNoCommand(t *testing.T) {
	stderr := wantRefused(t, nil, nil, "Usage: infscale <command>", "infscale: no command given: choose one of the commands above")
	cmds := reflect.TypeFor[CLI]()
	for i := range cmds.NumField() {
		f := cmds.Field(i)
		if _, ok := f.Tag.Lookup("cmd"); !ok {
			continue
		}
		name := f.Tag.Get("name")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if !strings.Contains(stderr, "  "+name) {
			t.Errorf("the usage lacks the command %s:\n%s", name, stderr)
		}
	}
	if strings.Contains(stderr, `"..."`) {
		t.Errorf("the usage is cut:\n%s", stderr)
	}
}

// TestPolicySpaces: spaces around a policy string's separators are not
// part of it: "queue:24, lookahead=90" is queue:24,lookahead=90.
func TestPolicySpaces(t *testing.T) {
	for in, want := range map[string]string{
		"queue:24, lookahead=90":           "queue:24,lookahead=90",
		" queue : 24 ,lookahead = 90 ":     "queue:24,lookahead=90",
		"hpa( queue:24 ), tolerance = 0.1": "hpa(queue:24),tolerance=0.1",
		"queue:2 4":                        "queue:2 4", // inside a value: the parser's to refuse
	} {
		if got := policySpec(in); got != want {
			t.Errorf("policySpec(%q) = %q, want %q", in, got, want)
		}
	}
	code, stdout, stderr := runIn(t, nil, "simulate", "--trace", "synthetic:poisson,rate=1,duration=5m", "--policy", "queue:24, lookahead=90", "-q")
	if code != exitOK || !strings.Contains(stdout, "queue:24,lookahead=90 ") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestFittedHelp: --fitted's help names each term replica.Fitted() sets
// (a non-zero field of replica.FittedH100) and none it leaves at zero.
func TestFittedHelp(t *testing.T) {
	f, ok := reflect.TypeFor[ReplicaFlags]().FieldByName("Fitted")
	if !ok {
		t.Fatal("no Fitted flag")
	}
	help := f.Tag.Get("help")
	phrases := map[string]string{
		"BandwidthEfficiency":   "weight read efficiency",
		"KVBandwidthEfficiency": "KV-cache read efficiency",
		"MFU":                   "MFU",
		"ExpertMFU":             "expert MFU",
		"OutputLagSteps":        "output lag",
		"StepOverhead":          "step overhead",
		"SequenceStepCost":      "cost per running sequence",
		"LayerStepCost":         "cost per layer",
		"SequenceLayerCost":     "cost per sequence per layer",
		"KVHeadCost":            "cost per attention block",
		"AllReduceLatency":      "all-reduce latency",
		"RequestOverhead":       "per-request overhead",
	}
	v := reflect.ValueOf(replica.FittedH100)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		phrase, ok := phrases[name]
		if !ok {
			t.Errorf("FitTerms.%s has no phrase here: add one and say it in --fitted's help", name)
			continue
		}
		if set := !v.Field(i).IsZero(); set != strings.Contains(help, phrase) {
			t.Errorf("FitTerms.%s (%v): --fitted's help says %q: %v, want %v", name, v.Field(i), phrase, !set, set)
		}
	}
}

// TestFileFlags: a file flag whose file is missing, empty or a directory
// names the flag and the path once, not Go's "open PATH: no such file or
// directory".
func TestFileFlags(t *testing.T) {
	dir := t.TempDir()
	missing, empty := filepath.Join(dir, "nope"), filepath.Join(dir, "empty.yaml")
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"decide", "--queue", "4", "--behavior", missing}, "infscale: --behavior " + missing + ": no such file\n"},
		{[]string{"decide", "--queue", "4", "--behavior", empty}, "infscale: --behavior " + empty + ": the file is empty: want an autoscaling/v2 HorizontalPodAutoscalerBehavior YAML (scaleUp:, scaleDown:), or leave the flag out for the HPA's defaults\n"},
		{[]string{"gpu", "--model-config", missing}, "infscale: --model-config: " + missing + ": no such file\n"},
		{[]string{"gpu", "--calibration", missing}, "infscale: --calibration: " + missing + ": no such file (write one with infscale load --calibrate or backtest --calibrate)\n"},
		{[]string{"accuracy", "--ground-truth", missing}, "infscale: --ground-truth " + missing + ": no such file\n"},
		{[]string{"accuracy", "--ground-truth", dir}, "infscale: --ground-truth " + dir + ": is a directory; want a file\n"},
		{[]string{"fleet", "--listen", "bad"}, `infscale: --listen "bad": must be host:port (e.g. 0.0.0.0:9105)`},
	} {
		code, _, stderr := runIn(t, nil, c.args...)
		if code != exitInvalid || !strings.HasPrefix(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr\n%q\nwant 2 and\n%q", c.args, code, stderr, c.want)
		}
	}
}

// TestWholePercentFlags: --up-percent and --down-percent read 50 and 50%
// alike, as the HPA's Percent policy's 50.
func TestWholePercentFlags(t *testing.T) {
	for _, v := range []string{"50", "50%"} {
		// 4 replicas, queue 40 at target 4 wants 10; at most 50% of 4 =
		// 2 more per period: 6.
		d := decideOK(t, "--current", "4", "--queue", "40", "--up-percent", v)
		wantDecision(t, d, 6, "ScaleUpLimit")
	}
	wantRefused(t, []string{"decide", "--queue", "4", "--up-percent", "1.5%"}, nil, `--up-percent: "1.5%" is not a whole percentage: want an integer of percent, with or without %, e.g. 50 or 50%`)
}

// TestPDBounds: --pd's rate and lengths are bounded as load's (1e300
// requests/s printed a 300-digit pair).
func TestPDBounds(t *testing.T) {
	for _, pd := range []string{"1e300,2000,200", "10,2000,2000000", "NaN,2000,200"} {
		wantRefused(t, []string{"gpu", "--pd", pd}, nil, `--pd: "`+pd+`" is invalid (allowed: RATE,PROMPT,OUTPUT: requests/s > 0 and at most 1e+06, whole tokens 1 to 1048576`)
	}
}
