package replica

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestModelParams checks the shape-derived parameter counts against the
// figures the model publishers give (safetensors totals on the Hugging Face
// model pages, or the model cards' rounded figures).
func TestModelParams(t *testing.T) {
	for _, tc := range []struct {
		model  string
		want   float64 // published total
		tol    float64 // absolute: 0 for exact totals, half the last digit for rounded ones
		source string
	}{
		// Llama-2-7b-hf: 6,738,415,616 (safetensors total on the model page).
		// By hand: embed+lm_head 2 × 32000 × 4096 = 262,144,000; per layer
		// 4 × 4096² + 3 × 4096 × 11008 + 2 × 4096 = 67,108,864 + 135,266,304
		// + 8,192 = 202,383,360; × 32 = 6,476,267,520; + 4096 final norm.
		{"llama-2-7b", 6738415616, 0, "HF safetensors total"},
		// Meta-Llama-3-8B: 8,030,261,248.
		{"llama-3-8b", 8030261248, 0, "HF safetensors total"},
		{"llama-3.1-8b", 8030261248, 0, "HF safetensors total"},
		// Llama-3.1-70B: 70,553,706,496.
		{"llama-3.1-70b", 70553706496, 0, "HF safetensors total"},
		// Mistral-7B-v0.1: 7,241,732,096.
		{"mistral-7b", 7241732096, 0, "HF safetensors total"},
		// Qwen2.5-7B-Instruct model card: "Number of Parameters: 7.61B"
		// (truncated; the Hugging Face page rounds the same total to 7.62B).
		{"qwen2.5-7b", 7.61e9, 0.01e9, "model card"},
		// Qwen2.5-72B-Instruct model card: "Number of Parameters: 72.7B".
		{"qwen2.5-72b", 72.7e9, 0.05e9, "model card"},
		// Qwen3-8B model card: "Number of Parameters: 8.2B".
		{"qwen3-8b", 8.2e9, 0.05e9, "model card"},
		// Mixtral: "46.7B total parameters" (mistral.ai/news/mixtral-of-experts).
		{"mixtral-8x7b", 46.7e9, 0.05e9, "Mistral announcement"},
		// Mistral-Nemo-Instruct-2407: "12.2B params" on the Hugging Face page.
		{"mistral-nemo-12b", 12.2e9, 0.05e9, "HF page"},
		// Yi-34B: "34.4B params" on the Hugging Face page.
		{"yi-34b", 34.4e9, 0.05e9, "HF page"},
		// Llama 4 Scout: "109B total parameters" (Meta's model card), which
		// counts the vision encoder and projector the text model lacks; by
		// hand the text model is 48 × (attention 62,924,800 + norms 10,240 +
		// router 81,920 + shared expert 125,829,120 + 16 experts ×
		// 125,829,120) + 2 × 202,048 × 5,120 + 5,120 = 107.8B.
		{"llama-4-scout-17b-16e", 107.8e9, 0.05e9, "by hand from config.json (card: 109B with vision)"},
	} {
		m, err := LookupModel(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Params(); math.Abs(got-tc.want) > tc.tol {
			t.Errorf("%s Params = %.0f, want %.0f ± %.0f (%s)", tc.model, got, tc.want, tc.tol, tc.source)
		}
	}
	// Mixtral active: "only uses 12.9B per token": 32 layers × (attention
	// 41,943,040 + norms 8,192 + router 32,768 + 2 experts × 176,160,768)
	// + 262,148,096 embeddings = 12,879,925,248.
	m, _ := LookupModel("mixtral-8x7b")
	if got := m.ActiveParams(); math.Abs(got-12.9e9) > 0.05e9 {
		t.Errorf("mixtral ActiveParams = %.0f, want 12.9e9", got)
	}
	// Llama 4 Scout: "17B active parameters" (model card): 48 × (attention
	// 62,924,800 + norms 10,240 + router 81,920 + shared and one routed
	// expert 2 × 125,829,120) + embeddings 2,068,976,640 = 17.17B.
	s, _ := LookupModel("llama-4-scout-17b-16e")
	if got := s.ActiveParams(); math.Abs(got-17.17e9) > 0.01e9 {
		t.Errorf("scout ActiveParams = %.0f, want 17.17e9", got)
	}
	d, _ := LookupModel("llama-3-8b")
	if d.ActiveParams() != d.Params() {
		t.Errorf("dense model ActiveParams %v != Params %v", d.ActiveParams(), d.Params())
	}
}

func TestKVBytesPerToken(t *testing.T) {
	for _, tc := range []struct {
		model string
		kv    DType
		want  float64
	}{
		{"llama-3-8b", DTypeFP16, 131072},   // 2 × 32 × 8 × 128 × 2
		{"llama-2-7b", DTypeFP16, 524288},   // 2 × 32 × 32 × 128 × 2
		{"qwen2.5-7b", DTypeBF16, 57344},    // 2 × 28 × 4 × 128 × 2
		{"qwen3-8b", DTypeBF16, 147456},     // 2 × 36 × 8 × 128 × 2
		{"llama-3.1-70b", DTypeFP8, 163840}, // 2 × 80 × 8 × 128 × 1
	} {
		m, _ := LookupModel(tc.model)
		if got := m.KVBytesPerToken(tc.kv); got != tc.want {
			t.Errorf("%s KVBytesPerToken(%s) = %v, want %v", tc.model, tc.kv, got, tc.want)
		}
	}
}

func TestLookup(t *testing.T) {
	if m, err := LookupModel("meta-llama/Llama-3.1-8B-Instruct"); err != nil || m.Name != "llama-3.1-8b" {
		t.Errorf("LookupModel(HF repo) = %v, %v", m.Name, err)
	}
	if g, err := LookupGPU("H100"); err != nil || g.Name != "h100-sxm" {
		t.Errorf("LookupGPU(H100) = %v, %v", g.Name, err)
	}
	_, err := LookupGPU("v100")
	if err == nil || !strings.Contains(err.Error(), "h100-sxm") {
		t.Errorf("LookupGPU(v100) error %v should list the allowed names", err)
	}
	_, err = LookupModel("gpt-5")
	if err == nil || !strings.Contains(err.Error(), "llama-3-8b") {
		t.Errorf("LookupModel(gpt-5) error %v should list the allowed names", err)
	}
	if _, err := ParseDType("float16"); err != nil {
		t.Error(err)
	}
	if _, err := ParseDType("fp4"); err == nil || !strings.Contains(err.Error(), "int4") {
		t.Errorf("ParseDType(fp4) error %v should list the allowed names", err)
	}
	if len(GPUs()) < 10 || len(Models()) < 9 {
		t.Errorf("catalogs too small: %d GPUs, %d models", len(GPUs()), len(Models()))
	}
}

// TestTensorParallelDivides: vLLM shards the attention heads evenly and
// the KV heads evenly or by whole replication. Llama-3-8B (32 heads, 8 KV
// heads) takes 1, 2, 4, 8, 16, 32; Qwen2.5-7B (28 heads, 4 KV heads) takes
// 1, 2, 4 (7 and 14 divide 28 but split 4 KV heads unevenly; 28 = 7 × 4
// replicates them 7 times, as vLLM allows).
func TestTensorParallelDivides(t *testing.T) {
	for _, tc := range []struct {
		model string
		ok    []int
		bad   []int
	}{
		{"llama-3-8b", []int{1, 2, 4, 8, 16, 32}, []int{3, 5, 6, 12, 64}},
		// 28 heads and 4 KV heads allow 28; its MLP (18,944 = 2^8 x 74) does not.
		{"qwen2.5-7b", []int{1, 2, 4}, []int{3, 7, 8, 14, 28}},
		// Llama 4 Scout: 40 heads, 8 KV heads allow 40; its shared expert's 8,192 does not.
		{"llama-4-scout-17b-16e", []int{1, 2, 4, 8}, []int{5, 10, 20, 40}},
	} {
		m, err := LookupModel(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range tc.ok {
			c := DefaultConfig()
			c.Model, c.TP = m, tp
			if err := c.Validate(); err != nil {
				t.Errorf("%s tp %d: %v, want accepted", tc.model, tp, err)
			}
		}
		for _, tp := range tc.bad {
			c := DefaultConfig()
			c.Model, c.TP = m, tp
			err := c.Validate()
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "tp" {
				t.Errorf("%s tp %d: %v, want a tp FieldError", tc.model, tp, err)
			}
		}
	}
}

// TestValidateCollectsAll: every bad field is reported, not just the first.
func TestValidateCollectsAll(t *testing.T) {
	c := DefaultConfig()
	c.TP = 0
	c.MemoryUtilization = 1.5
	c.MFU = 0
	c.MaxNumSeqs = 0
	c.CPURequestCores = -1
	c.WeightDType = DType(99)
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate: nil error for a bad config")
	}
	for _, field := range []string{"tp", "memory-utilization", "mfu", "max-num-seqs", "cpu-request", "dtype"} {
		if !strings.Contains(err.Error(), field+":") {
			t.Errorf("Validate error lacks %q:\n%v", field, err)
		}
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Errorf("Validate error %T does not unwrap to *FieldError", err)
	}
	if _, err := New(c); err == nil {
		t.Error("New accepted an invalid config")
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig invalid: %v", err)
	}
	if err := Calibrated().Validate(); err != nil {
		t.Errorf("Calibrated invalid: %v", err)
	}
}

// TestDoesNotFit: Llama-3.1-70B in BF16 (70e9 × 2 = 140 GB) cannot fit one
// 80 GB GPU (72 GB usable), but fits four: 4 × (72 − 4) − 140 = 132 GB free.
func TestDoesNotFit(t *testing.T) {
	c := DefaultConfig()
	c.Model, _ = LookupModel("llama-3.1-70b")
	if _, err := New(c); !errors.Is(err, ErrDoesNotFit) {
		t.Fatalf("New(70B on 1 GPU) error = %v, want ErrDoesNotFit", err)
	}
	c.TP = 4
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "KVFreeBytes", r.KVFreeBytes(), 132e9, 1)
	// 163840 B/token in FP16 doubles to 2 × 80 × 8 × 128 × 2 = 327680;
	// 8 KV heads over 4 GPUs is 2 each, nothing replicated.
	near(t, "KVBytesPerToken", r.KVBytesPerToken(), 327680, 0)
}

// TestTensorParallel: TP 2 on the reference doubles memory, bandwidth and
// FLOPS. Free KV = 2 × (72 − 4) − 16 = 120 GB; prefill 2 × 24750 = 49500
// tokens/s; step at batch 1, 1000 tokens = 16.131072e9 / (2 × 2.345e12).
func TestTensorParallel(t *testing.T) {
	c := DefaultConfig()
	c.TP = 2
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "KVFreeBytes", r.KVFreeBytes(), 120e9, 1)
	near(t, "PrefillTokensPerSecond", r.PrefillTokensPerSecond(), 49500, 1e-6)
	near(t, "StepTime", r.StepTime(1, 1000), 16.131072e9/4.69e12, 1e-12)
	// 8 KV heads on 16 GPUs: each GPU still holds one, so the cache per token
	// doubles: 2 × 32 × 16 × 128 × 2 = 262144.
	c.TP = 16
	r, err = New(c)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "KVBytesPerToken(tp 16)", r.KVBytesPerToken(), 262144, 0)
}

// TestDTypes: FP8 weights halve the weights and use FP8 FLOPS; KV auto
// follows 16-bit weights and falls back to bf16 for quantised ones.
func TestDTypes(t *testing.T) {
	c := DefaultConfig()
	c.WeightDType = DTypeFP8
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	// 8e9 × 1 byte = 8 GB; 1979e12 × 0.4 / 16e9 = 49475 tokens/s.
	near(t, "WeightsBytes", r.WeightsBytes(), 8e9, 1)
	near(t, "PrefillTokensPerSecond", r.PrefillTokensPerSecond(), 49475, 1e-6)
	if r.KVDType() != DTypeBF16 {
		t.Errorf("KV auto with fp8 weights = %s, want bf16", r.KVDType())
	}
	c.KVDType = DTypeFP8
	r, _ = New(c)
	// 2 × 32 × 8 × 128 × 1 = 65536.
	near(t, "KVBytesPerToken(fp8)", r.KVBytesPerToken(), 65536, 0)
	// Ampere has no FP8 tensor cores: A100 FP8 prefill runs at the BF16
	// rate, 312e12 × 0.4 / 16e9 = 7800 tokens/s.
	c.GPU, _ = LookupGPU("a100-80gb")
	r, _ = New(c)
	near(t, "A100 fp8 prefill", r.PrefillTokensPerSecond(), 7800, 1e-6)
}

// TestMoEStep: Mixtral at batch 1 reads the non-expert weights and, in
// expectation, 2 of 8 experts; at large batch nearly all 8.
func TestMoEStep(t *testing.T) {
	c := DefaultConfig()
	c.Model, _ = LookupModel("mixtral-8x7b")
	c.TP = 2
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Model
	scale := m.NominalParams / m.Params()
	expert := m.ExpertParams() * scale * 2 // bytes
	dense := (m.Params() - m.ExpertParams()) * scale * 2
	bw := 2 * 3.35e12 * 0.7
	// Batch 1: fraction touched 1 − (1 − 2/8)^1 = 0.25.
	near(t, "StepTime(1, 0)", r.StepTime(1, 0), (dense+0.25*expert)/bw, 1e-12)
	// Batch 10: 1 − 0.75^10 = 0.943686.
	near(t, "StepTime(10, 0)", r.StepTime(10, 0), (dense+(1-math.Pow(0.75, 10))*expert)/bw, 1e-12)
	// Beyond the precomputed table the same formula applies.
	near(t, "StepTime(1000, 0)", r.StepTime(1000, 0), math.Max((dense+expert)/bw, 1000*r.PrefillTime(1)), 1e-9)
}

// TestCaptureSize: vLLM's default CUDA graph capture sizes (1, 2, 4, then
// multiples of 8 below 256, then of 16, up to min(2 × max-num-seqs, 512)).
func TestCaptureSize(t *testing.T) {
	for _, c := range []struct{ batch, maxNumSeqs, want int }{
		{0, 128, 0}, {1, 128, 1}, {2, 128, 2}, {3, 128, 4}, {5, 128, 8}, {11, 128, 16}, {16, 128, 16},
		{249, 128, 256}, {256, 128, 256}, {257, 256, 272}, {257, 128, 257}, {500, 512, 512}, {513, 512, 513},
		{5, 3, 5}, {4, 3, 4},
	} {
		if got := CaptureSize(c.batch, c.maxNumSeqs); got != c.want {
			t.Errorf("CaptureSize(%d, %d) = %d, want %d", c.batch, c.maxNumSeqs, got, c.want)
		}
	}
}

// TestGraphPadding: with GraphPadding, Mixtral (2 of 8 experts a token)
// at TP 2 on the calibrated H100 (90,194,313,216 B of experts at 2 × 3.35
// TB/s × 0.77: 17.4829 ms) reads the experts of the padded batch: batch 5
// runs as 8, 1 − 0.75^8 = 0.899887 of them against 1 − 0.75^5 = 0.762695,
// 2.3985 ms more; batch 11 as 16, 0.563 ms more; 3 as 4, 1.844 ms more;
// batches 1, 2 and 8 unchanged. A dense model's steps do not change.
func TestGraphPadding(t *testing.T) {
	c := Calibrated()
	c.Model, _ = LookupModel("mixtral-8x7b")
	c.TP = 2
	plain, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	c.GraphPadding = true
	padded, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		batch  int
		moreMS float64
	}{{1, 0}, {2, 0}, {3, 1.8439}, {5, 2.3985}, {8, 0}, {11, 0.56317}} {
		got := (padded.StepTime(x.batch, 0) - plain.StepTime(x.batch, 0)) * 1e3
		if math.Abs(got-x.moreMS) > 1e-4 {
			t.Errorf("batch %d: padded step %.5f ms longer, want %.5f", x.batch, got, x.moreMS)
		}
	}
	d := Calibrated()
	dense, _ := New(d)
	d.GraphPadding = true
	densePadded, _ := New(d)
	if a, b := dense.StepTime(5, 5000), densePadded.StepTime(5, 5000); a != b {
		t.Errorf("dense step %v with padding, %v without: want the same", b, a)
	}
}

// TestValidateCustom: a hand-built GPU or model missing figures, or NaN
// knobs, are reported rather than producing NaN step times.
func TestValidateCustom(t *testing.T) {
	c := DefaultConfig()
	c.GPU = GPU{Name: "mystery"}
	c.Model.Layers = 0
	c.MFU = math.NaN()
	c.WeightLoadBytesPerSecond = math.Inf(1)
	err := c.Validate()
	for _, field := range []string{"gpu:", "model:", "mfu:", "weight-load-rate:"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate error lacks %q: %v", field, err)
		}
	}
}

// Bounds past which a value is a typing mistake: New would build a table
// with one entry per batch slot (MoE) or print +Inf% CPU.
func TestValidateBounds(t *testing.T) {
	for field, mutate := range map[string]func(*Config){
		"max-num-seqs": func(c *Config) { c.MaxNumSeqs = MaxMaxNumSeqs + 1 },
		"cpu-request":  func(c *Config) { c.CPURequestCores = 0.0009 }, // below 1m
		"cpu-idle":     func(c *Config) { c.CPUIdleCores = 1e308 },
		"cpu-engine":   func(c *Config) { c.CPUEngineCores = math.Inf(1) },
		"cpu-per-seq":  func(c *Config) { c.CPUPerSequenceCores = math.NaN() },
		"block-size":   func(c *Config) { c.Accounting = AccountingVLLM; c.BlockSize = MaxBlockSize + 1 },
		// Below 1% of the peak no GPU serves (MinEfficiency); 1e-300
		// replayed prefills and steps of 1e300 s.
		"mfu":                     func(c *Config) { c.MFU = 1e-300 },
		"expert-mfu":              func(c *Config) { c.ExpertMFU = 0.0099 },
		"bandwidth-efficiency":    func(c *Config) { c.BandwidthEfficiency = 0.005 },
		"kv-bandwidth-efficiency": func(c *Config) { c.KVBandwidthEfficiency = 1e-9 },
	} {
		c := DefaultConfig()
		mutate(&c)
		var fe *FieldError
		if err := c.Validate(); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: Validate = %v, want a *FieldError for it", field, err)
		}
	}
	c := DefaultConfig()
	c.MaxNumSeqs, c.CPURequestCores, c.CPUIdleCores = MaxMaxNumSeqs, MinCPURequestCores, MaxCPUCores
	c.MFU, c.ExpertMFU, c.BandwidthEfficiency, c.KVBandwidthEfficiency = 0.01, 0.01, 0.01, 1
	if err := c.Validate(); err != nil {
		t.Errorf("the bounds themselves are allowed: %v", err)
	}
}

// TestKVHeadCost: a step gains batch × layers × ceil(KV heads / TP) ×
// KVHeadCost. At 33 ns, batch 10: Llama-2-7B (32 layers, 32 KV heads) 10
// × 32 × 32 × 33 ns = 337.92 µs; Llama-3.1-8B (8 KV heads) a quarter of
// it, 84.48 µs; Llama-3.1-70B at TP 4 (80 layers, 2 KV heads a GPU) 52.8
// µs, at TP 8 (one head each) 26.4 µs. An empty batch costs nothing.
func TestKVHeadCost(t *testing.T) {
	for _, x := range []struct {
		model  string
		tp     int
		moreUS float64
	}{{"llama-2-7b", 1, 337.92}, {"llama-3.1-8b", 1, 84.48}, {"llama-3.1-70b", 4, 52.8}, {"llama-3.1-70b", 8, 26.4}} {
		c := Calibrated()
		c.Model, _ = LookupModel(x.model)
		c.TP = x.tp
		plain, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		c.KVHeadCost = 33 * time.Nanosecond
		r, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := (r.StepTime(10, 10000) - plain.StepTime(10, 10000)) * 1e6; math.Abs(got-x.moreUS) > 1e-6 {
			t.Errorf("%s TP %d: step %.4f µs longer, want %.4f", x.model, x.tp, got, x.moreUS)
		}
		if r.StepTime(0, 0) != 0 {
			t.Errorf("%s: empty step %v, want 0", x.model, r.StepTime(0, 0))
		}
	}
}

// TestQuantizedHead16Bit: under vLLM's accounting, 8-bit weights keep the
// token embedding and the lm_head 16-bit. Llama-3-8B in FP8 (8,030,261,248
// parameters, of which 128256 × 4096 = 525,336,576 embedding and as many
// lm_head) weighs 8,030,261,248 + 2 × 525,336,576 = 9,080,934,400 bytes;
// a step at batch 1 with no context, the embedding looked up, reads the
// rest at 1 byte and the lm_head at 2: 7,504,924,672 - 525,336,576 + 2 ×
// 525,336,576 = 8,030,261,248 bytes, 2.39709 ms at 3.35 TB/s. Nominal
// accounting prices every weight at 1 byte (8e9 bytes).
func TestQuantizedHead16Bit(t *testing.T) {
	c := Calibrated()
	c.WeightDType = DTypeFP8
	c.BandwidthEfficiency, c.StepOverhead, c.EmbeddingLookup = 1, 0, true
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "WeightsBytes", r.WeightsBytes(), 9080934400, 1e-12)
	near(t, "StepTime(1, 0)", r.StepTime(1, 0), 8030261248/3.35e12, 1e-12)
	d := DefaultConfig()
	d.WeightDType = DTypeFP8
	n, _ := New(d)
	near(t, "nominal WeightsBytes", n.WeightsBytes(), 8e9, 1e-12)
}

// TestMaxDecodeStep: each figure within its own bound may still add up to
// a step no GPU takes. The reference replica's step at batch 1 with no
// context is 6.82 ms (docs/recommend.md's worked example); with a 1.5 s
// step overhead it is 1.50682 s, refused; with 0.99 s, 0.99682 s, accepted.
func TestMaxDecodeStep(t *testing.T) {
	c := DefaultConfig()
	c.StepOverhead = 1500 * time.Millisecond
	_, err := New(c)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != FieldStep || fe.Value != "1.507 s" {
		t.Errorf("step overhead 1.5 s: %v, want a %s FieldError of 1.507 s", err, FieldStep)
	}
	c.StepOverhead = 990 * time.Millisecond
	if _, err := New(c); err != nil {
		t.Errorf("step overhead 0.99 s: %v, want accepted (a 0.997 s step)", err)
	}
}
