package replica

import (
	"math"
	"testing"
	"time"
)

// Recent vLLM (0.21-0.23) on one H100, fitted by hand on three published
// points of Llama-3.1-8B (prompt and output lengths unstated; vllm bench
// serve's random defaults, 1024 in / 128 out, assumed) and one of
// Llama-2-7B:
//
//   - TPOT at concurrency 1, 6.48 ms, is one decode step over the weights
//     (8,030,261,248 x 2 B = 16.061 GB) and 1088 tokens of KV (0.1426 GB,
//     read at the KV efficiency below: 0.070 ms): 16.061 GB / (3.35 TB/s x
//     e) = 6.410 ms with no step overhead gives e = 0.7479.
//   - The KV read efficiency, 0.61, from the only KV-heavy vLLM point
//     (point 8: Llama-2-7B, vLLM 0.15.1, 1 req/s, ITL 15.2 ms; its step
//     reads 18-20 GB of KV against 13.5 GB of weights): steadyITL gives
//     15.30 ms at 0.61 (the running batch is a whole number, so the ITL
//     jumps by 0.5 ms between 0.611 and 0.612; 0.61 is the round value
//     below the jump).
//   - TPOT at concurrency 16, 10.94 ms, is the step at batch 16 (16.061 GB
//     at e: 6.410 ms; 2.282 GB of KV at 0.61: 1.117 ms; 7.527 ms) plus 15
//     other clients' prefills mixed into 127 intervals (ClosedLoopTPOT):
//     15 / 127 x (prefill(1039) - 7.527) = 3.413 ms gives prefill(1039) =
//     36.43 ms, 28,520 tokens/s: MFU = 2 x 8.0303e9 x 28,520 / 990e12 =
//     0.4627.
//   - The TTFT floor: Qwen3-8B at concurrency 1 (vLLM 0.11, ShareGPT
//     lengths) took 60 ms where the prefill of its prompts took the issue's
//     simulated 11 ms: a request overhead of 49 ms.
//
// These four are in sample; every other point is out of sample.
const (
	recentEfficiency      = 0.7479
	recentKVEfficiency    = 0.61
	recentMFU             = 0.4627
	recentRequestOverhead = 49 * time.Millisecond
)

func recent(t *testing.T, gpu, model string) *Replica {
	t.Helper()
	c := Calibrated()
	var err error
	if c.GPU, err = LookupGPU(gpu); err != nil {
		t.Fatal(err)
	}
	if c.Model, err = LookupModel(model); err != nil {
		t.Fatal(err)
	}
	c.BandwidthEfficiency, c.KVBandwidthEfficiency, c.MFU, c.StepOverhead, c.RequestOverhead = recentEfficiency, recentKVEfficiency, recentMFU, 0, recentRequestOverhead
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFidelityRecentVLLM: the recent-vLLM constants against published
// points within 15%: the rise of TPOT with concurrency (1, 4, 16), the TTFT
// floor, another GPU, other models and releases. docs/evaluation/ACCURACY.md carries
// the table.
func TestFidelityRecentVLLM(t *testing.T) {
	h100 := recent(t, "h100-sxm", "llama-3.1-8b")
	qwen3 := recent(t, "h100-sxm", "qwen3-8b")
	for _, p := range []struct {
		name     string
		sample   string
		measured float64 // ms
		model    float64 // ms
	}{
		{"Llama-3.1-8B, H100, concurrency 1, TPOT (vLLM 0.21-0.23)", "in", 6.48, h100.ClosedLoopTPOT(1, 1024, 128) * 1e3},
		{"same, concurrency 4", "out", 6.59, h100.ClosedLoopTPOT(4, 1024, 128) * 1e3},
		{"same, concurrency 16", "in", 10.94, h100.ClosedLoopTPOT(16, 1024, 128) * 1e3},
		{"Llama-3.1-8B, A100-40GB, batch 1, 1024 in / 128 out, TPOT", "out", 13.3, recent(t, "a100-40gb", "llama-3.1-8b").ClosedLoopTPOT(1, 1024, 128) * 1e3},
		{"Qwen3-8B, H100, concurrency 1, TTFT (vLLM 0.11, ShareGPT)", "in", 60, (qwen3.RequestOverhead() + 0.011) * 1e3},
		{"Qwen3-8B, H100, concurrency 4, TPOT (vLLM 0.11; point 6)", "out", 7.38, qwen3.ClosedLoopTPOT(4, 1024, 128) * 1e3},
		{"Qwen2.5-7B, H100, ~6 req/s, ITL (vLLM 0.15.1; point 7)", "out", 7.02, steadyITL(recent(t, "h100-sxm", "qwen2.5-7b"), 6, 750, 251)},
		{"Llama-2-7B, H100, 1 req/s, ITL (vLLM 0.15.1; point 8)", "in", 15.2, steadyITL(recent(t, "h100-sxm", "llama-2-7b"), 1, 1034, 1448)},
	} {
		e := (p.model - p.measured) / p.measured * 100
		t.Logf("%-3s %-62s measured %6.2f ms model %6.2f ms %+5.1f%%", p.sample, p.name, p.measured, p.model, e)
		if math.Abs(e) > 15 {
			t.Errorf("%s: model %.2f ms vs measured %.2f ms: %+.1f%% beyond 15%%", p.name, p.model, p.measured, e)
		}
	}
}

// llama2_13b is Llama-2-13B's shape (meta-llama/Llama-2-13b-hf
// config.json: 40 layers, hidden 5120, intermediate 13824, 40 heads and
// 40 KV heads of 128, vocabulary 32000; 13,015,864,320 parameters), for the
// LMDeploy points; it is not in the catalog.
var llama2_13b = Model{Name: "llama-2-13b", Layers: 40, Hidden: 5120, Intermediate: 13824, Heads: 40, KVHeads: 40, HeadDim: 128, Vocab: 32000, NominalParams: 13e9, DType: DTypeFP16}

// turboMindKVEfficiency is the KV read efficiency fitted by hand on one
// LMDeploy point (Llama-2-7B, A100-80GB, batch 16, 2048 in / 2048 out:
// median token latency 25 ms), with the weights at recentEfficiency: the
// median step reads 6,738,415,616 x 2 B = 13.477 GB of weights, 13.477 GB /
// (2.039 TB/s x 0.7479) = 8.837 ms, and 16 x (2048 + 1024) x 524,288 B =
// 25.770 GB of KV in the remaining 16.163 ms: 1.5944 TB/s, 0.782 of peak.
const turboMindKVEfficiency = 0.782

// lmdeployPoint is a row of LMDeploy's static inference benchmark
// (docs/en/benchmark/a100_fp16.md, LMDeploy v0.1.0a1, TurboMind, one
// A100-80G, FP16): batch clients each sending prompt-token prompts for
// output tokens; ms is the 50% token latency (s, rounded to 1 ms), the
// median interval between output tokens: a decode step of the whole batch
// halfway through its output.
type lmdeployPoint struct {
	model          Model
	batch, in, out int
	ms             float64
}

func (p lmdeployPoint) predict(t *testing.T, kv float64) float64 {
	t.Helper()
	c := Calibrated()
	c.GPU, _ = LookupGPU("a100-80gb")
	c.Model = p.model
	c.BandwidthEfficiency, c.KVBandwidthEfficiency, c.MFU, c.StepOverhead = recentEfficiency, kv, recentMFU, 0
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return r.StepTime(p.batch, int64(p.batch)*int64(p.in+p.out/2)) * 1e3
}

// TestFidelityKVRead: is the KV read efficiency a property of the model,
// or of the engine's attention kernel? Published KV-heavy points (each
// step reads more KV than weights) from two engines, docs/evaluation/ACCURACY.md's
// "The KV read efficiency" table:
//
//   - fitted on one LMDeploy (TurboMind) point, 0.782 predicts that
//     engine's other KV-heavy points out of sample within 5%, another
//     model's (Llama-2-13B) included;
//   - vLLM's 0.61 (fitted on point 8) carried to TurboMind is too slow by
//     more than 10% at every one of them, and TurboMind's 0.782 carried to
//     vLLM's point 8 too fast by more than 25%: the efficiency belongs to
//     the engine, so a calibration carries it (kv_bandwidth_efficiency) and
//     the default stays the weights'.
//
// LMDeploy rows whose whole KV (batch x (in + out) tokens) would not fit
// beside the weights in 80 GB are left out (the batch could not all run).
func TestFidelityKVRead(t *testing.T) {
	l7, _ := LookupModel("llama-2-7b")
	fit := lmdeployPoint{l7, 16, 2048, 2048, 25}
	if got := fit.predict(t, turboMindKVEfficiency); math.Abs(got-fit.ms)/fit.ms > 0.01 {
		t.Fatalf("fitted point: %.2f ms, want %.0f", got, fit.ms)
	}
	heavy := []lmdeployPoint{{l7, 16, 2048, 128, 20}, {l7, 32, 128, 2048, 21}, {l7, 32, 2048, 128, 31}, {llama2_13b, 16, 2048, 128, 33}}
	for _, p := range heavy {
		own := p.predict(t, turboMindKVEfficiency)
		vllm := p.predict(t, recentKVEfficiency)
		e1, e2 := (own-p.ms)/p.ms*100, (vllm-p.ms)/p.ms*100
		t.Logf("out %s b%d %d/%d: measured %.0f ms, TurboMind's KV efficiency %.2f ms (%+.1f%%), vLLM's %.2f ms (%+.1f%%)", p.model.Name, p.batch, p.in, p.out, p.ms, own, e1, vllm, e2)
		if math.Abs(e1) > 5 {
			t.Errorf("%+v with the engine's own KV efficiency: %+.1f%%, want within 5%%", p, e1)
		}
		if e2 < 10 {
			t.Errorf("%+v with vLLM's KV efficiency: %+.1f%%, want more than 10%% too slow", p, e2)
		}
	}
	// The rows with less KV than weights: the weights' efficiency carries
	// to TurboMind on A100 (the 1 ms rounding is up to 11% of a 9 ms step).
	for _, p := range []lmdeployPoint{
		{l7, 1, 1, 128, 9}, {l7, 1, 128, 128, 10}, {l7, 1, 128, 2048, 10}, {l7, 1, 2048, 128, 10}, {l7, 1, 2048, 2048, 11},
		{l7, 16, 1, 128, 10}, {l7, 16, 128, 128, 11}, {l7, 16, 128, 2048, 15},
		{l7, 32, 1, 128, 11}, {l7, 32, 128, 128, 12}, {l7, 64, 1, 128, 12}, {l7, 64, 128, 128, 14},
	} {
		def, own, vllm := p.predict(t, 0), p.predict(t, turboMindKVEfficiency), p.predict(t, recentKVEfficiency)
		e := (def - p.ms) / p.ms * 100
		t.Logf("out %s b%d %d/%d (KV-light): measured %.0f ms, default %+.1f%%, TurboMind's %+.1f%%, vLLM's %+.1f%%", p.model.Name, p.batch, p.in, p.out, p.ms, e, (own-p.ms)/p.ms*100, (vllm-p.ms)/p.ms*100)
		if math.Abs(e) > 15 {
			t.Errorf("%+v at the default: %+.1f%%, want within 15%%", p, e)
		}
	}
	c := Calibrated()
	c.GPU, _ = LookupGPU("h100-sxm")
	c.Model = l7
	c.BandwidthEfficiency, c.KVBandwidthEfficiency, c.MFU, c.StepOverhead = recentEfficiency, turboMindKVEfficiency, recentMFU, 0
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	p8 := steadyITL(r, 1, 1034, 1448)
	t.Logf("out point 8 (vLLM 0.15.1) with TurboMind's KV efficiency: %.2f ms against 15.2 (%+.1f%%)", p8, (p8-15.2)/15.2*100)
	if p8 > 15.2*0.75 {
		t.Errorf("point 8 with TurboMind's KV efficiency: %.2f ms, want more than 25%% below 15.2", p8)
	}
	// An older vLLM (0.4.2, H800 = the H100's 3.35 TB/s, Llama-3-8B, batch
	// 1, a 204,790-token prompt: 26.8 GB of KV a step against 16.1 GB of
	// weights) took 30 ms a token: its KV read, (30 - 8.66 ms at a 1k
	// prompt) for 26.71 GB more, ran at 1.25 TB/s, 0.37 of peak. Neither
	// later engine's efficiency reaches it: a miss of more than 25%.
	old := recent(t, "h100-sxm", "llama-3-8b")
	got := old.StepTime(1, 204790) * 1e3
	t.Logf("out vLLM 0.4.2, Llama-3-8B, 200k prompt, batch 1: measured 30 ms, model %.2f ms (%+.1f%%)", got, (got-30)/30*100)
	if got > 30*0.75 {
		t.Errorf("vLLM 0.4.2 at 200k: %.2f ms, want more than 25%% below 30 (its KV read was slower still)", got)
	}
}

// TestClosedLoopTPOT by hand on the reference replica: at concurrency 8
// with 512-token prompts and 129 output tokens, the step at batch 8 over
// 8 x (512 + 64) = 4608 tokens is 6.823 + 4608 x 0.0000559 = 7.081 ms; a
// prefill of 512 + 7 tokens takes 519 / 24750 = 20.97 ms; 7 of 128
// intervals carry one: 7.081 + 7/128 x (20.97 - 7.081) = 7.840 ms.
func TestClosedLoopTPOT(t *testing.T) {
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.ClosedLoopTPOT(8, 512, 129); math.Abs(got-0.007840) > 0.000005 {
		t.Errorf("TPOT %.4f ms, want 7.840 ms", got*1e3)
	}
	if got, want := r.ClosedLoopTPOT(1, 512, 129), r.StepTime(1, 576); got != want {
		t.Errorf("concurrency 1: %v, want one step %v", got, want)
	}
}

// TestRecentCalibrationFile: the shipped calibration file holds the same
// constants and applies to the calibrated mode.
func TestRecentCalibrationFile(t *testing.T) {
	cal, err := LoadCalibration("../../examples/vllm-0.21-h100-llama-3.1-8b.calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	c := Calibrated()
	c.Model, _ = LookupModel("llama-3.1-8b")
	if c, err = cal.Apply(c); err != nil {
		t.Fatal(err)
	}
	if c.BandwidthEfficiency != recentEfficiency || c.KVBandwidthEfficiency != recentKVEfficiency || c.MFU != recentMFU || c.RequestOverhead != recentRequestOverhead || c.StepOverhead != 0 {
		t.Errorf("file constants %+v differ from the test's", c)
	}
}
