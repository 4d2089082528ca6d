package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Inputs that used to print a figure (or two errors) instead of one clear
// error: each exits 2 with exactly one line naming the flag and what is
// allowed.
func TestGPUInvalidEdges(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		// was: the parse error and then "--weight-load-rate: 0 is invalid".
		{[]string{"--weight-load-rate", "NaN"}, `--weight-load-rate: "NaN" is not a size`},
		{[]string{"--weight-load-rate", "1e400"}, `--weight-load-rate: "1e400" is not a size`},
		// was: a 400000-token context on a 396728-token cache printed a
		// step time for a sequence that cannot be admitted (and 1e11
		// tokens printed "0 output tokens/s").
		{[]string{"--context", "400000"}, "--context: 400000 tokens do not fit this replica's KV cache of 396728 tokens (allowed: 1 to 396728)"},
		{[]string{"--context", "99999999999"}, "--context: 99999999999 tokens do not fit"},
		// was: silently ignored under the default nominal accounting.
		{[]string{"--block-size", "7"}, "--block-size: applies to vllm accounting only"},
		// was: "model does not fit ... need at least 131072 bytes per token".
		{[]string{"--calibrated", "--block-size", "100000000"}, "--block-size: 100000000 is invalid (allowed: an integer from 1 to 65536)"},
		// was: accepted; 2 s and 185 MB building a per-batch-size table.
		{[]string{"--max-num-seqs", "99999999999999"}, "--max-num-seqs: 99999999999999 is invalid (allowed: an integer from 1 to 1048576)"},
		// was: "pod CPU idle +Inf%".
		{[]string{"--cpu-idle", "1e308"}, "--cpu-idle: 1e+308 is invalid (allowed: a number of cores from 0 to 10000)"},
		// the KV list, not the weight list (which has int4).
		{[]string{"--kv-dtype", "fp4"}, `--kv-dtype: unknown dtype "fp4" (allowed: auto, fp16, bf16, fp8, int8)`},
		// Kubernetes' smallest CPU quantity is 1m.
		{[]string{"--cpu-request", "1e-300"}, "--cpu-request: 1e-300 is invalid (allowed: a number of cores from 0.001 to 10000)"},
		// was: "decode step 35996400006.9 ms", a weight load of 160,000 s,
		// and (simulate) a cold start overflowing the recommended
		// policy's lookahead: "lookahead: -1h33m32.709551616s must be >= 0".
		{[]string{"--step-overhead", "9999h"}, "--step-overhead: 9999h0m0s is invalid (allowed: a duration >= 0 and below 10s)"},
		{[]string{"--weight-load-rate", "100kB"}, "--weight-load-rate: 1e+05 B/s is invalid (allowed: bytes per second that load the 16 GB of weights within a day"},
		{[]string{"--image-pull", "2562047h"}, "--image-pull: 2562047h0m0s is invalid (allowed: a duration from 0 to 24h0m0s (a day))"},
		// was: the --model error and then "--calibration: calibration
		// fitted for llama-3.1-8b on 1 x h100-sxm, not  on 4 x h100-sxm".
		{[]string{"--model", "llama-3-70b", "--tp", "4", "--calibration", "../../examples/vllm-0.21-h100-llama-3.1-8b.calibration.json"}, `--model: unknown model "llama-3-70b"`},
		{[]string{"--gpu", "h999", "--model", "llama-3.1-8b", "--calibration", "../../examples/vllm-0.21-h100-llama-3.1-8b.calibration.json"}, `--gpu: unknown GPU "h999"`},
	} {
		code, out, errs := runGPU(t, tc.args...)
		if code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing", tc.args, code, out)
		}
		if !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: stderr %q, want one line with %q", tc.args, errs, tc.want)
		}
	}
}

// The largest context that fits is accepted: 396728 tokens is the
// reference cache (floor(52e9 / 131072)), so the full batch is 1 sequence.
// Sub-0.1 ms steps print with two significant digits instead of "0.0".
func TestGPUEdgesAccepted(t *testing.T) {
	code, out, errs := runGPU(t, "--context", "396728")
	if code != 0 || !strings.Contains(out, "at batch 1 (396728-token contexts)") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runGPU(t, "--calibrated", "--block-size", "32")
	if code != 0 || !strings.Contains(out, "blocks of 32 tokens") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	// Llama-3-8B int4 on 32 MI300X (the most GPUs its 32 heads split over)
	// at batch 1: 8e9 × 0.5 B = 4e9 B of weights, plus KV 1000 tokens × 2 ×
	// 32 layers × 32 heads (8 KV heads replicated to one per GPU) × 128 × 2
	// B = 0.524e9 B; over 32 × 5.3e12 × 0.7 = 1.187e14 B/s: 0.038 ms, printed
	// with its digits rather than as 0.0.
	code, out, errs = runGPU(t, "--gpu", "mi300x", "--dtype", "int4", "--tp", "32", "--model", "llama-3-8b")
	if code != 0 || !strings.Contains(out, "decode step 0.038 ms at batch 1") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// TestSimulateColdStartBound: simulate with 292 years of image pull and
// warm-up names both flags, exit 2; their sum overflowed the recommended
// policy's lookahead (the cold start + 45 s) and the error blamed a
// negative lookahead and break-even the user never gave.
func TestSimulateColdStartBound(t *testing.T) {
	var outb, errb bytes.Buffer
	code := run(context.Background(), []string{"simulate", "--image-pull", "2562047h", "--warm-up", "2562047h"}, strings.NewReader(""), &outb, &errb)
	out, errs := outb.String(), errb.String()
	want := "--image-pull: 2562047h0m0s is invalid (allowed: a duration from 0 to 24h0m0s (a day))\n--warm-up: 2562047h0m0s is invalid"
	if code != exitInvalid || out != "" || !strings.Contains(errs, want) || strings.Contains(errs, "lookahead") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, errs, want)
	}
}

// TestWeightLoadRateBits: a weight load rate written in bits (1Gb, a
// storage or network link's rate) was read as bytes: --weight-load-rate
// 1Gb printed "weights 16 s at 1 GB/s" where 1 Gb/s (125 MB/s) loads the
// 16 GB in 128 s, a cold start 112 s short. It is refused as --kv-link
// refuses bits; 1GB and 125MB are the bytes they say (16e9 / 125e6 = 128 s,
// cold start 45 + 128 + 30 = 203 s).
func TestWeightLoadRateBits(t *testing.T) {
	for _, bits := range []string{"1Gb", "1gb", "500Mbps", "10 Gbit", "1Gb/s"} {
		for _, args := range [][]string{
			{"gpu", "--weight-load-rate", bits},
			{"simulate", "-q", "--weight-load-rate", bits},
		} {
			wantRefused(t, args, nil, "--weight-load-rate", "is in bits")
		}
	}
	code, out, errs := runGPU(t, "--weight-load-rate", "125MB")
	if code != 0 || !strings.Contains(out, "cold start 203 s = image 45 s + weights 128 s at 125 MB/s") {
		t.Errorf("--weight-load-rate 125MB: exit %d\n%s%s", code, out, errs)
	}
}

// TestGPUKVLinkNeedsPD: gpu --kv-link without --pd printed the replica
// block and ignored the link, where simulate refuses the same flags.
func TestGPUKVLinkNeedsPD(t *testing.T) {
	wantRefused(t, []string{"gpu", "--kv-link", "1GB"}, nil, "--kv-link needs --pd")
	if code, _, errs := runGPU(t, "--pd", "10,512,128", "--kv-link", "1.25GB"); code != 0 {
		t.Errorf("--pd with --kv-link: exit %d: %s", code, errs)
	}
}

// TestGPUListAlone: --list prints the catalogs and ignored every other
// flag, an unknown --model or an invalid --tp included (exit 0); such a
// flag is refused naming it. --output goes with --list.
func TestGPUListAlone(t *testing.T) {
	wantRefused(t, []string{"gpu", "--list", "--model", "nonexistent"}, nil, "--list prints the catalogs: --model would be ignored")
	wantRefused(t, []string{"gpu", "--list", "--tp", "3", "--context", "10"}, nil, "--list prints the catalogs: --context, --tp would be ignored")
	if code, out, errs := runGPU(t, "--list", "-o", "json"); code != 0 || !strings.HasPrefix(out, "{") {
		t.Errorf("--list -o json: exit %d: %s%s", code, out, errs)
	}
}

// TestSizeOverflow: a size whose number is finite but whose bytes pass
// float64 (1e300TB is 1e312 bytes) is refused as too large, not read as
// +Inf (which --weight-load-rate reported as "+Inf is invalid" and
// --max-held-bytes as "+Inf bytes", values the user never typed).
func TestSizeOverflow(t *testing.T) {
	for _, s := range []string{"1e300TB", "1e297TiB", "1e306kB"} {
		for name, parse := range map[string]func(string) (float64, error){"parseBytes": parseBytes, "parseLinkBytes": parseLinkBytes} {
			if v, err := parse(s); err == nil || !strings.Contains(err.Error(), "too large") {
				t.Errorf("%s(%q) = %v, %v, want too large", name, s, v, err)
			}
		}
	}
	if v, err := parseBytes("1e300TB"); err == nil || !strings.Contains(err.Error(), `"1e300TB" is too large`) {
		t.Errorf("1e300TB: %v, %v", v, err)
	}
	for s, want := range map[string]float64{"1e296TB": 1e308, "3.05GiB": 3.05 * (1 << 30), "4GB": 4e9, "80": 80e9} {
		if v, err := parseBytes(s); err != nil || v != want {
			t.Errorf("parseBytes(%q) = %v, %v, want %v", s, v, err, want)
		}
	}
}
