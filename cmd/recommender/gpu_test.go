package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

func runGPU(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"gpu"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestGPUReferenceBlock: with no flags, `infscale gpu` prints docs/design.md's
// reference block figure for figure (the arithmetic is in
// pkg/replica/reference_test.go).
func TestGPUReferenceBlock(t *testing.T) {
	code, out, errs := runGPU(t)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	want := `weights 16.0 GB
KV cache 52.0 GB free = 396728 tokens
prefill 24750 tokens/s
decode step 6.9 ms at batch 1, 10.4 ms at batch 64 (1000-token contexts): 6154 output tokens/s at full batch
cold start 91 s = image 45 s + weights 16 s at 1 GB/s + warm-up 30 s
pod CPU idle 5%, batch 1 30%, batch 64 46% of 4 requested cores, whatever the queue
`
	if !strings.HasSuffix(out, want) {
		t.Errorf("output:\n%s\nwant it to end with docs/design.md's block:\n%s", out, want)
	}
}

func TestGPUJSON(t *testing.T) {
	code, out, errs := runGPU(t, "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	// Same figures as the block, in base units: 16e9 B; 396728 tokens;
	// 24750 tokens/s; 91 s; 46% at batch 64.
	for k, want := range map[string]float64{
		"weights_bytes": 16e9, "kv_capacity_tokens": 396728, "prefill_tokens_per_second": 24750,
		"cold_start_seconds": 91, "cpu_full_batch_percent": 46, "full_batch": 64, "kv_bytes_per_token": 131072,
	} {
		got, ok := s[k].(float64)
		if !ok || got < want-1e-6 || got > want+1e-6 {
			t.Errorf("%s = %v, want %v", k, s[k], want)
		}
	}
	if s["dtype"] != "fp16" || s["accounting"] != "nominal" || s["gpu"] != "h100-sxm" {
		t.Errorf("dtype/accounting/gpu = %v/%v/%v", s["dtype"], s["accounting"], s["gpu"])
	}
}

// TestGPUCalibrated: --calibrated uses vLLM accounting. Llama-2-7B on H100:
// 79.22 GiB × 0.9 − 12.55 GiB weights − 3.05 GiB reserve = 55.70 GiB, in
// blocks of 16 × 524288 B = 8 MiB: floor(55.70 × 1024 / 8) = 7129 blocks.
func TestGPUCalibrated(t *testing.T) {
	code, out, errs := runGPU(t, "--calibrated", "--model", "meta-llama/Llama-2-7b-hf")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	for _, want := range []string{"weights 12.55 GiB", "55.70 GiB free per GPU = 7129 blocks of 16 tokens = 114064 tokens", "vllm accounting", "fp16"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestGPUFlags: each flag reaches the config. --tp 2 doubles memory, so
// 2 × (72 − 4) − 16 = 120 GB free; --kv-dtype fp8 halves the per-token
// cache to 65536 B: 120e9 / 65536 = 1831054 tokens.
func TestGPUFlags(t *testing.T) {
	code, out, errs := runGPU(t, "--tp", "2", "--kv-dtype", "fp8", "--output", "json",
		"--step-overhead", "1ms", "--image-pull", "10s", "--warm-up", "5s", "--weight-load-rate", "2GB", "--max-num-seqs", "128")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	var s struct {
		KVFree    float64 `json:"kv_free_bytes"`
		KVTokens  int64   `json:"kv_capacity_tokens"`
		ColdStart float64 `json:"cold_start_seconds"`
		FullBatch int     `json:"full_batch"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if s.KVTokens != 1831054 {
		t.Errorf("kv_capacity_tokens = %d, want 1831054", s.KVTokens)
	}
	// 10 s + 16e9 / 2e9 = 8 s + 5 s = 23 s.
	if s.ColdStart != 23 {
		t.Errorf("cold_start_seconds = %v, want 23", s.ColdStart)
	}
	if s.FullBatch != 128 {
		t.Errorf("full_batch = %d, want 128", s.FullBatch)
	}
}

// TestGPUInvalid: bad input exits 2 and names every bad flag with what is allowed.
func TestGPUInvalid(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--gpu", "v100"}, []string{"--gpu", "h100-sxm", "mi300x"}},
		{[]string{"--model", "gpt-5"}, []string{"--model", "llama-3.1-8b"}},
		{[]string{"--dtype", "fp4", "--memory-utilization", "1.5", "--tp", "0"},
			[]string{"--dtype", "int4", "--memory-utilization", "(0, 1]", "--tp"}},
		{[]string{"--reserve", "lots"}, []string{"--reserve", "GiB"}},
		// A reserve of an H100's 80 GB or more leaves no memory on any GPU:
		// it said "-1e+30 GB for KV cache ... use more GPUs (--tp)".
		{[]string{"--reserve", "1e30GB"}, []string{"infscale: --reserve: 1e30GB is the whole memory of one h100-sxm (80 GB) or more: it is kept on each GPU besides the weights, e.g. 4GB\n"}},
		{[]string{"--gpu", "a10g", "--reserve", "24GB"}, []string{"--reserve: 24GB is the whole memory of one a10g (24 GB) or more"}},
		{[]string{"--accounting", "exact"}, []string{"--accounting", "nominal, vllm"}},
		{[]string{"--context", "0"}, []string{"--context"}},
		{[]string{"--model", "llama-3.1-70b"}, []string{"does not fit", "--tp"}},
		// vLLM: "Total number of attention heads (32) must be divisible by
		// tensor parallel size (3)".
		{[]string{"--tp", "3"}, []string{"--tp: 3 is invalid", "32 attention heads", "1, 2, 4, 8, 16, 32"}},
		{[]string{"--output", "yaml"}, []string{"--output", "text", "json"}},
	} {
		code, _, errs := runGPU(t, tc.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %s)", tc.args, code, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, errs)
			}
		}
	}
}

func TestGPUList(t *testing.T) {
	code, out, errs := runGPU(t, "--list")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	for _, name := range []string{"a10g", "l4", "l40s", "a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "b200", "mi300x",
		"llama-3-8b", "llama-3.1-8b", "llama-3.1-70b", "llama-2-7b", "qwen2.5-7b", "qwen2.5-72b", "qwen3-8b", "mistral-7b", "mixtral-8x7b",
		"mistral-nemo-12b", "yi-34b", "llama-4-scout-17b-16e", "llama-4-scout-17b-16e-fp8"} {
		if !strings.Contains(out, name) {
			t.Errorf("--list lacks %s", name)
		}
	}
	code, out, _ = runGPU(t, "--list", "--output", "json")
	var c struct {
		GPUs   []map[string]any `json:"gpus"`
		Models []map[string]any `json:"models"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &c) != nil || len(c.GPUs) != 10 || len(c.Models) != 13 {
		t.Errorf("--list --output json: exit %d, %d GPUs, %d models", code, len(c.GPUs), len(c.Models))
	}
}

// TestGPUFlagsDocumented: every flag of `infscale gpu` is in docs/replica.md.
func TestGPUFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/replica.md")
	if err != nil {
		t.Skipf("docs/replica.md not readable: %v", err)
	}
	var names []string
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if _, ok := f.Tag.Lookup("embed"); ok {
				walk(f.Type)
				continue
			}
			if n := f.Tag.Get("name"); n != "" {
				names = append(names, n)
			}
		}
	}
	walk(reflect.TypeOf(GPUCmd{}))
	if len(names) < 20 {
		t.Fatalf("found only %d flags: %v", len(names), names)
	}
	for _, n := range names {
		if !strings.Contains(string(doc), "`--"+n+"`") {
			t.Errorf("docs/replica.md does not document --%s", n)
		}
	}
}

// TestGPUPD: --pd prints the pair's line (the reference replica at 10
// requests/s of 2,000-token prompts: 20,000 / 24,750 = 0.81 prefill replica
// busy; 2000 x 131,072 B = 262.1 MB of KV, 10.5 ms at 25 GB/s) and refuses a
// malformed spec, naming the flag.
func TestGPUPD(t *testing.T) {
	code, out, _ := runGPU(t, "--pd", "10,2000,200")
	if code != 0 || !strings.Contains(out, "prefill 0.81 replica busy") || !strings.Contains(out, "KV 262.1 MB per request, 10.5 ms at 25GB/s") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	// nvlink as simulate --pd takes it (it was "not a size"): the H100 SXM's
	// 450 GB/s moves the 262.1 MB in 262,144,000 / 450e9 = 0.58 ms; an L40S
	// has no NVLink and is refused.
	if code, out, stderr := runGPU(t, "--pd", "10,2000,200", "--kv-link", "nvlink"); code != 0 || !strings.Contains(out, "KV 262.1 MB per request, 0.6 ms at 450 GB/s (nvlink)") {
		t.Errorf("--kv-link nvlink: exit %d:\n%s%s", code, out, stderr)
	}
	if code, _, stderr := runGPU(t, "--pd", "10,2000,200", "--kv-link", "nvlink", "--gpu", "l40s"); code != 2 || !strings.Contains(stderr, "--kv-link nvlink: l40s has no NVLink") {
		t.Errorf("--kv-link nvlink --gpu l40s: exit %d, %q; want 2", code, stderr)
	}
	for _, bad := range [][]string{{"--pd", "10,2000"}, {"--pd", "x,1,1"}, {"--pd", "1,1,1", "--kv-link", "fast"}} {
		if code, _, stderr := runGPU(t, bad...); code != 2 || !strings.Contains(stderr, bad[len(bad)-2]) {
			t.Errorf("%v: exit %d, %q; want 2 naming %s", bad, code, stderr, bad[len(bad)-2])
		}
	}
}
