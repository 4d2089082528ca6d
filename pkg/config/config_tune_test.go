package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tuneBase is a Prometheus-mode config of one target, chat, that the
// tests below extend with its tune: or replica: keys.
const tuneBase = `prometheus: {url: http://prometheus:9090}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  max: 8
`

// TestTuneBlock: a tune: block takes its defaults (every 24h, history 7d,
// max_miss 0.001, shadow, slo_ttft 2s) and its mistakes are named at
// their keys.
func TestTuneBlock(t *testing.T) {
	base := tuneBase
	f, err := Parse([]byte(base+"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tu := f.Targets[0].Tune
	if time.Duration(tu.Every) != 24*time.Hour || time.Duration(tu.History) != 7*24*time.Hour || tu.Budget() != 0.001 || tu.Mode != TuneShadow || time.Duration(tu.SLOTTFT) != 2*time.Second {
		t.Errorf("defaults %+v", tu)
	}
	for _, c := range []struct{ block, want string }{
		// Both bounds as the key is written (10m, not 10m0s; 1h, not 1h0m0s).
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {every: 10m}\n", "t.yaml:9:17: targets[0].tune.every: must be at least 1h (each run replays the history dozens of times), got 10m"},
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {history: 30m}\n", "t.yaml:9:19: targets[0].tune.history: must be 1h to 90d of history, got 30m"},
		// 100000h is 11 years: refused as a mistype, as pollingInterval's is.
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {every: 100000h}\n", "t.yaml:9:17: targets[0].tune.every: must be at most 90d (in adopt mode also the least time between two switches), got 4166d16h"},
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {history: 100d}\n", "targets[0].tune.history"},
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {max_miss: 1.5}\n", "targets[0].tune.max_miss"},
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {mode: auto}\n", "targets[0].tune.mode"},
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {often: 1h}\n", "often"},
		{"  tune: {mode: adopt}\n", "replica:"},
		// Written as 0 or "": refused, not taken as the default (every: 0
		// re-tuned each 24h).
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {every: 0}\n", "t.yaml:9:17: targets[0].tune.every: is empty or 0"},
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {history: 0s}\n", "targets[0].tune.history: is empty or 0"},
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {slo_ttft: 0s}\n", "targets[0].tune.slo_ttft: is empty or 0"},
		// A week at most, as tune --slo-ttft and a ttft target: line 9
		// "  tune: {slo_ttft: " is 19 characters.
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {slo_ttft: 169h}\n", "t.yaml:9:20: targets[0].tune.slo_ttft: 7d1h: must be at most 7d (a week, the bound of a ttft target"},
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {mode: ''}\n", "targets[0].tune.mode: is empty or 0"},
		// dir: "" tuned in process, on serve's one core, instead of
		// reading the CronJob's results.
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {dir: ''}\n", "t.yaml:9:15: targets[0].tune.dir: is empty or 0"},
		// A percentage, as tune --max-miss takes it: the key is a
		// fraction, and the message gives the fraction meant (0.1 / 100).
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {max_miss: 0.1%}\n", `t.yaml:9:20: targets[0].tune.max_miss: got the string "0.1%"; expected a fraction of requests, not a percentage: 0.1% is 0.001`},
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {max_miss: '2 %'}\n", `targets[0].tune.max_miss: got the string "2 %"; expected a fraction of requests, not a percentage: 2% is 0.02`},
		{"  replica: {gpu: h100-sxm, model: llama-3-8b}\n  tune: {max_miss: few}\n", `targets[0].tune.max_miss: got the string "few"; expected a number`},
	} {
		_, err := Parse([]byte(base+c.block), "t.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error naming %s", c.block, err, c.want)
		}
	}
}

// TestReplicaCalibrationMismatchInFileTerms: a calibration fitted for
// llama-3.1-8b on 1 x h100-sxm under a replica of llama-3-8b is refused at
// the calibration key in the file's own terms (replica: {gpu, model, tp}),
// not with the command line's "pass --model ... --gpu ..." advice.
func TestReplicaCalibrationMismatchInFileTerms(t *testing.T) {
	base := tuneBase
	cal := filepath.Join(t.TempDir(), "cal.json")
	if err := os.WriteFile(cal, []byte(`{"kind": "infscale-calibration", "version": 1, "gpu": "h100-sxm", "model": "llama-3.1-8b", "tp": 1,
"bandwidth_efficiency": 0.7, "mfu": 0.4, "step_overhead_s": 0.001, "sequence_step_cost_s": 0.00002, "request_overhead_s": 0.01, "fit": [], "prefill": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Parse([]byte(base+"  replica: {gpu: h100-sxm, model: llama-3-8b, calibration: "+cal+"}\n"), "t.yaml")
	want := "targets[0].replica.calibration: " + cal + " was fitted for llama-3.1-8b on 1 x h100-sxm, not this replica's llama-3-8b on 1 x h100-sxm: set replica: {gpu: h100-sxm, model: llama-3.1-8b, tp: 1}"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "pass --model") {
		t.Errorf("error %v, want one containing %q", err, want)
	}
	if _, err := Parse([]byte(base+"  replica: {gpu: h100-sxm, model: llama-3.1-8b, calibration: "+cal+"}\n"), "t.yaml"); err != nil {
		t.Errorf("the calibration's own replica: %v", err)
	}
	// Fitted on a model outside the catalog (load --calibrate
	// --model-config): the advice is model_config, not a model: the
	// catalog refuses.
	custom := filepath.Join(t.TempDir(), "custom.json")
	if err := os.WriteFile(custom, []byte(`{"kind": "infscale-calibration", "version": 1, "gpu": "H100", "model": "acme/foo-34b", "tp": 1,
"bandwidth_efficiency": 0.7, "mfu": 0.4, "step_overhead_s": 0.001, "sequence_step_cost_s": 0.00002, "request_overhead_s": 0.01, "fit": [], "prefill": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Parse([]byte(base+"  replica: {gpu: h100-sxm, model: llama-3-8b, calibration: "+custom+"}\n"), "t.yaml")
	want = "set replica: {gpu: h100-sxm, model_config: the config.json of acme/foo-34b, tp: 1}"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}
}

// TestReplicaFileMissing: a calibration or model_config file that is not
// there says where a relative path was looked for (the working directory,
// not the config file's) and what the file is; it was Go's "open
// none.json: no such file or directory".
func TestReplicaFileMissing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	wd, err := os.Getwd() // dir, with its symlinks resolved as the process sees it
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse([]byte(tuneBase+"  replica: {gpu: h100-sxm, model: llama-3.1-8b, calibration: none.json}\n"), "t.yaml")
	want := "targets[0].replica.calibration: none.json: no such file in the working directory " + wd + " (a relative path is read from there, not from the config file's directory); want a file infscale load --calibrate or backtest --calibrate writes"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("calibration: %v\nwant %q", err, want)
	}
	_, err = Parse([]byte(tuneBase+"  replica: {gpu: h100-sxm, model_config: /nonexistent/config.json}\n"), "t.yaml")
	want = "targets[0].replica.model_config: /nonexistent/config.json: no such file; want the model's Hugging Face config.json"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("model_config: %v\nwant %q", err, want)
	}
}

// TestTuneSLOBucketWarning: in adopt mode the live-miss check that
// reverts a candidate reads the server's TTFT histogram and counts only
// the buckets wholly above slo_ttft; on vLLM (buckets ..., 0.75, 1, 2.5,
// 5, ...) an slo_ttft between two bounds leaves the requests between it
// and the next bound uncounted. The file loads, with a warning at the key
// naming the bucket and the bounds around it; at a bound, in shadow mode
// (nothing is reverted) or on a server whose buckets are not known, none.
func TestTuneSLOBucketWarning(t *testing.T) {
	const replica = "  replica: {gpu: h100-sxm, model: llama-3-8b}\n"
	for _, c := range []struct {
		name, file, want string
	}{
		{"default 2s", tuneBase + replica + "  tune: {mode: adopt}\n",
			"t.yaml:9:9: targets[0].tune.slo_ttft: 2s (the default) is inside vllm's TTFT bucket (1s, 2s500ms]: the live-miss check that reverts an adopted candidate counts only the requests above 2s500ms as late; give 1s or 2s500ms, a bucket bound, for an exact count (docs/tune.md) (target \"chat\")"},
		{"given 800ms", tuneBase + replica + "  tune:\n    mode: adopt\n    slo_ttft: 800ms\n",
			"t.yaml:11:15: targets[0].tune.slo_ttft: 800ms is inside vllm's TTFT bucket (750ms, 1s]: the live-miss check that reverts an adopted candidate counts only the requests above 1s as late; give 750ms or 1s, a bucket bound, for an exact count (docs/tune.md) (target \"chat\")"},
		{"past the last bound", tuneBase + replica + "  tune: {mode: adopt, slo_ttft: 1h}\n",
			"t.yaml:9:33: targets[0].tune.slo_ttft: 1h is above vllm's highest TTFT bucket bound, 42m40s: the live-miss check that reverts an adopted candidate counts no request as late; give 42m40s or less (docs/tune.md) (target \"chat\")"},
		{"at a bound", tuneBase + replica + "  tune: {mode: adopt, slo_ttft: 2500ms}\n", ""},
		{"shadow", tuneBase + replica + "  tune: {slo_ttft: 2s}\n", ""},
		{"sglang", strings.Replace(tuneBase, "server: vllm", "server: sglang", 1) + replica + "  tune: {mode: adopt}\n", ""},
	} {
		f, err := Parse([]byte(c.file), "t.yaml")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := warningsText(f)
		if got != c.want {
			t.Errorf("%s: warnings %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestTuneDirIsAFile: tune.dir is read at run time, so a directory that
// does not exist yet loads quietly (a volume mounted later, the CronJob's
// first run); a regular file where the directory goes loads with a
// warning at the key, since serve would log "tuning failed" every minute.
func TestTuneDirIsAFile(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/results"
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	const replica = "  replica: {gpu: h100-sxm, model: llama-3-8b}\n"
	for _, c := range []struct{ name, dir, want string }{
		{"a file", file, "t.yaml:9:15: targets[0].tune.dir: " + file + " is a file, not a directory: serve reads the results infscale tune --shard writes there (NAME.json) and logs \"tuning failed\" for this target each minute until it is a directory (docs/tune.md) (target \"chat\")"},
		{"a directory", dir, ""},
		{"not there yet", dir + "/later", ""},
	} {
		f, err := Parse([]byte(tuneBase+replica+"  tune: {dir: "+c.dir+"}\n"), "t.yaml")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := warningsText(f)
		if got != c.want {
			t.Errorf("%s: warnings %q\nwant %q", c.name, got, c.want)
		}
	}
}

// warningsText is f's warnings as one string ("" when none).
func warningsText(f *File) string {
	if len(f.Warnings) == 0 {
		return ""
	}
	return Errors(f.Warnings).Error()
}
