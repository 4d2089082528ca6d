package replica

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The docs/design.md reference block, figure by figure. Each expected value is
// worked out by hand from docs/design.md's inputs (8e9 parameters, FP16, 80 GB,
// 3.35 TB/s, 990 TFLOPS, utilisation 0.9, 4 GB reserve, MFU 0.4, bandwidth
// efficiency 0.7, 131072 KV bytes per token).

func reference(t testing.TB) *Replica {
	t.Helper()
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatalf("New(DefaultConfig()): %v", err)
	}
	return r
}

func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v ± %v", name, got, want, tol)
	}
}

func TestReferenceWeights(t *testing.T) {
	r := reference(t)
	// 8e9 parameters × 2 bytes (FP16) = 16e9 bytes = 16.0 GB.
	near(t, "WeightsBytes", r.WeightsBytes(), 16e9, 1)
}

func TestReferenceKV(t *testing.T) {
	r := reference(t)
	// K and V × 32 layers × 8 KV heads × 128 head dim × 2 bytes = 131072.
	near(t, "KVBytesPerToken", r.KVBytesPerToken(), 131072, 0)
	// 80 GB × 0.9 − 16 GB weights − 4 GB reserve = 72 − 20 = 52 GB.
	near(t, "KVFreeBytes", r.KVFreeBytes(), 52e9, 1)
	// floor(52e9 / 131072) = floor(396728.5) = 396728 tokens.
	if got := r.KVCapacityTokens(); got != 396728 {
		t.Errorf("KVCapacityTokens = %d, want 396728", got)
	}
}

func TestReferencePrefill(t *testing.T) {
	r := reference(t)
	// 990e12 FLOP/s × 0.4 MFU / (2 × 8e9 FLOP per token) = 396e12 / 16e9 = 24750 tokens/s.
	near(t, "PrefillTokensPerSecond", r.PrefillTokensPerSecond(), 24750, 1e-6)
	// 1000 tokens / 24750 tokens/s = 0.040404 s.
	near(t, "PrefillTime(1000)", r.PrefillTime(1000), 1000.0/24750, 1e-12)
}

func TestReferenceDecode(t *testing.T) {
	r := reference(t)
	// Effective bandwidth 3.35e12 × 0.7 = 2.345e12 B/s.
	// Batch 1, 1000-token context: (16e9 + 1000 × 131072) / 2.345e12
	// = 16.131072e9 / 2.345e12 = 6.8789 ms, printed 6.9 ms.
	near(t, "StepTime(1, 1000)", r.StepTime(1, 1000), 16.131072e9/2.345e12, 1e-12)
	// Batch 64, 64 × 1000 = 64000 context tokens: 64000 × 131072 = 8.388608e9;
	// (16e9 + 8.388608e9) / 2.345e12 = 10.4003 ms, printed 10.4 ms.
	step64 := r.StepTime(64, 64000)
	near(t, "StepTime(64, 64000)", step64, 24.388608e9/2.345e12, 1e-12)
	// 64 tokens per step / 10.4003 ms = 6153.6, printed 6154 output tokens/s.
	if got := math.Round(64 / step64); got != 6154 {
		t.Errorf("output tokens/s at batch 64 = %v, want 6154", got)
	}
	// Compute-bound floor stays below: 64 × 16e9 FLOP / 396e12 = 2.59 ms < 10.4 ms.
	if r.MaxBatch() != 64 {
		t.Errorf("MaxBatch = %d, want 64 (max-num-seqs)", r.MaxBatch())
	}
	if r.StepTime(0, 0) != 0 {
		t.Errorf("StepTime(0, 0) = %v, want 0", r.StepTime(0, 0))
	}
}

func TestReferenceColdStart(t *testing.T) {
	r := reference(t)
	// 45 s image + 16e9 B / 1e9 B/s = 16 s + 30 s warm-up = 91 s.
	near(t, "WeightLoadTime", r.WeightLoadTime(), 16, 1e-9)
	near(t, "ColdStart", r.ColdStart(), 91, 1e-9)
}

func TestReferenceCPU(t *testing.T) {
	r := reference(t)
	// Idle: 0.2 core / 4 cores = 5%.
	near(t, "CPUPercent(0)", r.CPUPercent(0), 5, 1e-9)
	// Batch 1: (0.2 idle + 1 engine + 0.01 × 1) / 4 = 1.21 / 4 = 30.25%, printed 30%.
	near(t, "CPUPercent(1)", r.CPUPercent(1), 30.25, 1e-9)
	// Batch 64: (0.2 + 1 + 0.01 × 64) / 4 = 1.84 / 4 = 46%.
	near(t, "CPUPercent(64)", r.CPUPercent(64), 46, 1e-9)
}

// TestDurationBounds: a step term is refused at a calibration file's bound
// for it (step overhead below 10 s, request overhead below 600 s), each
// part of a cold start at more than a day, and a weight load rate that
// loads the reference's 16e9 bytes in more than 86,400 s (below
// 16e9 / 86400 = 185,185 B/s: 1e5 B/s takes 160,000 s). 292 years of
// image pull and warm-up overflowed the recommended policy's lookahead,
// the cold start + 45 s, into a negative time.Duration.
func TestDurationBounds(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.StepOverhead = 10 * time.Second }, "step-overhead: 10s is invalid (allowed: a duration >= 0 and below 10s)"},
		{func(c *Config) { c.RequestOverhead = 10 * time.Minute }, "request-overhead: 10m0s is invalid (allowed: a duration >= 0 and below 10m0s)"},
		{func(c *Config) { c.ImagePull = 24*time.Hour + time.Second }, "image-pull: 24h0m1s is invalid (allowed: a duration from 0 to 24h0m0s (a day))"},
		{func(c *Config) { c.WarmUp = 2562047 * time.Hour }, "warm-up: 2562047h0m0s is invalid"},
		{func(c *Config) { c.WeightLoadBytesPerSecond = 1e5 }, "weight-load-rate: 1e+05 B/s is invalid (allowed: bytes per second that load the 16 GB of weights within a day (1.852e+05 B/s or more; this one takes 1.6e+05 s))"},
	} {
		c := DefaultConfig()
		tc.set(&c)
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v; want %q", err, tc.want)
		}
	}
	// A day of each part, and 2e5 B/s (80,000 s of weights), are replicas.
	c := DefaultConfig()
	c.ImagePull, c.WarmUp, c.WeightLoadBytesPerSecond = 24*time.Hour, 24*time.Hour, 2e5
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "ColdStart", r.ColdStart(), 86400+80000+86400, 1e-6)
}
