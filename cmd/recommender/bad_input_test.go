package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEfficiencyBounds: an MFU or bandwidth efficiency below 1% of the
// GPU's peak (1e-300 replayed prefills of 1e300 s and a table of 100% SLO
// misses, exit 0) or above 100% is refused by every command with the
// replica flags, exit 2, naming the flag and the range, before a replay,
// a query (backtest's Prometheus is unreachable: exit 1) or a request
// (load's server is unreachable).
func TestEfficiencyBounds(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	yaml := `prometheus: {url: "http://127.0.0.1:1"}
targets:
- name: chat
  selector: '{pod=~"chat-.*"}'
  replica: {gpu: h100-sxm, model: llama-3-8b}
  metrics: [{type: queue, target: 4}]
  maxReplicaCount: 8
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	const allowed = "is invalid (allowed: a fraction from 0.01 to 1 (1% to 100% of the GPU's peak))"
	for _, flag := range [][2]string{{"--mfu", "1e-300"}, {"--mfu", "0.009"}, {"--mfu", "40"}, {"--bandwidth-efficiency", "0.001"}, {"--bandwidth-efficiency", "1.01"}} {
		for _, args := range [][]string{
			{"simulate", "-q"},
			{"tune", "--trace", "reference", "-q"},
			{"backtest", "--config", cfg, "--target", "chat", "-q"},
			{"load", "http://127.0.0.1:1", "--concurrency", "1"},
			{"gpu"},
		} {
			wantRefused(t, append(args, flag[0], flag[1]), nil, flag[0]+": "+flag[1]+" "+allowed)
		}
	}
	// The bounds themselves are a GPU's.
	if code, _, stderr := runIn(t, nil, "gpu", "--mfu", "0.01", "--bandwidth-efficiency", "1"); code != exitOK {
		t.Errorf("gpu --mfu 0.01 --bandwidth-efficiency 1: exit %d, want 0; stderr:\n%s", code, stderr)
	}
}

// TestCalibrationEfficiencyBound: a calibration file's mfu below 0.01 is
// refused as the flag is (the same bound), naming the file, line:column.
func TestCalibrationEfficiencyBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cal.json")
	body := "{\n  \"kind\": \"infscale-calibration\",\n  \"version\": 1,\n  \"gpu\": \"h100-sxm\",\n  \"model\": \"llama-3-8b\",\n  \"tp\": 1,\n" +
		"  \"bandwidth_efficiency\": 0.7,\n  \"mfu\": 0.004,\n  \"step_overhead_s\": 0,\n  \"sequence_step_cost_s\": 0,\n  \"request_overhead_s\": 0\n}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// "  \"mfu\": " is 9 bytes: the value is at line 8, column 10.
	wantRefused(t, []string{"simulate", "-q", "--calibration", p}, nil, "--calibration: "+p+":8:10: mfu 0.004: want a fraction from 0.01 to 1")
}

// TestLoadDurationBoundAllowed: a week itself is a duration load takes:
// it goes on to the server (unreachable here: exit 1, not 2).
func TestLoadDurationBoundAllowed(t *testing.T) {
	code, _, stderr := runLoad(t, "http://127.0.0.1:1", "--concurrency", "1", "--duration", "168h", "--timeout", "168h")
	if code != exitRuntime || !strings.Contains(stderr, "connection refused") {
		t.Errorf("--duration 168h: exit %d, stderr %q; want 1, the server unreachable", code, stderr)
	}
}

// TestTraceCutOrKeyTwice: a trace a user hands simulate or load whose last
// row was cut while the file was written, or a Mooncake row with a key
// given twice (encoding/json took the last: a 99,999-token prompt), is
// refused before any replay or request, exit 2, naming file:line.
func TestTraceCutOrKeyTwice(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writePage(t, dir, name, body) }
	cut := write("cut.csv", "arrival_s,prompt_tokens,output_tokens\n0,512,128\n1.5,51")
	twice := write("twice.jsonl", `{"timestamp": 0, "input_length": 10, "output_length": 5}`+"\n"+
		`{"timestamp": 1, "input_length": 10, "input_length": 99999, "output_length": 5}`+"\n")
	for _, tc := range []struct {
		file string
		want []string
	}{
		{cut, []string{cut + ":3: want 3 fields arrival_s,prompt_tokens,output_tokens, got 2", "(the file's last line, with no line end: was the file cut while being written?"}},
		{twice, []string{twice + ":2: column 38: input_length: key given twice (first at column 18); give it once"}},
	} {
		wantRefused(t, []string{"simulate", "-q", "--trace", tc.file}, nil, tc.want...)
		wantRefused(t, []string{"load", "http://127.0.0.1:1", "--trace", tc.file}, nil, tc.want...)
	}
}

// TestLoadTraceSkippedNote: load --trace noted the whole file's rows with
// Request tokens 0 as skipped while it sends only the requests before
// --duration, the first --requests of them. The note counts the skipped
// rows among those, each with the request after it (simulate --window's
// rule and words), beside the whole file's. The file: requests at 0, 30
// and 60 s, skipped rows at 20, 31 and 70 s. The server is unreachable:
// the note comes before any request, then exit 1.
func TestLoadTraceSkippedNote(t *testing.T) {
	p := filepath.Join(t.TempDir(), "BurstGPT_1.csv")
	body := "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n" +
		"0,ChatGPT,300,40,340,Conversation log\n" +
		"20,GPT-4,0,0,0,Conversation log\n" +
		"30,ChatGPT,500,0,500,API log\n" +
		"31,ChatGPT,0,0,0,API log\n" +
		"60,GPT-4,120,80,200,Conversation log\n" +
		"70,GPT-4,0,0,0,API log\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	const tail = " to the nearest request (each counted with the request after it), 3 in the whole file (failed requests, logged without lengths; not sent)"
	for _, c := range []struct {
		args []string
		want string // "": no note
	}{
		// 0 s sent; the 20 s row goes with the 30 s request, not sent.
		{[]string{"--duration", "25s"}, ""},
		// 0 and 30 s sent: the 20 s row; the 31 s one goes with 60 s.
		{[]string{"--duration", "45s"}, "skipped 1 row with Request tokens 0 within --duration 45s and --requests 1000" + tail},
		// All three, and the 70 s row after the last.
		{[]string{"--duration", "2m"}, "skipped 3 rows with Request tokens 0 within --duration 2m0s and --requests 1000" + tail},
		{[]string{"--duration", "2m", "--requests", "0"}, "skipped 3 rows with Request tokens 0 within --duration 2m0s" + tail},
		// --requests 2 ends the run at the 30 s request.
		{[]string{"--duration", "2m", "--requests", "2"}, "skipped 1 row with Request tokens 0 within --duration 2m0s and --requests 2" + tail},
		{[]string{"--sort"}, "skipped 3 rows with Request tokens 0 in the whole file, the share within --duration 1m0s and --requests 1000 unknown under --sort"},
	} {
		code, _, stderr := runLoad(t, append([]string{"http://127.0.0.1:1", "--trace", p}, c.args...)...)
		if code != exitRuntime || c.want == "" && strings.Contains(stderr, "skipped") || c.want != "" && !strings.Contains(stderr, "note: BurstGPT_1.csv: "+c.want) {
			t.Errorf("%v: exit %d, stderr %q\nwant exit 1 and the note %q", c.args, code, stderr, c.want)
		}
	}
}

// TestCalibrationOnTheFlagsReplica: a calibration is applied to the
// replica all the replica flags make, --dtype included, so a file fitted
// with --dtype fp8 applies with --dtype fp8 (it was applied before --dtype
// was read, to fp16 weights, and refused for not reproducing its fit) and
// is refused without it. By hand, llama-3-8b on one H100 SXM at 0.7 of
// 3.35e12 B/s, 1 ms of step overhead: fp8 weights (8e9 B) and a 1,000-token
// context (131072 B a token, the KV 16-bit) read in 8.131e9 / 2.345e12 =
// 3.4674 ms, a step of 4.4674 ms; fp16 weights make it 16.131e9 / 2.345e12
// + 1 ms = 7.8789 ms, 76% more. A 512-token prefill at FP8's 1979e12 x
// 0.4 / (2 x 8e9) = 49,475 tokens/s is 10.349 ms, + 20 ms of overhead.
func TestCalibrationOnTheFlagsReplica(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fp8.json")
	body := `{"kind": "infscale-calibration", "version": 1, "gpu": "h100-sxm", "model": "llama-3-8b", "tp": 1,
  "bandwidth_efficiency": 0.7, "mfu": 0.4, "step_overhead_s": 0.001, "sequence_step_cost_s": 0, "request_overhead_s": 0.02,
  "fit": [{"batch": 1, "context_tokens": 1000, "step_s": 0.0045, "predicted_s": 0.0044674}],
  "prefill": [{"prompt_tokens": 512, "ttft_s": 0.031, "predicted_s": 0.030349}]}`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runIn(t, nil, "gpu", "--dtype", "fp8", "--calibration", p); code != exitOK {
		t.Errorf("--dtype fp8 --calibration (fitted on fp8): exit %d\n%s", code, stderr)
	}
	wantRefused(t, []string{"gpu", "--calibration", p}, nil,
		"--calibration: "+p+": applied to this replica it predicts fit[0] at 7.879 ms, where the fit predicted 4.467 ms (+76%")
	// A flag of a term the file sets still overrides it.
	code, out, stderr := runIn(t, nil, "gpu", "--dtype", "fp8", "--calibration", p, "--request-overhead", "5ms")
	if code != exitOK || !strings.Contains(out, "request overhead 5.0 ms") {
		t.Errorf("--request-overhead 5ms over the file's 20 ms: exit %d\n%s%s", code, out, stderr)
	}
}

// TestReplicaFlagHint: --replica (accuracy's) on a command with the
// replica flags is answered with the flags that choose the replica
// model's mode, not kong's list of the 27 --replica-* aliases.
func TestReplicaFlagHint(t *testing.T) {
	for _, args := range [][]string{{"simulate", "--replica", "fitted"}, {"gpu", "--replica=calibrated"}} {
		stderr := wantRefused(t, args, nil, "unknown flag --replica: here the replica model starts from the reference, or from --calibrated or --fitted (accuracy's --replica fitted|calibrated|reference)")
		if strings.Contains(stderr, "--replica-gpu") {
			t.Errorf("%v: still lists the aliases:\n%s", args, stderr)
		}
	}
}
