package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/fleet"
	"github.com/infscale/infscale/pkg/load"
)

func runLoad(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), append([]string{"load"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestLoadInvalid(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"http://10.1.2.3:8000", "--concurrency", "1"}, "10.1.2.3 is not a loopback address (pass --allow-remote"},
		{[]string{"http://127.0.0.1:1"}, "give exactly one of --concurrency, --rate or --trace"},
		// Flags of another mode are refused, not ignored.
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--ramp-up", "10s"}, "--ramp-up needs --concurrency"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1,2", "--calibrate-fit-max", "8"}, "--calibrate-fit-max needs --calibrate"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1,2", "--calibrate-prompt-tokens", "1024"}, "--calibrate-prompt-tokens needs --calibrate"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1,2", "--calibrate", "x.json", "--calibrate-prompt-tokens", "1024,0"}, `--calibrate-prompt-tokens: item 2 "0": want a prompt length from 1 to 1048576`},
		// Checked up front (it failed every request, exit 1, "unsupported protocol scheme").
		{[]string{"ftp://x", "--allow-remote", "--concurrency", "1"}, `URL "ftp://x": want http://HOST[:PORT][/PATH] or https://...`},
		{[]string{"not a url", "--allow-remote", "--concurrency", "1"}, `URL "not a url": want http://HOST[:PORT][/PATH]`},
		{[]string{"http://127.0.0.1:65536", "--allow-remote", "--concurrency", "1"}, `URL "http://127.0.0.1:65536": port 65536: want 1 to 65535`},
		{[]string{"http://127.0.0.1:1?x=1", "--concurrency", "1"}, `URL "http://127.0.0.1:1?x=1": want a base URL without a query or fragment`},
		{[]string{"http://127.0.0.1:1#f", "--concurrency", "1"}, `URL "http://127.0.0.1:1#f": want a base URL without a query or fragment`},
		// An endpoint's URL pasted whole: /v1/models was appended to it
		// ("GET .../v1/completions/v1/models: connection refused (give
		// --served-model-name)").
		{[]string{"http://127.0.0.1:1/v1/completions", "--concurrency", "1"}, `URL "http://127.0.0.1:1/v1/completions": want the server's base URL, without the API path (e.g. http://127.0.0.1:8000`},
		{[]string{"http://127.0.0.1:1/v1/", "--concurrency", "1"}, `URL "http://127.0.0.1:1/v1/": want the server's base URL, without the API path`},
		{[]string{"http://127.0.0.1:1/llm/v1/chat/completions", "--concurrency", "1"}, `URL "http://127.0.0.1:1/llm/v1/chat/completions": want the server's base URL`},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1", "--rate", "2"}, "give exactly one of"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "4,2"}, "--concurrency: item 2 2: loads must increase"},
		{[]string{"http://127.0.0.1:1", "--rate=-1"}, "--rate: item 1 \"-1\": want a number > 0"},
		// The upper bound is named, not only "> 0".
		{[]string{"http://127.0.0.1:1", "--rate", "1000001"}, "--rate: item 1 \"1000001\": want a number > 0 and <= 1000000"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1000001"}, "--concurrency: item 1 \"1000001\": want an integer from 1 to 1000000"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1", "--max-tokens", "0"}, "--max-tokens 0: want 1 to 1048576"},
		// Each duration flag names itself (all four shared one message).
		{[]string{"http://127.0.0.1:1", "--concurrency", "1", "--timeout", "0s"}, "--timeout 0s: want a duration > 0"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1", "--ramp-up=-1s"}, "--ramp-up -1s: want a duration >= 0"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1", "--slo-ttft=-1s"}, "--slo-ttft -1s: want a duration >= 0 (0: not checked)"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1", "--slo-itl=-1ms"}, "--slo-itl -1ms: want a duration >= 0 (0: not checked)"},
		// 2000000h (228 years) was accepted and ran until interrupted; a
		// week (168h) is every duration flag's bound, and says so.
		{[]string{"http://127.0.0.1:1", "--concurrency", "1", "--duration", "2000000h"}, "--duration 2000000h0m0s: at most 168h0m0s (a week"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1", "--duration", "168h1s"}, "--duration 168h0m1s: at most 168h0m0s (a week"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1", "--ramp-up", "169h"}, "--ramp-up 169h0m0s: at most 168h0m0s"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1", "--timeout", "10000h"}, "--timeout 10000h0m0s: at most 168h0m0s"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1", "--slo-ttft", "200h"}, "--slo-ttft 200h0m0s: at most 168h0m0s"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1", "--slo-itl", "2000000h"}, "--slo-itl 2000000h0m0s: at most 168h0m0s"},
		{[]string{"http://127.0.0.1:1", "--trace", "/nonexistent.csv"}, "--trace:"},
		// vllm bench serve's --max-concurrency bounds the open loop only.
		{[]string{"http://127.0.0.1:1", "--concurrency", "4", "--max-concurrency", "2"}, "--max-concurrency needs --rate or --trace"},
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--max-concurrency", "0"}, "--max-concurrency 0: want 1 to 1000000 requests in flight"},
		// vllm bench serve's --burstiness and --goodput.
		{[]string{"http://127.0.0.1:1", "--concurrency", "1", "--burstiness", "0.5"}, "--burstiness needs --rate"},
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--burstiness", "0"}, "--burstiness 0: want > 0 (1: Poisson arrivals"},
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--burstiness", "nan"}, "--burstiness NaN: want > 0"},
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--goodput", "ttft"}, `--goodput: item 1 "ttft": want key:value`},
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--goodput", "ttft:2s,itl:50"}, `--goodput: item 2 "itl:50": unknown key "itl": want ttft, tpot or e2el`},
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--goodput", "ttft:2s ttft:1s"}, `--goodput: item 2 "ttft:1s": ttft given twice`},
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--goodput", "tpot:-5"}, `--goodput: item 1 "tpot:-5": want milliseconds > 0`},
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--goodput", "e2el:fast"}, `--goodput: item 1 "e2el:fast": want a duration (500ms, 2s) or a number of milliseconds; give e.g. --goodput ttft:2s`},
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--goodput", "e2el:200h"}, `--goodput: item 1 "e2el:200h": want a duration > 0 (vllm bench serve takes 0, which no request meets) and at most a week`},
		// A separator alone was taken as goodput without an SLO (every
		// successful request good, "requests with , per second"); blank,
		// the flag was ignored.
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--goodput", ","}, `--goodput ",": no SLO in it; give e.g. --goodput ttft:2s,tpot:100ms,e2el:30s`},
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--goodput", " "}, `--goodput " ": no SLO in it`},
		// The key is named before the value is read ("want a duration").
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--goodput", "foo:bar"}, `--goodput: item 1 "foo:bar": unknown key "foo": want ttft, tpot or e2el`},
		// 1e400 ms is +Inf: too large, not "want a duration".
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--goodput", "ttft:1e400"}, `--goodput: item 1 "ttft:1e400": want milliseconds > 0 (vllm bench serve takes 0, which no request meets) and at most a week`},
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--goodput", "ttft:0"}, `--goodput: item 1 "ttft:0": want milliseconds > 0`},
		// 1e-7 ms is 0.1 ns, 0 as a duration: said in milliseconds, as
		// given (it said "want a duration").
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--goodput", "ttft:1e-7"}, `--goodput: item 1 "ttft:1e-7": want milliseconds of at least 1e-6 (a nanosecond) and at most a week`},
		// vllm bench serve's form, SLOs as separate arguments: kong's
		// "unexpected argument tpot:50" alone did not say which flag.
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--goodput", "ttft:100", "tpot:50"}, `unexpected argument tpot:50: --goodput takes its SLOs as one value, separated by commas (--goodput ttft:100,tpot:50)`},
		// Checked before any load, as simulate reads it (exit 2, not 1).
		{[]string{"http://127.0.0.1:1", "--trace", "testdata/garbage-trace.csv"}, "--trace: testdata/garbage-trace.csv:2: want 3 fields"},
		// A header alone, or a first arrival past --duration (unix times in
		// a generic CSV, which keeps its first row's), sent 0 requests and
		// exited 0.
		{[]string{"http://127.0.0.1:1", "--trace", "testdata/header-only-trace.csv"}, "--trace: header-only-trace.csv: trace has no requests"},
		{[]string{"http://127.0.0.1:1", "--trace", "testdata/unix-time-trace.csv", "--duration", "10s"}, "--trace unix-time-trace.csv: the first request arrives at second 1.73323e+09, not within --duration 10s, so none would be sent"},
		// Checked before the sweep, not after it.
		{[]string{"http://127.0.0.1:1", "--concurrency", "1,2", "--calibrate", "/nonexistent/x.json"}, "--calibrate /nonexistent/x.json: directory /nonexistent does not exist"},
		{[]string{"http://127.0.0.1:1", "--concurrency", "1,2", "--calibrate", "testdata/garbage-trace.csv/x.json"}, "garbage-trace.csv/x.json: " + absPath(t, filepath.Join("testdata", "garbage-trace.csv")) + " is a file, not a directory"},
	} {
		code, out, errs := runLoad(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errs, tc.want)
		}
	}
}

// TestLoadJSON: a two-point sweep against the fleet prints the interface's
// keys at the top level, in each point, and a knee.
func TestLoadJSON(t *testing.T) {
	f, err := fleet.Start(context.Background(), fleet.Config{Replicas: 1, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	code, out, errs := runLoad(t, f.URL(), "--concurrency", "1,2", "--requests", "4", "--max-tokens", "4", "--prompt-tokens", "16", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	keys := []string{"ttft_p50_s", "ttft_p95_s", "itl_p50_s", "itl_p95_s", "e2e_p50_s", "requests", "errors", "output_tokens_per_s"}
	points, _ := rep["points"].([]any)
	if len(points) != 2 || rep["knee"] == nil {
		t.Fatalf("points %v knee %v", rep["points"], rep["knee"])
	}
	for _, m := range append([]any{rep}, points...) {
		for _, k := range keys {
			if _, ok := m.(map[string]any)[k]; !ok {
				t.Errorf("JSON lacks %s: %v", k, m)
			}
		}
	}
	if rep["requests"].(float64) != 4 || rep["errors"].(float64) != 0 {
		t.Errorf("requests %v errors %v, want 4 and 0", rep["requests"], rep["errors"])
	}
	code, out, _ = runLoad(t, f.URL(), "--concurrency", "1,2", "--requests", "2", "--max-tokens", "2", "--prompt-tokens", "8")
	if code != 0 || !strings.Contains(out, "TTFT p95 ms") || !strings.Contains(out, "no knee up to concurrency 2: every point within") || !strings.Contains(out, "a lower bound: metrics: [{type: queue, target: 2}] or more") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
}

// TestLoadGoodputBurstiness: an open loop with gamma gaps and goodput SLOs
// against the fleet. Every request meets e2el:60s (500 ms of an idle
// replica for 4 tokens), none ttft:1ns; JSON and table say which.
func TestLoadGoodputBurstiness(t *testing.T) {
	f, err := fleet.Start(context.Background(), fleet.Config{Replicas: 1, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	code, out, errs := runLoad(t, f.URL(), "--rate", "50", "--burstiness", "0.5", "--requests", "6", "--max-tokens", "4", "--prompt-tokens", "16",
		"--goodput", "e2el:60000", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Requests   int      `json:"requests"`
		Burstiness *float64 `json:"burstiness"`
		Goodput    *struct {
			SLO          map[string]float64 `json:"slo"`
			Requests     int                `json:"requests"`
			RequestsPerS float64            `json:"requests_per_s"`
		} `json:"goodput"`
		DurationS float64 `json:"duration_s"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 6 || rep.Burstiness == nil || *rep.Burstiness != 0.5 || rep.Goodput == nil || rep.Goodput.Requests != 6 || rep.Goodput.SLO["e2el_s"] != 60 ||
		math.Abs(rep.Goodput.RequestsPerS-6/rep.DurationS) > 1e-9 {
		t.Errorf("%s", out)
	}
	code, out, errs = runLoad(t, f.URL(), "--rate", "50", "--burstiness", "inf", "--requests", "3", "--max-tokens", "2", "--prompt-tokens", "8", "--goodput", "ttft:1ns,tpot:1s")
	if code != 0 || !strings.Contains(out, "goodput req/s") || !strings.Contains(out, "50 req/s, burstiness inf") ||
		!strings.Contains(out, "goodput: requests with TTFT <= 1ns and TPOT <= 1s, per second of the point") || !strings.Contains(out, "0.00") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
	// The progress lines off a terminal label the points as the table
	// does (they said "50 req/s" alone).
	code, out, errs = runLoad(t, f.URL(), "--rate", "50,100", "--burstiness", "4", "--requests", "2", "--max-tokens", "2", "--prompt-tokens", "8")
	for _, want := range []string{"load: 2 points (50 req/s, burstiness 4; 100 req/s, burstiness 4), each up to", "load: 100 req/s, burstiness 4 (2 of 2) started\n"} {
		if code != 0 || !strings.Contains(errs, want) || !strings.Contains(out, "100 req/s, burstiness 4") {
			t.Errorf("exit %d: stderr lacks %q\n%s%s", code, want, out, errs)
		}
	}
}

// TestLoadCalibrate: --calibrate writes a file that gpu --calibration
// reads; without a sweep it is refused.
func TestLoadCalibrate(t *testing.T) {
	if code, _, errs := runLoad(t, "http://127.0.0.1:1", "--concurrency", "4", "--calibrate", "x.json"); code != 2 || !strings.Contains(errs, "--calibrate needs a concurrency sweep") {
		t.Errorf("no sweep: exit %d %s", code, errs)
	}
	f, err := fleet.Start(context.Background(), fleet.Config{Replicas: 1, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	path := t.TempDir() + "/cal.json"
	code, out, errs := runLoad(t, f.URL(), "--concurrency", "1,2,4", "--requests", "6", "--max-tokens", "8", "--prompt-tokens", "64", "--calibrate", path, "--calibrate-fit-max", "2")
	if code != 0 || !strings.Contains(out, "calibration written to "+path) || !strings.Contains(out, "held out") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	// The file records the command as typed: nothing added, nothing left out.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Source string `json:"source"`
		Fit    []struct {
			Batch         int   `json:"batch"`
			ContextTokens int64 `json:"context_tokens"`
		} `json:"fit"`
		KVNote string `json:"kv_note"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	// The fitted points c=1 and c=2 ran at 64-token prompts and again at
	// the default second length, 2 x 64 + 8 / 2 = 132: 64 + 4 = 68 and
	// 132 + 4 = 136 tokens of context a sequence (the fleet counts a word a
	// token), 2x apart.
	var got []int64
	for _, p := range file.Fit {
		got = append(got, p.ContextTokens/int64(p.Batch))
	}
	if want := []int64{68, 68, 136, 136}; !slices.Equal(got, want) || !strings.Contains(file.KVNote, "contexts of 68 to 136 tokens a sequence (2.00x)") {
		t.Errorf("fit contexts per sequence %v, KV note %q; want %v and the 2x named", got, file.KVNote, want)
	}
	if want := "infscale load " + f.URL() + " --concurrency 1,2,4 --requests 6 --max-tokens 8 --prompt-tokens 64 --calibrate " + path + " --calibrate-fit-max 2"; file.Source != want {
		t.Errorf("source %q, want %q", file.Source, want)
	}
	// A length the server cannot serve is refused before any load.
	if code, out, errs := runLoad(t, f.URL(), "--concurrency", "1,2", "--calibrate", path, "--calibrate-prompt-tokens", "8100", "--max-tokens", "128"); code != 2 || out != "" ||
		!strings.Contains(errs, "--calibrate-prompt-tokens 8100: 8100 + --max-tokens 128 = 8228 tokens, above the server's max_model_len 8192") {
		t.Errorf("a prompt beyond max_model_len: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	var gout, gerr bytes.Buffer
	if code := run(t.Context(), []string{"gpu", "--calibration", path}, strings.NewReader(""), &gout, &gerr); code != 0 || !strings.Contains(gout.String(), "decode step") {
		t.Errorf("gpu --calibration: exit %d %s %s", code, gout.String(), gerr.String())
	}
	if code := run(t.Context(), []string{"gpu", "--calibration", path, "--gpu", "a100-80gb"}, strings.NewReader(""), &gout, &gerr); code != 2 || !strings.Contains(gerr.String(), "--calibration: calibration fitted for llama-3-8b on 1 x h100-sxm") {
		t.Errorf("another GPU: exit %d %s", code, gerr.String())
	}
}

// TestLoadAllFailed: every request of the point answered 404 (no such
// model): exit 1 naming the status and the server's message, the table's
// quantiles "-" (not NaN), and the JSON valid with null quantiles.
func TestLoadAllFailed(t *testing.T) {
	f, err := fleet.Start(context.Background(), fleet.Config{Replicas: 1, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	code, out, errs := runLoad(t, f.URL(), "--concurrency", "1", "--requests", "3", "--served-model-name", "nosuch")
	if code != 1 || !strings.Contains(errs, "c=1: all 3 requests failed; the first: 404 Not Found:") || !strings.Contains(errs, "nosuch") {
		t.Errorf("exit %d, stderr %q; want 1, all 3 failed with the 404 and the model", code, errs)
	}
	if strings.Contains(out, "NaN") || !strings.Contains(out, "c=1         0       3            -") {
		t.Errorf("table:\n%s", out)
	}
	code, out, _ = runLoad(t, f.URL(), "--concurrency", "1,2", "--requests", "2", "--served-model-name", "nosuch", "--output", "json")
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	if code != 1 || rep["e2e_p50_s"] != nil || rep["errors"] != 2.0 || rep["requests"] != 0.0 {
		t.Errorf("exit %d, e2e_p50_s %v errors %v requests %v; want 1, null, 2, 0", code, rep["e2e_p50_s"], rep["errors"], rep["requests"])
	}
	if points, _ := rep["points"].([]any); len(points) != 1 {
		t.Errorf("points %v: want the sweep stopped after c=1", rep["points"])
	}
}

// TestPlotLoadMarksSLO: the SLO mark is drawn in every row, also when the
// SLO is above every value (then it sits one column past the 40-column bar
// scale's end). TTFT: SLO 2 s is the scale's top, so 0.5 s is 10 #, 1 s 20
// #, the mark at column 40. ITL: 0.2 s is the top, 0.01 s is 2 #, the SLO
// 0.1 s at column 20, inside the 40 # of 0.2 s.
func TestPlotLoadMarksSLO(t *testing.T) {
	pt := func(c int, ttft, itl float64) load.Summary {
		return load.Summary{Concurrency: c, Requests: 1, TTFTP95: load.Float(ttft), ITLP95: load.Float(itl)}
	}
	rep := load.Report{Points: []load.Summary{pt(1, 0.5, 0.01), pt(2, 1, 0.2)}, Knee: &load.Knee{SLO: load.SLO{TTFTP95: 2, ITLP95: 0.1}}}
	var b bytes.Buffer
	plotLoad(&b, rep)
	want := []string{
		"TTFT p95 (| marks the SLO 2s)",
		"         c=1 " + strings.Repeat("#", 10) + strings.Repeat(" ", 30) + "| 0.500s",
		"         c=2 " + strings.Repeat("#", 20) + strings.Repeat(" ", 20) + "| 1.000s",
		"ITL p95 (| marks the SLO 0.1s)",
		"         c=1 ##" + strings.Repeat(" ", 18) + "|" + strings.Repeat(" ", 20) + " 0.010s",
		"         c=2 " + strings.Repeat("#", 20) + "|" + strings.Repeat("#", 19) + "  0.200s",
	}
	if got := strings.Split(strings.TrimRight(b.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCommandLine: arguments a shell would split or expand are quoted so
// that the line reads back as the same arguments.
func TestCommandLine(t *testing.T) {
	got := commandLine([]string{"load", "http://127.0.0.1:8000", "--duration", "5s", "--selector", `{namespace="llm"}`, "it's", "", "a b"})
	want := `infscale load http://127.0.0.1:8000 --duration 5s --selector '{namespace="llm"}' 'it'\''s' '' 'a b'`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestLoadSweepProgressOffTerminal: a sweep whose stderr is not a terminal
// (here a buffer) says what it will run and a line per point, so that
// load --calibrate's minutes are not silent in a log; --progress never
// says nothing. By hand: points c=1 and c=2 of 2 requests each, all served.
func TestLoadSweepProgressOffTerminal(t *testing.T) {
	f, err := fleet.Start(context.Background(), fleet.Config{Replicas: 1, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	args := []string{f.URL(), "--concurrency", "1,2", "--requests", "2", "--max-tokens", "4", "--prompt-tokens", "8", "--slo-ttft", "0", "--slo-itl", "0"}
	code, out, errs := runLoad(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"load: 2 points (c=1, c=2), each up to 1m0s or 2 requests, whichever comes first\n",
		"load: c=1 (1 of 2) started\n",
		"load: c=1 (1 of 2) done in ",
		"s: 2 requests, 0 errors\nload: c=2 (2 of 2) started\n",
		"load: c=2 (2 of 2) done in ",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "\r") {
		t.Errorf("stderr has a terminal's redraws off a terminal: %q", errs)
	}
	if code, _, errs := runLoad(t, append(args, "--progress", "never")...); code != 0 || errs != "" {
		t.Errorf("--progress never: exit %d, stderr %q; want 0 and nothing", code, errs)
	}
}

// TestLoadHelpCostOfCalibration: load --help says what a calibration
// costs.
func TestLoadHelpCostOfCalibration(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"load", "--help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("load --help: exit %d %s", code, errb.String())
	}
	if load := strings.Join(strings.Fields(out.String()), " "); !strings.Contains(load, "--duration 60s or --requests 1000") {
		t.Errorf("load --help does not say what a point of the sweep costs:\n%s", load)
	}
}

// TestLoadNoKneeSaysErrors: a server answering every request 500 leaves no
// knee because each point has errors, not because a latency missed the SLO
// (there is no latency to miss): the line says the 2 failed requests.
func TestLoadNoKneeSaysErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
	}))
	defer srv.Close()
	code, out, errs := runLoad(t, srv.URL, "--concurrency", "1,2", "--requests", "2", "--served-model-name", "m", "--progress", "never")
	if code != 1 || !strings.Contains(out, "no knee: the lowest load already has 2 failed request(s)") || strings.Contains(out, "already misses") {
		t.Errorf("exit %d, stdout:\n%s\nstderr %s\nwant 1 and the failed requests named", code, out, errs)
	}
}

// TestLoadSort: an out-of-order trace told load's users to pass --sort,
// which load did not have. Rows at 100 s then 90 s: refused at line 2
// without it; with it the rows are sorted, so the first arrival is 90 s,
// past --duration 10s (the next check, before any request is sent).
// --sort without --trace is refused.
func TestLoadSort(t *testing.T) {
	f := filepath.Join(t.TempDir(), "unsorted.csv")
	if err := os.WriteFile(f, []byte("100,100,10\n90,100,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"http://127.0.0.1:1", "--trace", f, "--duration", "10s"}, "unsorted.csv:2: timestamp 90 s is before the previous row's 100 s"},
		{[]string{"http://127.0.0.1:1", "--trace", f, "--duration", "10s", "--sort"}, "the first request arrives at second 90, not within --duration 10s"},
		{[]string{"http://127.0.0.1:1", "--rate", "1", "--sort"}, "--sort goes with --trace"},
	} {
		code, out, errs := runLoad(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errs, tc.want)
		}
	}
}

// TestParseGoodput: the forms --goodput takes, each SLO worked out by hand
// in seconds: a bare number is milliseconds (vllm bench serve's unit), a
// unit is a Go duration; keys in any case; commas, spaces and empty items
// between pairs.
func TestParseGoodput(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want load.Goodput
	}{
		{"ttft:2", load.Goodput{TTFT: 0.002}},
		{"ttft:2.5s", load.Goodput{TTFT: 2.5}},
		{"TTFT:100, Tpot:50,,e2el:1m", load.Goodput{TTFT: 0.1, TPOT: 0.05, E2E: 60}},
		{"e2el:0.5 tpot:1ns", load.Goodput{E2E: 0.0005, TPOT: 1e-9}},
	} {
		g, err := parseGoodput(tc.in)
		if err != nil || g == nil || *g != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, g, err, tc.want)
		}
	}
	// The line under the table names them as the flags write durations
	// (it said 1h0m0s).
	if got, want := goodputText(load.Goodput{TTFT: 0.3, TPOT: 1e-9, E2E: 3600}), "TTFT <= 300ms and TPOT <= 1ns and e2e <= 1h"; got != want {
		t.Errorf("goodputText: %q, want %q", got, want)
	}
	if g, err := parseGoodput(""); g != nil || err != nil {
		t.Errorf(`"": %+v, %v; want no goodput`, g, err)
	}
}

// TestLoadTableSentLate: a point whose open loop held requests for a slot
// says how many, of how many, and is no knee.
func TestLoadTableSentLate(t *testing.T) {
	from := 0.085
	p := load.Summary{Rate: 8, Burstiness: 1, Requests: 30, SentLate: 12, MaxConcurrency: 4, TTFTP95: 0.1, ITLP95: 0.01, UnsentFromS: &from}
	rep := load.Report{Summary: p, Points: []load.Summary{p}, Knee: &load.Knee{SLO: load.SLO{TTFTP95: 2, ITLP95: 0.1}}}
	var b bytes.Buffer
	writeLoadTable(&b, rep, "")
	for _, want := range []string{"8 req/s: 12 of 30 requests were sent late, held for one of the --max-concurrency 4 slots",
		"8 req/s: the arrivals due from second 0.085 on were not sent before the point's --duration ended", "no knee: the lowest load already sent 12 request(s) late (above)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestGoodputHintOnlyWithGoodput: the hint on a stray "tpot:50" (vllm
// bench serve's separate --goodput arguments) is for a command line that
// gives --goodput; simulate's stray "ttft:100" told the user how to give
// a flag simulate does not have.
func TestGoodputHintOnlyWithGoodput(t *testing.T) {
	for _, args := range [][]string{{"simulate", "ttft:100"}, {"load", "http://127.0.0.1:1", "--rate", "1", "e2el:5"}} {
		stderr := wantRefused(t, args, nil, "unexpected argument "+args[len(args)-1])
		if strings.Contains(stderr, "--goodput") {
			t.Errorf("%v: the error names --goodput, which was not given:\n%s", args, stderr)
		}
	}
	wantRefused(t, []string{"load", "http://127.0.0.1:1", "--rate", "1", "--goodput=ttft:100", "tpot:50"}, nil,
		"unexpected argument tpot:50: --goodput takes its SLOs as one value")
}

// A sweep of one-token answers (--max-tokens 1, a TTFT-only sweep, or a
// server that sends the whole answer in one chunk) has no inter-token
// interval: ITL p95 is unknown, which no --slo-itl is met by. The no-knee
// line says so and what to give, not that the point "misses" an ITL it
// does not have (TTFT well within 2 s).
func TestLoadNoITLSaysWhy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	code, out, errs := runLoad(t, srv.URL, "--concurrency", "1,2", "--requests", "2", "--max-tokens", "1", "--served-model-name", "m", "--progress", "never")
	want := "no knee: the lowest load has no ITL p95 for --slo-itl 0.1s to check (no request streamed 2 or more text chunks, as with --max-tokens 1); give --slo-itl 0 to find the knee on TTFT p95 alone"
	if code != 0 || !strings.Contains(out, want) || strings.Contains(out, "already misses") {
		t.Errorf("exit %d, stdout:\n%s%s\nwant 0 and %q", code, out, errs, want)
	}
}

// An open-loop point whose first arrival falls after --duration sends
// nothing (at 0.001 req/s the mean gap is 1000 s; --duration 1s). The
// output says so and what to give, not that the point "misses" the SLO:
// it measured nothing. It read "no knee: the lowest load already misses
// TTFT p95 <= 2s and ITL p95 <= 0.1s".
func TestLoadNothingSentSaysWhy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request was sent: %s", r.URL)
	}))
	defer srv.Close()
	code, out, errs := runLoad(t, srv.URL, "--rate", "0.001,0.002", "--duration", "1s", "--served-model-name", "m", "--progress", "never")
	for _, want := range []string{
		"0.001 req/s: no request was sent: no arrival of its schedule fell within --duration (the mean gap at 0.001 req/s is 16m40s); give a longer --duration",
		"no knee: the lowest load sent no request (above)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s%s", want, out, errs)
		}
	}
	if code != 0 || strings.Contains(out, "already misses") {
		t.Errorf("exit %d, stdout:\n%s", code, out)
	}
}

// TestLoadTraceTokenFlags: a trace replays its own prompt and output
// lengths, so --prompt-tokens and --max-tokens beside --trace would be
// ignored (a row's 44 output tokens were generated under --max-tokens 4):
// refused, as the other flags a run would ignore.
func TestLoadTraceTokenFlags(t *testing.T) {
	f := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(f, []byte("0,100,44\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--max-tokens", "--prompt-tokens"} {
		code, out, errs := runLoad(t, "http://127.0.0.1:1", "--trace", f, flag, "4")
		if want := flag + " goes with --concurrency or --rate (a trace replays its own token counts)"; code != 2 || out != "" || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and %q", flag, code, out, errs, want)
		}
	}
}

func absPath(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestLoadSweepAnnouncesOnlyPointsThatRun: a sweep ends after a point that
// misses the SLO, so the next point is not announced off a terminal. Against
// a server refusing every request (401), c=1 fails wholly and c=2 never
// runs; stderr said "load: c=2 (2 of 2) started" and nothing after it.
func TestLoadSweepAnnouncesOnlyPointsThatRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":"Unauthorized"}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	code, _, errs := runLoad(t, srv.URL, "--concurrency", "1,2", "--requests", "2", "--served-model-name", "m", "--max-tokens", "4", "--prompt-tokens", "8")
	if code != 1 || !strings.Contains(errs, "load: c=1 (1 of 2) done in ") {
		t.Fatalf("exit %d, stderr %q; want 1 and c=1 done", code, errs)
	}
	if strings.Contains(errs, "c=2 (2 of 2) started") {
		t.Errorf("stderr announces c=2, which the sweep never runs:\n%s", errs)
	}
}

// TestLoadCalibrateFailedSweepAnnouncesNoCalibration: with --calibrate, a
// sweep whose every point failed (each completion a 500) runs no
// calibration sweep, so its first point is not announced; stderr said
// "load: c=1 at 1088-token prompts (3 of 4) started" (2 x 512 + 128 / 2 =
// 1,088 tokens, the default second length) and nothing after it.
func TestLoadCalibrateFailedSweepAnnouncesNoCalibration(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/models") {
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","max_model_len":4096}]}`)
			return
		}
		http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
	}))
	defer srv.Close()
	cal := filepath.Join(t.TempDir(), "cal.json")
	code, out, errs := runLoad(t, srv.URL, "--concurrency", "1,2", "--requests", "2", "--calibrate", cal)
	if code != 1 || !strings.Contains(errs, "load: 4 points (c=1, c=2, c=1 at 1088-token prompts, c=2 at 1088-token prompts)") || !strings.Contains(errs, "load: c=2 (2 of 4) done in ") {
		t.Fatalf("exit %d, stderr %q; want 1, the 4 points listed and c=2 done", code, errs)
	}
	if strings.Contains(errs, "(3 of 4) started") {
		t.Errorf("stderr announces a calibration point that never runs:\n%s", errs)
	}
	// No TTFT measured: the chart's bar is empty, the SLO's mark (2 s, the
	// chart's top) at column 40, and the value "-" as in the table; it read
	// "NaNs".
	for _, pt := range []string{"c=1", "c=2"} {
		if want := "         " + pt + " " + strings.Repeat(" ", 40) + "| -\n"; !strings.Contains(out, want) || strings.Contains(out, "NaN") {
			t.Errorf("the chart's row of %s without TTFT: want %q, no NaN:\n%s", pt, want, out)
		}
	}
}
