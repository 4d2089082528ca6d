package replica

import (
	"math"
	"testing"
)

// fidelityPoint is one published vLLM measurement and how the calibrated
// model predicts it. docs/evaluation/ACCURACY.md carries the same table.
type fidelityPoint struct {
	name     string
	source   string
	measured float64                    // in the unit of the measurement
	unit     string                     // "ms" or "GiB" or "blocks"
	predict  func(t *testing.T) float64 // the model's figure, same unit
}

// calibrated returns the Calibrated replica with the named GPU and model.
func calibrated(t *testing.T, gpu, model string) *Replica {
	t.Helper()
	return calibratedTP(t, gpu, model, 1)
}

// calibratedTP is calibrated at tensor-parallel degree tp.
func calibratedTP(t *testing.T, gpu, model string, tp int) *Replica {
	t.Helper()
	c := Calibrated()
	c.TP = tp
	var err error
	if c.GPU, err = LookupGPU(gpu); err != nil {
		t.Fatal(err)
	}
	if c.Model, err = LookupModel(model); err != nil {
		t.Fatal(err)
	}
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// latencyBenchmark predicts vLLM's benchmark_latency end-to-end time in ms:
// one prefill of batch × in tokens (which yields the first token) then
// out − 1 decode steps of the whole batch, each over the context so far.
func latencyBenchmark(r *Replica, batch, in, out int) float64 {
	total := r.PrefillTime(batch * in)
	for i := 1; i < out; i++ {
		total += r.StepTime(batch, int64(batch*(in+i)))
	}
	return total * 1e3
}

// steadyITL predicts the inter-token latency in ms of an open-loop serving
// benchmark at rate req/s with fixed prompt and output lengths: by Little's
// law the running count is N = rate × (out × step), each sequence holding on
// average prompt + out/2 tokens of context; iterate to the fixed point.
func steadyITL(r *Replica, rate float64, prompt, out int) float64 {
	n := 1.0
	var step float64
	for range 100 {
		b := int(math.Max(1, math.Round(n)))
		step = r.StepTime(b, int64(float64(b)*(float64(prompt)+float64(out)/2)))
		n = rate * (float64(out)*step + r.PrefillTime(prompt))
	}
	return step * 1e3
}

func fidelityPoints() []fidelityPoint {
	return []fidelityPoint{
		{
			name:     "Llama-3.1-8B, H100, batch 8, 32 in / 128 out, end-to-end",
			source:   "vLLM nightly latency benchmark (latency_llama8B_tp1), buildkite.com/vllm/performance-benchmark",
			measured: 997.5, unit: "ms",
			predict: func(t *testing.T) float64 {
				return latencyBenchmark(calibrated(t, "h100-sxm", "llama-3.1-8b"), 8, 32, 128)
			},
		},
		{
			name:     "Llama-3.1-8B, A100-80GB, batch 8, 32 in / 128 out, end-to-end",
			source:   "vLLM nightly latency benchmark (latency_llama8B_tp1)",
			measured: 1579, unit: "ms",
			predict: func(t *testing.T) float64 {
				return latencyBenchmark(calibrated(t, "a100-80gb", "llama-3.1-8b"), 8, 32, 128)
			},
		},
		{
			name:     "Llama-3.1-8B, H200, batch 8, 32 in / 128 out, end-to-end",
			source:   "vLLM nightly latency benchmark (latency_llama8B_tp1), buildkite build 9515: mean 833.4 ms",
			measured: 834, unit: "ms",
			predict: func(t *testing.T) float64 { return latencyBenchmark(calibrated(t, "h200", "llama-3.1-8b"), 8, 32, 128) },
		},
		{
			name:     "Mixtral-8x7B, 2 x H200 (TP 2), batch 8, 32 in / 128 out, end-to-end",
			source:   "vLLM nightly latency benchmark (latency_mixtral8x7B_tp2), buildkite build 9515: mean 1917.44 ms",
			measured: 1917.44, unit: "ms",
			predict: func(t *testing.T) float64 {
				return latencyBenchmark(calibratedTP(t, "h200", "mixtral-8x7b", 2), 8, 32, 128)
			},
		},
		{
			name:     "Llama-3-70B, 4 x H200 (TP 4), batch 8, 32 in / 128 out, end-to-end",
			source:   "vLLM nightly latency benchmark (latency_llama70B_tp4), buildkite build 9515: mean 2077.53 ms",
			measured: 2077.53, unit: "ms",
			predict: func(t *testing.T) float64 {
				return latencyBenchmark(calibratedTP(t, "h200", "llama-3.1-70b", 4), 8, 32, 128)
			},
		},
		{
			name:     "Qwen3-8B BF16, H100, concurrency 4, TPOT",
			source:   "vLLM 0.11.0 serving benchmark (random 1024 in / 128 out assumed: vllm bench serve defaults)",
			measured: 7.38, unit: "ms",
			predict: func(t *testing.T) float64 {
				r := calibrated(t, "h100-sxm", "qwen3-8b")
				// 4 sequences, each on average 1024 + 128/2 = 1088 tokens of context.
				return r.StepTime(4, 4*1088) * 1e3
			},
		},
		{
			name:     "Qwen2.5-7B, H100, ~6 req/s, 750 in / 251 out, ITL",
			source:   "vLLM 0.15.1 serving benchmark",
			measured: 7.02, unit: "ms",
			predict: func(t *testing.T) float64 { return steadyITL(calibrated(t, "h100-sxm", "qwen2.5-7b"), 6, 750, 251) },
		},
		{
			name:     "Llama-2-7B, H100, 1 req/s, 1034 in / 1448 out, ITL",
			source:   "vLLM 0.15.1 serving benchmark (same stack as Qwen2.5-7B)",
			measured: 15.2, unit: "ms",
			predict: func(t *testing.T) float64 { return steadyITL(calibrated(t, "h100-sxm", "llama-2-7b"), 1, 1034, 1448) },
		},
		{
			name:     "Llama-2-7B, H100, utilisation 0.9, KV cache memory",
			source:   "vLLM memory profiler log: 12.55 GiB weights leave 56.18 GiB of KV cache",
			measured: 56.18, unit: "GiB",
			predict: func(t *testing.T) float64 { return calibrated(t, "h100-sxm", "llama-2-7b").KVFreeBytes() / gib },
		},
		{
			name:     "Llama-2-7B, H100, utilisation 0.9, KV blocks of 16 tokens",
			source:   "vLLM log: # GPU blocks 7191",
			measured: 7191, unit: "blocks",
			predict: func(t *testing.T) float64 { return float64(calibrated(t, "h100-sxm", "llama-2-7b").KVBlocks()) },
		},
	}
}

// TestFidelity checks every published point within 10% under Calibrated.
func TestFidelity(t *testing.T) {
	for _, p := range fidelityPoints() {
		t.Run(p.name, func(t *testing.T) {
			got := p.predict(t)
			errPct := (got - p.measured) / p.measured * 100
			t.Logf("measured %.2f %s, model %.2f %s, error %+.1f%% (%s)", p.measured, p.unit, got, p.unit, errPct, p.source)
			if math.Abs(errPct) > 10 {
				t.Errorf("model %.2f %s vs measured %.2f %s: error %+.1f%% exceeds 10%%", got, p.unit, p.measured, p.unit, errPct)
			}
		})
	}
}

// TestCalibratedWeights checks the exact weights vLLM reports: Llama-2-7B's
// 6,738,415,616 parameters × 2 bytes = 13,476,831,232 B = 12.551 GiB, the
// "12.55 GiB" of the profiler log.
func TestCalibratedWeights(t *testing.T) {
	r := calibrated(t, "h100-sxm", "llama-2-7b")
	near(t, "WeightsBytes", r.WeightsBytes(), 13476831232, 0.5)
}
