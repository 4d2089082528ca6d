package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runAccuracy(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"accuracy"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestAccuracyJSON: two stages, three measured metrics each: six rows, in
// the documented shape, each error the relative difference of its own
// predicted and actual values, and MAPE the mean of their absolute values.
func TestAccuracyJSON(t *testing.T) {
	code, out, errs := runAccuracy(t, "--ground-truth", "testdata/accuracy-two-stages.csv", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Rows []struct {
			Experiment  string  `json:"experiment"`
			Stage       int     `json:"stage"`
			Metric      string  `json:"metric"`
			PredictedMS float64 `json:"predicted_ms"`
			ActualMS    float64 `json:"actual_ms"`
			ErrorPct    float64 `json:"error_pct"`
		} `json:"rows"`
		MAPE map[string]float64 `json:"mape"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 6 {
		t.Fatalf("%d rows, want 6", len(rep.Rows))
	}
	sum := map[string]float64{}
	for _, r := range rep.Rows {
		if r.Experiment != "a" || r.PredictedMS <= 0 {
			t.Errorf("row %+v", r)
		}
		want := (r.PredictedMS - r.ActualMS) / r.ActualMS * 100
		if d := r.ErrorPct - want; d > 1e-9 || d < -1e-9 {
			t.Errorf("row %+v: error %v, want %v", r, r.ErrorPct, want)
		}
		if r.ErrorPct < 0 {
			sum[r.Metric] -= r.ErrorPct / 2
		} else {
			sum[r.Metric] += r.ErrorPct / 2
		}
	}
	for _, m := range []string{"ttft_mean", "itl_mean", "e2e_mean"} {
		if d := rep.MAPE[m] - sum[m]; d > 1e-9 || d < -1e-9 {
			t.Errorf("mape %s = %v, want %v", m, rep.MAPE[m], sum[m])
		}
	}
}

// TestAccuracyInvalid: a bad cell is invalid input (exit 2) naming
// file:line:column and the column; an unknown model points at
// --model-config.
func TestAccuracyInvalid(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	data, _ := os.ReadFile("testdata/accuracy-two-stages.csv")
	os.WriteFile(bad, bytes.Replace(data, []byte(",2,60,"), []byte(",x,60,"), 1), 0o644)
	code, _, errs := runAccuracy(t, "--ground-truth", bad)
	if code != 2 || !strings.Contains(errs, "bad.csv:3:") || !strings.Contains(errs, "column stage_rate_rps") {
		t.Errorf("exit %d, stderr %q: want 2 naming bad.csv:3 and stage_rate_rps", code, errs)
	}
	unknown := filepath.Join(dir, "unknown.csv")
	os.WriteFile(unknown, bytes.ReplaceAll(data, []byte("Qwen/Qwen2.5-7B-Instruct"), []byte("acme/frontier-1T")), 0o644)
	code, _, errs = runAccuracy(t, "--ground-truth", unknown)
	if code != 2 || !strings.Contains(errs, "unknown.csv:2: model") || !strings.Contains(errs, "--model-config") {
		t.Errorf("exit %d, stderr %q: want 2 naming unknown.csv:2 and --model-config", code, errs)
	}
}

// yiLike writes into dir the two-stage ground truth with its model renamed
// acme/yi-like on TP 2 and returns its path with Yi-34B's config.json
// under that name: a model outside the catalog.
func yiLike(t *testing.T, dir string) (gt string, cfg []byte) {
	t.Helper()
	data, err := os.ReadFile("testdata/accuracy-two-stages.csv")
	if err != nil {
		t.Fatal(err)
	}
	gt = filepath.Join(dir, "gt.csv")
	data = bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("Qwen/Qwen2.5-7B-Instruct"), []byte("acme/yi-like")), []byte("H100,1,"), []byte("H100,2,"))
	if err := os.WriteFile(gt, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, err = os.ReadFile("../../pkg/replica/testdata/hf/yi-34b.json"); err != nil {
		t.Fatal(err)
	}
	return gt, bytes.Replace(cfg, []byte(`"01-ai/Yi-34B"`), []byte(`"acme/yi-like"`), 1)
}

// TestAccuracyModelConfig: a model outside the catalog is expressed by its
// config.json (the Yi-34B shape under another name) and replays.
func TestAccuracyModelConfig(t *testing.T) {
	dir := t.TempDir()
	gt, cfg := yiLike(t, dir)
	mc := filepath.Join(dir, "config.json")
	os.WriteFile(mc, cfg, 0o644)
	code, out, errs := runAccuracy(t, "--ground-truth", gt, "--model-config", mc)
	if code != 0 || !strings.Contains(out, "ttft_mean") {
		t.Errorf("exit %d, stderr %q, stdout %q", code, errs, out)
	}
}

// TestGPUModelConfig: a config.json describes the same replica as the
// catalog entry it mirrors (vllm accounting counts exact parameters, so
// every figure but the name line agrees); --model and --model-config
// together are refused.
func TestGPUModelConfig(t *testing.T) {
	code, fromCfg, errs := runGPU(t, "--calibrated", "--tp", "2", "--model-config", "../../pkg/replica/testdata/hf/yi-34b.json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	_, fromCat, _ := runGPU(t, "--calibrated", "--tp", "2", "--model", "yi-34b")
	body := func(s string) string { return s[strings.IndexByte(s, '\n'):] }
	if body(fromCfg) != body(fromCat) {
		t.Errorf("--model-config:\n%s\n--model:\n%s", fromCfg, fromCat)
	}
	if code, _, errs := runGPU(t, "--model", "yi-34b", "--model-config", "../../pkg/replica/testdata/hf/yi-34b.json"); code != 2 || !strings.Contains(errs, "--model-config: give --model or --model-config, not both") {
		t.Errorf("both: exit %d, %s", code, errs)
	}
}

// TestGPUModelConfigEmpty: an empty --model-config file is refused with
// exit 2 naming the flag and the file and saying it is empty (it said
// only "EOF").
func TestGPUModelConfigEmpty(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(empty, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runGPU(t, "--model-config", empty)
	if want := "--model-config: " + empty + " is empty: want a Hugging Face config.json"; code != 2 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q: want 2 with %q", code, errs, want)
	}
}

// TestAccuracyCalibration: a calibration file of the rows' GPU, model and
// TP changes the prediction, and the MAPE before it is reported beside the
// MAPE after (a request overhead of 49 ms moves every TTFT by that much).
func TestAccuracyCalibration(t *testing.T) {
	data, err := os.ReadFile("../../examples/vllm-0.21-h100-llama-3.1-8b.calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	cal := filepath.Join(t.TempDir(), "qwen.json")
	os.WriteFile(cal, bytes.Replace(data, []byte(`"model": "llama-3.1-8b"`), []byte(`"model": "qwen2.5-7b"`), 1), 0o644)
	code, out, errs := runAccuracy(t, "--ground-truth", "testdata/accuracy-two-stages.csv", "--calibration", cal, "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		MAPE   map[string]float64 `json:"mape"`
		Before map[string]float64 `json:"mape_before"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Before) == 0 || rep.Before["ttft_mean"] == rep.MAPE["ttft_mean"] {
		t.Errorf("before %v, after %v: want both, different", rep.Before, rep.MAPE)
	}
}

// TestAccuracyPeersNoRow: a --peers file whose predictions are all of
// experiments the ground truth does not have printed no peer, exit 0; it
// is refused naming both files. One prediction of a row is enough.
func TestAccuracyPeersNoRow(t *testing.T) {
	dir := t.TempDir()
	peers := filepath.Join(dir, "peers.csv")
	head := "experiment,stage_index,metric_name,simulator,predicted_ms\n"
	os.WriteFile(peers, []byte(head+"b,0,ttft_mean,vidur,25\nb,1,ttft_mean,vidur,26\n"), 0o644)
	code, _, errs := runAccuracy(t, "--ground-truth", "testdata/accuracy-two-stages.csv", "--peers", peers)
	gt, _ := filepath.Abs("testdata/accuracy-two-stages.csv") // kong's type:"path"
	want := "--peers " + peers + ": none of its 2 predictions is of a row of " + gt
	if code != 2 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q: want 2 and %q", code, errs, want)
	}
	os.WriteFile(peers, []byte(head+"b,0,ttft_mean,vidur,25\na,1,ttft_mean,vidur,26\n"), 0o644)
	if code, out, errs := runAccuracy(t, "--ground-truth", "testdata/accuracy-two-stages.csv", "--peers", peers); code != 0 || !strings.Contains(out, "vidur") {
		t.Errorf("one matching prediction: exit %d, stderr %q, stdout %q; want vidur's row", code, errs, out)
	}
}

// TestAccuracyModelConfigTwice: two --model-config files naming the same
// model (Yi-34B's shape, and the same with another MLP size) are refused
// naming both: the second replaced the first without a word.
func TestAccuracyModelConfigTwice(t *testing.T) {
	dir := t.TempDir()
	gt, cfg := yiLike(t, dir)
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	os.WriteFile(a, cfg, 0o644)
	os.WriteFile(b, bytes.Replace(cfg, []byte(`"intermediate_size": 20480`), []byte(`"intermediate_size": 40960`), 1), 0o644)
	code, _, errs := runAccuracy(t, "--ground-truth", gt, "--model-config", a, "--model-config", b)
	if want := "--model-config " + b + ": model acme/yi-like is " + a + "'s too"; code != 2 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q: want 2 and %q", code, errs, want)
	}
	// The same file twice says one thing: it replays.
	if code, _, errs := runAccuracy(t, "--ground-truth", gt, "--model-config", a, "--model-config", a); code != 0 {
		t.Errorf("the same file twice: exit %d, stderr %q", code, errs)
	}
}

// TestAccuracyCalibrationNoRow: a calibration of a model, GPU and TP no
// row has (the example's Llama-3.1-8B against two Qwen2.5-7B stages)
// printed the same MAPE before and after, exit 0; it is refused naming the
// file and what it was fitted for.
func TestAccuracyCalibrationNoRow(t *testing.T) {
	cal, err := filepath.Abs("../../examples/vllm-0.21-h100-llama-3.1-8b.calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runAccuracy(t, "--ground-truth", "testdata/accuracy-two-stages.csv", "--calibration", cal)
	want := "--calibration " + cal + ": fitted for llama-3.1-8b on 1 x h100-sxm, and no experiment of "
	if code != 2 || !strings.Contains(errs, want) || out != "" {
		t.Errorf("exit %d, stdout %q, stderr %q: want 2, nothing on stdout, and %q", code, out, errs, want)
	}
}

// TestAccuracyHeldOutOnce: a model given twice to --held-out (or in two
// spellings, as the rows match it, any case) was named twice in the
// footnote ("held out of the fit: Qwen/Qwen2.5-7B-Instruct,
// Qwen/Qwen2.5-7B-Instruct"); it is held out, and named, once.
func TestAccuracyHeldOutOnce(t *testing.T) {
	code, out, errs := runAccuracy(t, "--ground-truth", "testdata/accuracy-two-stages.csv",
		"--held-out", "Qwen/Qwen2.5-7B-Instruct", "--held-out", "qwen/qwen2.5-7b-instruct")
	if code != 0 || !strings.Contains(out, "held out of the fit: Qwen/Qwen2.5-7B-Instruct\n") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant the model named once", code, errs, out)
	}
}
