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

// decideJSON is what `decide --output json` prints (the keys the issue requires).
type decideJSON struct {
	Desired int    `json:"desired"`
	Current int    `json:"current"`
	Reason  string `json:"reason"`
	Raw     map[string]struct {
		Value    *float64 `json:"value"`
		Target   float64  `json:"target"`
		Ratio    *float64 `json:"ratio"`
		Replicas *int     `json:"replicas"`
		Valid    bool     `json:"valid"`
	} `json:"raw"`
	Steps []struct {
		Stage  string `json:"stage"`
		Reason string `json:"reason"`
		Value  int    `json:"value"`
		Text   string `json:"text"`
	} `json:"steps"`
}

func runDecide(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"decide"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func decideOK(t *testing.T, args ...string) decideJSON {
	t.Helper()
	code, out, errs := runDecide(t, append(args, "--output", "json")...)
	if code != exitOK {
		t.Fatalf("decide %v: exit %d, stderr %s", args, code, errs)
	}
	var d decideJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("decide %v: %v\n%s", args, err, out)
	}
	return d
}

func wantDecision(t *testing.T, d decideJSON, desired int, reason string) {
	t.Helper()
	if d.Desired != desired || d.Reason != reason {
		t.Errorf("got %d (%s), want %d (%s); steps %+v", d.Desired, d.Reason, desired, reason, d.Steps)
	}
}

// A vLLM page with running 2, waiting 10, --target 4 --max 3 from 1 → 3.
func TestDecideCLIPage(t *testing.T) {
	d := decideOK(t, "testdata/vllm-running2-waiting10.prom", "--target", "4", "--max", "3", "--current", "1")
	wantDecision(t, d, 3, "DesiredWithinRange")
	if q := d.Raw["queue"]; q.Value == nil || *q.Value != 12 || q.Target != 4 || q.Replicas == nil || *q.Replicas != 3 || d.Steps[0].Value != 3 {
		t.Errorf("raw %+v, steps %+v: want queue 12 / target 4 = 3", q, d.Steps)
	}
	// Text output explains the same.
	code, out, _ := runDecide(t, "testdata/vllm-running2-waiting10.prom", "--target", "4", "--max", "3")
	if code != exitOK || !strings.Contains(out, "desired 3 (reason DesiredWithinRange)") || !strings.Contains(out, "queue 12 / target 4 per replica = 3") {
		t.Errorf("text output (exit %d):\n%s", code, out)
	}
}

// --current 0 --held 5 --min 0 --target 4 → 2; cpu with --min 0 → exit 2.
func TestDecideCLIActivateAndCPUFromZero(t *testing.T) {
	wantDecision(t, decideOK(t, "--current", "0", "--held", "5", "--min", "0", "--target", "4"), 2, "activate")

	code, _, errs := runDecide(t, "--metric", "cpu", "--min", "0", "--target", "60")
	if code != exitInvalid || !strings.Contains(errs, "cpu cannot scale from zero") {
		t.Errorf("exit %d, stderr %q; want 2 explaining cpu cannot scale from zero", code, errs)
	}
}

// Tolerance on 10 replicas, target 4: 41 → 10, 44 → 10, 45 → 12.
func TestDecideCLITolerance(t *testing.T) {
	for _, tc := range []struct {
		total, desired string
		want           int
	}{{"41", "", 10}, {"44", "", 10}, {"45", "", 12}} {
		d := decideOK(t, "--current", "10", "--queue", tc.total, "--target", "4", "--max", "20")
		if d.Desired != tc.want {
			t.Errorf("total %s: got %d, want %d", tc.total, d.Desired, tc.want)
		}
	}
}

// From 8 replicas with raw 2 and no down window.
func TestDecideCLIRateLimits(t *testing.T) {
	base := []string{"--current", "8", "--queue", "8", "--target", "4", "--down-window", "0s"}
	for _, tc := range []struct {
		name  string
		flags []string
		want  int
	}{
		{"1 pod", []string{"--down-pods", "1"}, 7},                                                    // 8 − 1
		{"50%", []string{"--down-percent", "50"}, 4},                                                  // trunc(8 × 0.5)
		{"both Max", []string{"--down-pods", "1", "--down-percent", "50"}, 4},                         // min(7, 4)
		{"both Min", []string{"--down-pods", "1", "--down-percent", "50", "--down-select", "Min"}, 7}, // max(7, 4)
		{"Disabled", []string{"--down-pods", "1", "--down-percent", "50", "--down-select", "Disabled"}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideOK(t, append(append([]string{}, base...), tc.flags...)...)
			if d.Desired != tc.want {
				t.Errorf("got %d (%s), want %d", d.Desired, d.Reason, tc.want)
			}
		})
	}
}

// The same through an HPA behavior file; a flag may not set the same field.
func TestDecideCLIBehaviorFile(t *testing.T) {
	// behavior: scaleDown window 0, Pods 1 per 15 s → 8 − 1 = 7.
	d := decideOK(t, "--current", "8", "--queue", "8", "--target", "4", "--behavior", "testdata/behavior-down-1pod.yaml")
	wantDecision(t, d, 7, "ScaleDownLimit")

	code, _, errs := runDecide(t, "--current", "8", "--queue", "8", "--behavior", "testdata/behavior-down-1pod.yaml", "--down-window", "60s")
	if code != exitInvalid || !strings.Contains(errs, "--down-window") || !strings.Contains(errs, "stabilizationWindowSeconds") {
		t.Errorf("flag and file both set: exit %d, %q", code, errs)
	}
	code, _, errs = runDecide(t, "--queue", "8", "--behavior", "testdata/behavior-bad-key.yaml")
	if code != exitInvalid || !strings.Contains(errs, "testdata/behavior-bad-key.yaml:6:") || !strings.Contains(errs, "periodSecs") {
		t.Errorf("unknown key: exit %d, %q; want file:line naming periodSecs", code, errs)
	}
}

// Time script with --state: 12 at t=1000 from 1 → 3; 4 at t=1015 → 3
// (stabilized); t=1290 → 3; t=1305 → 1. --current is left out after the
// first call: it defaults to the previous desired in the state.
func TestDecideCLIStateTimeScript(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	wantDecision(t, decideOK(t, "--state", state, "--now", "1000", "--current", "1", "--queue", "12"), 3, "DesiredWithinRange")
	wantDecision(t, decideOK(t, "--state", state, "--now", "1015", "--queue", "4"), 3, "ScaleDownStabilized")
	wantDecision(t, decideOK(t, "--state", state, "--now", "1290", "--queue", "4"), 3, "ScaleDownStabilized")
	wantDecision(t, decideOK(t, "--state", state, "--now", "1970-01-01T00:21:45Z", "--queue", "4"), 1, "DesiredWithinRange") // 1305

	data, err := os.ReadFile(state)
	if err != nil || !strings.Contains(string(data), `"recommendations"`) {
		t.Fatalf("state file: %v\n%s", err, data)
	}
	// A corrupt state file is invalid input naming the file and line.
	os.WriteFile(state, []byte("{\n  \"recommendations\": [1,\n"), 0o644)
	code, _, errs := runDecide(t, "--state", state, "--queue", "4")
	if code != exitInvalid || !strings.Contains(errs, state) || !strings.Contains(errs, "line ") {
		t.Errorf("corrupt state: exit %d, %q", code, errs)
	}
}

// Scale to zero, cooldown 120 s, fresh state, idle page: t=2000 → 1; t=2125 → 0.
func TestDecideCLIScaleToZero(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	args := []string{"testdata/vllm-idle.prom", "--min", "0", "--held", "0", "--zero-cooldown", "120s", "--state", state}
	wantDecision(t, decideOK(t, append(args, "--now", "2000")...), 1, "cooldown")
	wantDecision(t, decideOK(t, append(args, "--now", "2125")...), 0, "idle-to-zero")
}

// At 0 from --state (the previous desired; no --current, no page) the
// signals servers report are dropped with a warning naming them and --held,
// not refused: a cron job passing --queue every run keeps running across a
// scale to zero. The held count still decides: 3 held, target 4 → 1.
func TestDecideCLIZeroFromStateWarns(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	args := []string{"--min", "0", "--zero-cooldown", "120s", "--state", state}
	wantDecision(t, decideOK(t, append(args, "--current", "1", "--queue", "0", "--held", "0", "--now", "2000")...), 1, "cooldown")
	wantDecision(t, decideOK(t, append(args, "--current", "1", "--queue", "0", "--held", "0", "--now", "2125")...), 0, "idle-to-zero")
	code, out, errs := runDecide(t, append(args, "--queue", "20", "--kv", "0.5", "--held", "3", "--now", "2140", "--output", "json")...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, w := range []string{"warning: --queue 20, --kv 0.5 not used", "previous desired in --state", "--held N", "--current N"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr %q, want %q", errs, w)
		}
	}
	var d decideJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	wantDecision(t, d, 1, "activate")
	// --unready at 0 from the state names where the 0 came from, not a
	// --current that was not given (the state is at 1 now: activated above).
	zero := filepath.Join(t.TempDir(), "zero.json")
	za := []string{"--min", "0", "--zero-cooldown", "120s", "--state", zero}
	decideOK(t, append(za, "--current", "1", "--queue", "0", "--held", "0", "--now", "2000")...)
	wantDecision(t, decideOK(t, append(za, "--current", "1", "--queue", "0", "--held", "0", "--now", "2125")...), 0, "idle-to-zero")
	if code, _, errs := runDecide(t, append(za, "--held", "2", "--unready", "1", "--now", "2140")...); code != exitInvalid ||
		!strings.Contains(errs, "--unready 1: want 0..0, the current count (the previous desired in --state); give --current N") {
		t.Errorf("--unready 1 at 0 from --state: exit %d, %q", code, errs)
	}
	// A count given by --current is not dropped: no warning at 1.
	if _, _, errs := runDecide(t, append(args, "--queue", "20", "--now", "2155", "--current", "1")...); strings.Contains(errs, "not used") {
		t.Errorf("at --current 1: %q, want no warning", errs)
	}
}

// --itl and the token rates scale nothing; they are shown: a note line in
// the text output, a note on stderr with --output json (the decision the
// same as without them: queue 10 / 4 → 3).
func TestDecideCLIShownSignals(t *testing.T) {
	code, out, _ := runDecide(t, "--queue", "10", "--itl", "0.05", "--prompt-tokens-rate", "1000", "--generation-tokens-rate", "2500")
	if want := "note: observed ITL 0.05 s, prompt tokens 1000/s, generation tokens 2500/s: shown only, no metric scales on it"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d, %q; want %q", code, out, want)
	}
	code, out, errs := runDecide(t, "--queue", "10", "--itl", "0.05", "--output", "json")
	if want := "infscale: note: observed ITL 0.05 s: shown only"; code != 0 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q; want %q", code, errs, want)
	}
	var d decideJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	wantDecision(t, d, 3, "DesiredWithinRange")
	if _, out, _ := runDecide(t, "--queue", "10"); strings.Contains(out, "shown only") {
		t.Errorf("without them: %q, want no note", out)
	}
}

// A data-parallel vLLM page (two engines): running 3+5, waiting 1+2, kv
// 0.35/0.81 → queue 11, kv 0.81 (the max over engines).
func TestDecideCLIDataParallelPage(t *testing.T) {
	// queue 11 / 4 = 2.75 → 3; kv 0.81 / 0.9 = 0.9 × 1 → within tolerance.
	d := decideOK(t, "testdata/vllm-dp2.prom", "--metric", "queue,kv", "--target", "4,0.9")
	if q := d.Raw["queue"].Value; q == nil || *q != 11 {
		t.Errorf("queue %v, want 11", q)
	}
	if kv := d.Raw["kv"].Value; kv == nil || *kv != 0.81 {
		t.Errorf("kv %v, want 0.81", kv)
	}
	wantDecision(t, d, 3, "DesiredWithinRange")
}

// Invalid input: exit 2 naming the flag and what is allowed.
func TestDecideCLIInvalid(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--metric", "gpu"}, "allowed: queue, waiting, running, kv, cpu, ttft"},
		{[]string{"--metric", "kv"}, "--target: needed for --metric kv"},
		{[]string{"--min", "5", "--max", "2"}, "--min: 5 must be <= max 2"},
		{[]string{"--zero-cooldown", "60s"}, "--zero-cooldown: scale to zero needs min 0"},
		{[]string{"--hold", "0s"}, "--hold: 0s must be > 0"},
		{[]string{"--hold", "182"}, `--hold: "182" has no unit`},
		{[]string{"--ramp-bound", "NaN"}, "--ramp-bound: NaN must be finite and >= 0"},
		{[]string{"--ramp-bound", "0.3"}, "--ramp-bound: 0.3: bounds the demand metric's projection over the lookahead; it needs a demand metric and a lookahead > 0"},
		{[]string{"--ramp-bound", "lots"}, `--ramp-bound: "lots" is not a number`},
		// Go's hex float syntax: strconv reads 0x1p3 as 8.
		{[]string{"--ramp-bound", "0x1p3"}, `--ramp-bound: "0x1p3" is not a number`},
		{[]string{"--metric", "kv", "--target", "0.5", "--kv", "0x1p-1"}, `--kv: "0x1p-1" is not a fraction`},
		{[]string{"--metric", "queue", "--target", "1_0"}, `"1_0" is not a number in decimal digits`},
		{[]string{"--schedule", "0 8 * * 1-5;12h"}, "CRON;DURATION;MIN"},
		{[]string{"--schedule", "0 25 * * *;1h;2"}, "--schedule #1 \"0 25 * * *;1h;2\": cron: \"0 25 * * *\": end of range"},
		{[]string{"--schedule", "0 8 * * *;1h;2;Mars/Olympus"}, "IANA time zone"},
		{[]string{"--now", "yesterday"}, "--now"},
		{[]string{"--kv", "1.5", "--metric", "kv", "--target", "0.8"}, "--kv 1.5"},
		{[]string{"--up-select", "Fastest"}, "allowed: Max, Min, Disabled"},
		{[]string{"testdata/no-such-page.prom"}, "no-such-page.prom"},
		{[]string{"--state", "no-such-dir/state.json"}, "no-such-dir does not exist"},
		// Targets are read as the config file's target: key reads them.
		{[]string{"--metric", "queue,kv", "--target", "24,2s"}, "--target (for --metric kv) 2s: kv target is a number (fraction of the KV cache), not a duration"},
		{[]string{"--metric", "ttft", "--target", "2x"}, `--target (for --metric ttft): invalid value "2x"; want a number (seconds) or a duration such as 2s`},
		{[]string{"--metric", "queue", "--target", "four"}, `--target (for --metric queue): invalid value "four"; want a number (requests per replica)`},
	} {
		code, _, errs := runDecide(t, tc.args...)
		if code != exitInvalid || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// A page on stdin ("-").
func TestDecideCLIStdinPage(t *testing.T) {
	page, err := os.ReadFile("testdata/vllm-running2-waiting10.prom")
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"decide", "-", "--output", "json"}, bytes.NewReader(page), &out, &errb)
	var d decideJSON
	if code != exitOK || json.Unmarshal(out.Bytes(), &d) != nil {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	// queue 12 on 1 replica at the default target 4: ceil(12/4) = 3.
	wantDecision(t, d, 3, "DesiredWithinRange")
}

// Pages are the ready replicas: with --current above the pages the rest
// are missing (held at the target on a scale-down) unless --unready says
// they are starting.
func TestDecideCLIUnready(t *testing.T) {
	// one page: queue 12; current 4, 3 missing: usage 12/4 = 3 > 1, the
	// missing count 0: 12/(4×4) = 0.75 < 1 reverses the direction: keep 4.
	d := decideOK(t, "testdata/vllm-running2-waiting10.prom", "--current", "4")
	wantDecision(t, d, 4, "tolerance")
	// the 3 starting instead: scaling up, unready replicas count at 0, so
	// the same 12/(4×4) = 0.75 reverses the direction: keep 4.
	wantDecision(t, decideOK(t, "testdata/vllm-running2-waiting10.prom", "--current", "4", "--unready", "3"), 4, "tolerance")
	// idle page, current 3, 2 starting: usage 0 < 1, unready left out:
	// ceil(0 × 1) = 0 → min 1.
	wantDecision(t, decideOK(t, "testdata/vllm-idle.prom", "--current", "3", "--unready", "2"), 1, "TooFewReplicas")
	code, _, errs := runDecide(t, "--current", "2", "--unready", "3")
	if code != exitInvalid || !strings.Contains(errs, "--unready 3") {
		t.Errorf("exit %d, %q", code, errs)
	}
}

// An unreachable URL is a runtime failure (exit 1).
func TestDecideCLIUnreachable(t *testing.T) {
	code, _, errs := runDecide(t, "http://127.0.0.1:1/metrics")
	if code != exitRuntime {
		t.Errorf("exit %d, stderr %q; want 1", code, errs)
	}
}

// A schedule window raises the floor (Monday 2026-11-30 07:30 UTC is 08:30
// in Berlin, inside "0 8 * * 1-5" + 12h).
func TestDecideCLISchedule(t *testing.T) {
	args := []string{"--queue", "0", "--schedule", "0 8 * * 1-5;12h;4;Europe/Berlin"}
	wantDecision(t, decideOK(t, append(args, "--now", "2026-11-30T07:30:00Z")...), 4, "schedule")
	// 06:59 UTC is 07:59 in Berlin: before the window; 0/4 → 0, min 1.
	wantDecision(t, decideOK(t, append(args, "--now", "2026-11-30T06:59:00Z")...), 1, "TooFewReplicas")
}

// Bad input found by a tester: each is exit 2 naming the flag and what is
// allowed, never exit 1 or a decision on garbage.
func TestDecideCLIBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		// a directory given as --state is the user's mistake, not a runtime failure.
		{"state dir", []string{"--state", dir, "--queue", "1"}, []string{"--state " + dir, "is a directory"}},
		// 1e12 s is the year 33658, beyond RFC3339's 9999 (the state stores RFC3339).
		{"now 1e12", []string{"--now", "1e12", "--queue", "1", "--state", filepath.Join(dir, "s.json")}, []string{"--now 1e12", "years 1970..9999"}},
		{"now 1e20", []string{"--now", "1e20", "--queue", "1"}, []string{"--now 1e20", "253402300799"}},
		{"now overflow", []string{"--now", "99999999999999999999", "--queue", "1"}, []string{"--now 99999999999999999999", "out of range"}},
		{"now negative", []string{"--now=-5", "--queue", "1"}, []string{"--now -5", "out of range"}},
		{"now Inf", []string{"--now", "Inf", "--queue", "1"}, []string{"--now Inf", "out of range"}},
		{"now year 1", []string{"--now", "0001-01-01T00:00:00Z", "--queue", "1"}, []string{"--now 0001-01-01T00:00:00Z", "1970"}},
		// every signal flag: finite and >= 0 under its own name (kv a fraction).
		// 1000000 h is whole seconds, far past the HPA's limits (the message says which).
		{"down-window 1000000h", []string{"--down-window", "1000000h", "--queue", "1"}, []string{"--down-window 1000000h0m0s (stabilizationWindowSeconds): must be 0s to 1h0m0s"}},
		{"up-period 1000000h", []string{"--up-pods", "2", "--up-period", "1000000h", "--queue", "1"}, []string{"--up-period 1000000h0m0s (periodSeconds): must be 1s to 30m0s"}},
		{"down-window 1.5s", []string{"--down-window", "1.5s", "--queue", "1"}, []string{"--down-window 1.5s: want whole seconds"}},
		{"queue Inf", []string{"--queue", "Inf"}, []string{"--queue +Inf", "finite number >= 0"}},
		{"queue -1", []string{"--queue=-1"}, []string{"--queue -1", "finite number >= 0"}},
		{"running NaN", []string{"--running", "NaN", "--waiting", "1"}, []string{"--running NaN", "finite"}},
		{"waiting -Inf", []string{"--running", "1", "--waiting=-Inf"}, []string{"--waiting -Inf", "finite"}},
		{"held Inf", []string{"--held", "Inf"}, []string{"--held +Inf", "finite"}},
		{"kv NaN", []string{"--kv", "NaN", "--metric", "kv", "--target", "0.8"}, []string{"--kv NaN", "[0, 1]"}},
		{"kv -0.1", []string{"--kv=-0.1", "--metric", "kv", "--target", "0.8"}, []string{"--kv -0.1", "[0, 1]"}},
		{"cpu Inf", []string{"--cpu", "Inf", "--metric", "cpu", "--target", "60"}, []string{"--cpu +Inf", "finite"}},
		{"ttft -1", []string{"--ttft=-1", "--metric", "ttft", "--target", "2"}, []string{"--ttft -1", "finite"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runDecide(t, tc.args...)
			if code != exitInvalid {
				t.Errorf("exit %d, want 2; stdout %q stderr %q", code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q lacks %q", errs, w)
				}
			}
		})
	}
	// The last second of 9999 is allowed (unix 253402300799 = 9999-12-31T23:59:59Z).
	decideOK(t, "--now", "253402300799", "--queue", "1", "--state", filepath.Join(dir, "edge.json"))
}

// A state file with values decide never writes is refused, naming the file,
// line and field (strict: unknown keys too), exit 2; nothing is decided.
func TestDecideCLIStateInvalid(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	for _, tc := range []struct{ doc, want string }{
		{`{"last_desired": -5}`, "line 1:18: last_desired: -5 must be in 0..2147483647"},
		{"{\n \"scale_up_events\": [{\"at\": \"1970-01-01T00:16:40Z\", \"change\": -100}]}", "line 2:"},
		{`{"recommendations": [{"at": "1970-01-01T00:16:40Z", "replicas": -3}]}`, "recommendations[0].replicas: -3"},
		{`{"last_desired": 2, "extra": true}`, `unknown key "extra"`},
		{`{"last_at": "soon"}`, `line 1:13: last_at: "soon" is not an RFC3339 time`}, // "last_at" (9) 2..10, ": " 11..12
		// A decision's history without last_at, the time of the last
		// decision: decide took the state for fresh and the current count
		// for 1 (desired 5 of the 8 the file says run, its hold still read).
		{`{"version": 1, "desired": 8, "current": 8, "state": {"recommendations": [{"at": "1970-01-01T00:16:40Z", "replicas": 8}], "last_desired": 8, "inherited": 8}}`,
			"state.last_at: missing, but the state holds a decision's history (recommendations, last_desired, inherited)"},
		{`{"open_dip": {"at": "1970-01-01T00:16:40Z", "from": 3, "floor": 1}}`, "last_at: missing, but the state holds a decision's history (open_dip)"},
		// A newer infscale's file: what to do said once, decide's way.
		{`{"version": 2, "desired": 1, "state": {}}`, "line 1:13: version: 2: written by a newer infscale (this one reads version 1): run the infscale that wrote it\n(want the JSON infscale decide writes, see docs/recommend.md; delete the file to start fresh)"},
	} {
		if err := os.WriteFile(state, []byte(tc.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runDecide(t, "--state", state, "--queue", "4", "--now", "5000")
		if code != exitInvalid || out != "" || !strings.Contains(errs, state+": ") || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and %q", tc.doc, code, out, errs, tc.want)
		}
		if data, _ := os.ReadFile(state); string(data) != tc.doc {
			t.Errorf("%s: the state file was rewritten", tc.doc)
		}
	}
}

// Pages are running replicas: --current below their number is refused (it
// dropped the pages' requests and decided from zero), and so is --unready
// beyond the replicas without a page. "- -" reads stdin once; --timeout > 0,
// and given only with a URL page; --server only with a page.
func TestDecideCLIPagesInvalid(t *testing.T) {
	page := "testdata/vllm-running2-waiting10.prom"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{page, "--current", "0"}, "--current 0: 1 PAGE(s) were given and each page is a running replica, so --current must be >= 1"},
		{append(pageCopies(t, page, 2), "--current", "1"), "--current must be >= 2"},
		{append(pageCopies(t, page, 2), "--current", "3", "--unready", "2"), "--unready 2: want 0..1"}, // 3 − 2 pages = 1
		{[]string{"-", "-"}, "standard input can be read only once"},
		{[]string{"http://127.0.0.1:1/metrics", "--timeout", "0s"}, "--timeout 0s: want a duration > 0"},
		// The page flags need pages: --timeout a URL (a file is read as
		// it is), --server any page (flags have no server).
		{[]string{page, "--timeout", "5s"}, "--timeout needs a PAGE that is an http(s) URL (it bounds one fetch; a file or - is read as it is) (without it the flag would be ignored)"},
		{[]string{"--queue", "40", "--server", "vllm"}, "--server needs a PAGE (it names the server that wrote the pages; signals given as flags have none) (without it the flag would be ignored)"},
	} {
		code, out, errs := runDecide(t, tc.args...)
		if code != exitInvalid || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errs, tc.want)
		}
	}
	// One page missing and one unreachable URL: invalid input wins (exit 2),
	// both are reported.
	code, _, errs := runDecide(t, "testdata/no-such-page.prom", "http://127.0.0.1:1/metrics", "--timeout", "2s")
	if code != exitInvalid || !strings.Contains(errs, "no-such-page.prom") || !strings.Contains(errs, "127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q; want 2 naming both sources", code, errs)
	}
}

// A schedule that never fires (February 30) is exit 2.
func TestDecideCLIScheduleNeverFires(t *testing.T) {
	code, _, errs := runDecide(t, "--queue", "1", "--schedule", "0 0 30 2 *;1h;3")
	if code != exitInvalid || !strings.Contains(errs, "never fires") {
		t.Errorf("exit %d, stderr %q; want 2 and never fires", code, errs)
	}
}

// An unknown metric recommends nothing: its raw replicas are null in JSON,
// not the current count.
func TestDecideCLIUnknownMetricJSON(t *testing.T) {
	// --kv absent and no page: kv is unknown; queue 8 / 4 = 2 decides.
	d := decideOK(t, "--queue", "8", "--metric", "queue,kv", "--target", "4,0.8", "--current", "1")
	kv, q := d.Raw["kv"], d.Raw["queue"]
	if kv.Valid || kv.Replicas != nil || kv.Value != nil {
		t.Errorf("kv raw %+v, want valid false, replicas and value null", kv)
	}
	if !q.Valid || q.Replicas == nil || *q.Replicas != 2 {
		t.Errorf("queue raw %+v, want replicas 2", q)
	}
	wantDecision(t, d, 2, "DesiredWithinRange")
}

// Behavior values the API server refuses are exit 2 with file:line:col.
func TestDecideCLIBehaviorInvalid(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ yaml, want string }{
		// "  stabilizationWindowSeconds: " is 30 characters.
		{"scaleDown:\n  stabilizationWindowSeconds: 1.5\n", "b.yaml:2:31: behavior.scaleDown.stabilizationWindowSeconds: expected an integer, got 1.5"},
		// "    value: " is 11 characters.
		{"scaleDown:\n  policies:\n  - type: Pods\n    value: -1\n    periodSeconds: 15\n", "b.yaml:4:12: behavior.scaleDown.policies[0].value: -1 must be >= 1"},
	} {
		path := filepath.Join(dir, "b.yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs := runDecide(t, "--queue", "1", "--behavior", path)
		if code != exitInvalid || !strings.Contains(errs, "--behavior: "+dir) || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.yaml, code, errs, tc.want)
		}
	}
}

// --tolerance is a fraction in [0, 1), reported once.
func TestDecideCLIToleranceRange(t *testing.T) {
	for _, v := range []string{"-0.1", "1", "1.5", "NaN"} {
		code, _, errs := runDecide(t, "--queue", "1", "--tolerance="+v)
		if code != exitInvalid || !strings.Contains(errs, "--tolerance: "+v+" must be") || strings.Count(errs, "--tolerance") != 1 {
			t.Errorf("--tolerance %s: exit %d, stderr %q; want 2 and one line", v, code, errs)
		}
	}
	// 0 is allowed: no dead band; queue 5 on 1 at target 4 → ceil(5/4) = 2.
	wantDecision(t, decideOK(t, "--queue", "5", "--tolerance", "0"), 2, "DesiredWithinRange")
}

// Policy flags are checked under their own names: a period without a
// policy, values below 1, windows and periods beyond the HPA's limits.
func TestDecideCLIPolicyFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--up-period", "30s"}, "--up-period 30s: needs --up-pods or --up-percent"},
		{[]string{"--down-period", "60s"}, "--down-period 1m0s: needs --down-pods or --down-percent"},
		{[]string{"--up-pods", "0"}, "--up-pods: 0 must be >= 1"},
		{[]string{"--down-percent=-5"}, "--down-percent: -5 must be >= 1"},
		{[]string{"--up-window", "7200s"}, "--up-window (stabilizationWindowSeconds): 7200 must be in 0..3600"},
		{[]string{"--down-pods", "1", "--down-period", "31m"}, "--down-period (periodSeconds): 1860 must be in 1..1800"},
	} {
		code, _, errs := runDecide(t, append([]string{"--queue", "1"}, tc.args...)...)
		if code != exitInvalid || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
	// --up-period with --up-pods applies: queue 20 / 4 = 5 from 1, Pods 1
	// per 30 s → 1 + 1 = 2.
	wantDecision(t, decideOK(t, "--queue", "20", "--up-pods", "1", "--up-period", "30s"), 2, "ScaleUpLimit")
}

// Time going backwards against the state is exit 2 and leaves the state;
// the same --now again is allowed.
func TestDecideCLITimeBackwards(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	decideOK(t, "--state", state, "--now", "2000", "--queue", "4")
	before, _ := os.ReadFile(state)
	code, out, errs := runDecide(t, "--state", state, "--now", "1000", "--queue", "4")
	if code != exitInvalid || out != "" || !strings.Contains(errs, "--now 1000") || !strings.Contains(errs, "time went backwards") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 explaining time went backwards", code, out, errs)
	}
	if after, _ := os.ReadFile(state); string(after) != string(before) {
		t.Errorf("state rewritten by a refused decision")
	}
	decideOK(t, "--state", state, "--now", "2000", "--queue", "4")
}

// A step that changed nothing carries no reason: queue 20 on 2 at target 4
// → 5; the stabilisation (5 → 5) and the rate limit (limit 6, 5 allowed)
// explain themselves unlabelled; the decision's reason stays metric (text:
// "-" in the 19-wide reason column, then the count "  5").
func TestDecideCLIUnchangedStepsUnlabelled(t *testing.T) {
	d := decideOK(t, "--queue", "20", "--current", "2")
	wantDecision(t, d, 5, "DesiredWithinRange")
	if len(d.Steps) != 3 || d.Steps[0].Stage != "metric" || d.Steps[0].Reason != "DesiredWithinRange" ||
		d.Steps[1].Stage != "stabilization" || d.Steps[1].Reason != "" || d.Steps[1].Value != 5 ||
		d.Steps[2].Stage != "limits" || d.Steps[2].Reason != "" || d.Steps[2].Value != 5 {
		t.Errorf("steps %+v, want metric (DesiredWithinRange) 5, stabilization 5 and limits 5 unlabelled", d.Steps)
	}
	code, out, _ := runDecide(t, "--queue", "20", "--current", "2")
	if code != exitOK || !strings.Contains(out, "  2. -"+strings.Repeat(" ", 21)+"5  stabilisation") || strings.Contains(out, "Stabilized") || strings.Contains(out, "ScaleUpLimit") {
		t.Errorf("text output (exit %d):\n%s", code, out)
	}
}

// Policy errors name the flags: --target per metric, --metric twice, and
// counts beyond max int32.
func TestDecideCLIPolicyErrorsNameFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--target=-1"}, "--target (for --metric queue): -1 must be a finite number > 0"},
		{[]string{"--metric", "queue,kv", "--target", "4,1.5"}, "--target (for --metric kv): 1.5 (150%) must be in (0, 1] (fraction of the KV cache)"},
		{[]string{"--metric", "queue,cpu", "--target", "4,60", "--min", "0"}, "--metric: cpu cannot scale from zero with min 0"},
		{[]string{"--metric", "queue,queue", "--target", "4,4"}, "--metric: queue is listed twice (also entry 1 of --metric); one entry per signal"},
		{[]string{"--target", "1e-320"}, "--target (for --metric queue): 1e-320 is below the smallest normal float64: a target must be in [2.2250738585072014e-308, 1.7976931348623157e+308]"},
		{[]string{"--max", "99999999999"}, "--max: 99999999999 must be <= 2147483647"},
		{[]string{"--current", "99999999999"}, "--current 99999999999: want replicas in 0..2147483647"},
	} {
		code, _, errs := runDecide(t, append([]string{"--queue", "1"}, tc.args...)...)
		if code != exitInvalid || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// Issue 13 item 3: four pages each with running{engine="0"} 2 and
// running{engine="1"} NaN. Each replica's running is unknown (an engine
// reporting NaN is not an engine at 0), so the queue is unknown: no
// metric known, keep 4 (no-data), as Prometheus mode does, where the sum
// over a NaN sample is NaN. Read as 2 per page it was 8 / 4 = 2: 4 → 2.
func TestDecideCLIEngineNaNIsUnknown(t *testing.T) {
	p := pageCopies(t, "testdata/vllm-engine-nan.prom", 4)
	wantDecision(t, decideOK(t, append(p, "--target", "4")...), 4, "no-data")
}

// pageCopies writes n copies of the page file src into a temporary
// directory, replicas with the same page (one file named n times is one
// replica named n times, refused).
func pageCopies(t *testing.T, src string, n int) []string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out []string
	for i := range n {
		f := filepath.Join(dir, fmt.Sprintf("replica-%d.prom", i))
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// The same replica's page named twice would vote twice (running and
// waiting summed twice, two replicas for one): exit 2 naming the repeat,
// for a file by another path and a URL by another spelling, before any
// page is read (the unreachable URL is not fetched).
func TestDecideSamePageTwice(t *testing.T) {
	page := filepath.Join("..", "..", "examples", "pages", "vllm-0.prom")
	for _, pages := range [][]string{
		{page, page},
		{page, filepath.Join("..", "..", "examples", "pages", ".", "vllm-0.prom")},
		{"http://127.0.0.1:1/metrics", "HTTP://127.0.0.1:1/metrics#x"},
	} {
		code, stdout, stderr := runDecide(t, append([]string{"--target", "8"}, pages...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, pages[1]+": invalid page source: the same page as page 1") || strings.Contains(stderr, "connection refused") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 naming the second", pages, code, stdout, stderr)
		}
	}
}

// An empty PAGE (an unset shell variable) is exit 2 naming its position
// before any page is read; it printed ": invalid page source: no such file or
// directory".
func TestDecideEmptyPage(t *testing.T) {
	page := filepath.Join("..", "..", "examples", "pages", "vllm-0.prom")
	code, stdout, stderr := runDecide(t, "--target", "8", page, "", "http://127.0.0.1:1/metrics")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "PAGE 2 is empty") || strings.Contains(stderr, "connection refused") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 naming PAGE 2", code, stdout, stderr)
	}
}

// --target takes a duration for ttft as the config file does: 3 s observed
// against 500ms is ratio 6, 6 replicas from 1 (the HPA's default scale-up
// limit, max(4 pods, 100%) per 15 s, allows 1 + 4 = 5).
func TestDecideCLITargetDuration(t *testing.T) {
	d := decideOK(t, "--ttft", "3", "--metric", "ttft", "--target", "500ms")
	if r := d.Raw["ttft"]; d.Steps[0].Value != 6 || r.Value == nil || *r.Value != 3 || r.Target != 0.5 || r.Ratio == nil || *r.Ratio != 6 {
		t.Errorf("raw %+v, steps %+v, want ttft 3 s / target 0.5 s = ratio 6", r, d.Steps)
	}
	wantDecision(t, d, 5, "ScaleUpLimit")
}

// A page alone has no TTFT quantile: the output says why and what to pass.
func TestDecideCLIPageNoTTFT(t *testing.T) {
	code, out, _ := runDecide(t, "testdata/vllm-running2-waiting10.prom", "--metric", "queue,kv,ttft", "--target", "24,0.7,2s")
	if code != exitOK || !strings.Contains(out, "ttft unknown") ||
		!strings.Contains(out, "note: ttft: one scrape of a page has no TTFT quantile (that is a rate over two scrapes): pass --ttft SECONDS, or use serve") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if code, out, _ := runDecide(t, "testdata/vllm-running2-waiting10.prom", "--metric", "ttft", "--target", "2", "--ttft", "1"); code != exitOK || strings.Contains(out, "note:") {
		t.Errorf("--ttft given: exit %d, a note\n%s", code, out)
	}
}

// Request counts above 10,000 replicas x 2^20 sequences = 10,485,760,000
// (promql.MaxInFlight, the bound serve and backtest read Prometheus by)
// are refused, exit 2 naming the flag: --running 1.7e308 --waiting
// 1.7e308 decided the replica cap (a page with such counts is refused
// too: TestDecideCLIHugeCountPage). At the bound, running and waiting
// 10485760000 each are a queue of 20971520000 / 4 per replica =
// 5242880000 replicas, capped at 2147483647, then from 1 the scaleUp limit
// max(1 + 4, ceil(1 × 2)) = 5. (The library's overflow case:
// pkg/recommend/overflow_test.go.)
func TestDecideCLIOverflowPage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--running", "1.7e308", "--waiting", "1.7e308"}, "--running 1.7e+308: want requests 0 to 10485760000"},
		{[]string{"--queue", "1e20"}, "--queue 1e+20: want requests 0 to 10485760000"},
		{[]string{"--held", "10485760001", "--min", "0", "--current", "0"}, "--held 1.0485760001e+10: want requests 0 to 10485760000"},
	} {
		args, want := c.args, c.want
		code, out, errs := runDecide(t, append(args, "--target", "4")...)
		if code != exitInvalid || out != "" || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, nothing decided, %q", args, code, out, errs, want)
		}
	}
	d := decideOK(t, "--running", "10485760000", "--waiting", "10485760000", "--target", "4", "--current", "1")
	wantDecision(t, d, 5, "ScaleUpLimit")
	if q := d.Raw["queue"]; !q.Valid || q.Replicas == nil || *q.Replicas != 2147483647 || d.Steps[0].Value != 2147483647 {
		t.Errorf("raw %+v, steps %+v: want the queue valid and capped at 2147483647", q, d.Steps)
	}
}

// Pages running 1e308 or 1.7e308 requests are no load a server can hold
// (more than scrape.MaxRequests, a billion, in one series): refused at the
// line, exit 2, no decision (they used to decide the replica cap).
func TestDecideCLIHugeCountPage(t *testing.T) {
	p := pageCopies(t, "testdata/vllm-running1e308.prom", 2)
	for _, tc := range []struct {
		page, want string
	}{
		{"testdata/vllm-overflow.prom", `testdata/vllm-overflow.prom:1: invalid metrics page: {__name__="vllm:num_requests_running", model_name="m"} is 1.7e+308, not a running-request count (allowed: 0 to 1e+09)`},
		{p[0], p[0] + `:1: invalid metrics page: {__name__="vllm:num_requests_running", model_name="m"} is 1e+308, not a running-request count (allowed: 0 to 1e+09)`},
	} {
		code, out, errs := runDecide(t, tc.page, "--target", "4", "--current", "2")
		if code != exitInvalid || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("decide %s: exit %d, stdout %q, stderr %q; want exit 2, nothing decided, %q", tc.page, code, out, errs, tc.want)
		}
	}
}

// TestDecideSignalFlagBounds: a signal flag past the bound the other
// inputs put on the same quantity is refused, exit 2, naming it: a request
// rate above 1e6 a second (load --rate, accuracy's stage_rate_rps), a
// length above 2^20 = 1048576 tokens (load --prompt-tokens, --max-tokens),
// a token rate above their product 1.048576e12, a latency above 1e7 s
// (accuracy's measured milliseconds). --arrival-rate 1e300 decided the
// replica cap; the bounds themselves decide.
func TestDecideSignalFlagBounds(t *testing.T) {
	demand := []string{"--metric", "demand", "--target", "0.8"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"--arrival-rate", "1e300", "--mean-prompt", "100", "--mean-output", "100"}, demand...), "--arrival-rate 1e+300: want requests per second 0 to 1e6"},
		{append([]string{"--arrival-rate", "10", "--mean-prompt", "1048577", "--mean-output", "100"}, demand...), "--mean-prompt 1.048577e+06: want tokens 0 to 1048576"},
		{[]string{"--queue", "3", "--generation-tokens-rate", "1.1e12"}, "--generation-tokens-rate 1.1e+12: want tokens per second 0 to 1.048576e12"},
		{[]string{"--ttft", "1e300", "--metric", "ttft", "--target", "2s"}, "--ttft 1e+300: want seconds 0 to 1e7"},
	} {
		code, out, errs := runDecide(t, c.args...)
		if code != exitInvalid || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, nothing decided, %q", c.args, code, out, errs, c.want)
		}
	}
	if code, _, errs := runDecide(t, append([]string{"--arrival-rate", "1e6", "--mean-prompt", "1048576", "--mean-output", "100"}, demand...)...); code != exitOK {
		t.Errorf("at the bounds: exit %d, %s; want a decision", code, errs)
	}
}

// TestDecidePageNotes: a page that votes but leaves a signal unknown says
// which page and why (the decision only said "running unknown"): an
// engine's NaN (testdata/vllm-engine-nan.prom), a running family declared
// a counter, a page of declared families without samples (counted as a
// missing replica). Queue target 4 over the three pages: running is
// unknown (the NaN, and the counter), so queue is unknown: keep 3
// (no-data).
func TestDecidePageNotes(t *testing.T) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "counter.prom")
	empty := filepath.Join(dir, "empty.prom")
	for f, page := range map[string]string{
		counter: "# TYPE vllm:num_requests_running counter\nvllm:num_requests_running 5\nvllm:num_requests_waiting 3\n",
		empty:   "# HELP vllm:num_requests_running Number of requests.\n# TYPE vllm:num_requests_running gauge\n",
	} {
		if err := os.WriteFile(f, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"testdata/vllm-engine-nan.prom", counter, empty, "--target", "4"}
	wantDecision(t, decideOK(t, args...), 3, "no-data")
	code, out, errs := runDecide(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"  note: testdata/vllm-engine-nan.prom: running has a NaN or infinite sample: this replica's running is unknown, and so is the total over the pages\n",
		"  note: " + counter + ": vllm:num_requests_running is declared a counter, infscale reads it as a gauge: its value is unknown\n",
		"  note: " + empty + ": no running, waiting or KV-cache sample (vllm's families absent, or declared without samples: before the first request?): counted as a missing replica\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, counter+": running has a NaN") {
		t.Errorf("the counter page's running is said twice:\n%s", out)
	}
}

// A --state path that cannot name a file, a symlink loop or one under a
// regular file, is the input's fault: exit 2 naming the path and what to
// give (it was exit 1, "open ...: not a directory", as for an I/O error;
// --trace, --config and --calibration refused both with 2).
func TestDecideCLIStatePathInvalid(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop.json")
	if err := os.Symlink(filepath.Join(dir, "back.json"), loop); err != nil {
		t.Skip(err)
	}
	if err := os.Symlink(loop, filepath.Join(dir, "back.json")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		loop:                          "--state " + loop + ": a loop of symbolic links",
		filepath.Join(file, "x.json"): "--state " + filepath.Join(file, "x.json") + ": " + file + " is a file, not a directory",
	} {
		code, out, errs := runDecide(t, "--state", path, "--queue", "4", "--now", "5000")
		if code != exitInvalid || out != "" || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and %q", path, code, out, errs, want)
		}
	}
}

// Pages of two servers are two workloads' replicas (a workload runs one
// server): vLLM's 25 running + sglang's 12 running were summed into one
// decision (13 replicas asked for at queue 4). Exit 2 naming the page and
// both servers, whichever order; --server names one server, so the other's
// page is refused by the profile as before.
func TestDecidePagesOfTwoServers(t *testing.T) {
	vllm := filepath.Join("..", "..", "examples", "pages", "vllm-0.prom")
	sglang := filepath.Join("..", "..", "examples", "pages", "sglang.prom")
	for _, tc := range []struct {
		pages []string
		want  string
	}{
		{[]string{vllm, sglang}, sglang + ": invalid metrics page: the page is sglang's, page 1 (" + vllm + ") vllm's"},
		{[]string{sglang, vllm}, vllm + ": invalid metrics page: the page is vllm's, page 1 (" + sglang + ") sglang's"},
	} {
		code, stdout, stderr := runDecide(t, tc.pages...)
		if code != exitInvalid || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", tc.pages, code, stdout, stderr, tc.want)
		}
	}
	// Two vLLM replicas are one workload: decided.
	if code, _, stderr := runDecide(t, vllm, filepath.Join("..", "..", "examples", "pages", "vllm-1.prom")); code != exitOK {
		t.Errorf("two vllm pages: exit %d, stderr %q; want 0", code, stderr)
	}
}

// A signal flag only its own metric reads (--ttft, --queue-time, --kv,
// --cpu) given without that metric in --metric is not used: decide says
// so, where the decision on queue 3 (1 replica) alone read as if TTFT 9 s
// and a full KV cache had been weighed. With its metric it is used, no note.
func TestDecideSignalFlagWithoutItsMetric(t *testing.T) {
	code, out, errs := runDecide(t, "--queue", "3", "--ttft", "9", "--kv", "0.99", "--queue-time", "5", "--cpu", "90")
	for _, want := range []string{
		"desired 1 (reason DesiredWithinRange)",
		"note: --kv 0.99, --cpu 90, --ttft 9, --queue-time 5: not used, no --metric scales on kv, cpu, ttft or queuewait (add it to --metric, with its --target)",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("exit %d, stdout %q, stderr %q; want %q", code, out, errs, want)
		}
	}
	code, out, errs = runDecide(t, "--queue", "3", "--ttft", "9", "--metric", "queue,ttft", "--target", "4,2s")
	if code != exitOK || strings.Contains(out, "not used") || !strings.Contains(out, "ttft 9s / target 2s") {
		t.Errorf("with --metric ttft: exit %d, stdout %q, stderr %q; want ttft used, no note", code, out, errs)
	}
}
