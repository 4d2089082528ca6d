package replica

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Accounting selects how memory is counted.
type Accounting int

const (
	// AccountingNominal is docs/design.md's back-of-envelope arithmetic: decimal
	// GB of nominal GPU memory × utilisation, minus weights at the model's
	// nominal size ("8B" = 8e9 parameters), minus a fixed reserve; KV
	// capacity is free bytes / KV bytes per token.
	AccountingNominal Accounting = iota
	// AccountingVLLM is vLLM's own accounting: the runtime-reported device
	// memory (GiB) × --gpu-memory-utilization, minus the weights at their
	// exact parameter count, minus the profiled non-torch and activation
	// peak memory (ReserveBytes); KV capacity is whole blocks of BlockSize
	// tokens. Step time also uses the exact parameter count.
	AccountingVLLM
)

var accountingNames = []string{"nominal", "vllm"}

// String returns "nominal" or "vllm".
func (a Accounting) String() string {
	if a < 0 || int(a) >= len(accountingNames) {
		return fmt.Sprintf("Accounting(%d)", int(a))
	}
	return accountingNames[a]
}

// MarshalText implements encoding.TextMarshaler (JSON output).
func (a Accounting) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// ParseAccounting parses "nominal" or "vllm".
func ParseAccounting(s string) (Accounting, error) {
	for i, n := range accountingNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Accounting(i), nil
		}
	}
	return 0, fmt.Errorf("unknown accounting %q (allowed: %s)", s, strings.Join(accountingNames, ", "))
}

// Config is everything a Replica is derived from. Build one with
// DefaultConfig (the docs/design.md reference) or Calibrated (fitted to vLLM
// measurements) and change fields; New validates it.
type Config struct {
	GPU   GPU   // the accelerator (see LookupGPU)
	Model Model // the served model (see LookupModel)
	// TP is the tensor-parallel degree: GPUs per replica (>= 1). Memory,
	// bandwidth and FLOPS scale by TP; all-reduce cost is not modelled
	// (StepOverhead absorbs it).
	TP int
	// WeightDType is the weights' format (fp16, bf16, fp8, int8, int4);
	// DTypeAuto means the model's released dtype (config.json torch_dtype),
	// as vLLM's --dtype auto does.
	WeightDType DType
	// KVDType is the KV cache's format; DTypeAuto means the activation
	// dtype: the weight dtype when 16-bit, else bf16.
	KVDType DType
	// MemoryUtilization is vLLM's --gpu-memory-utilization, in (0, 1].
	MemoryUtilization float64
	// ReserveBytes is memory per GPU kept from the KV cache besides the
	// weights: activations, CUDA graphs, non-torch allocations.
	ReserveBytes float64
	// MFU is the fraction of dense tensor FLOPS prefill achieves, from
	// MinEfficiency to 1.
	MFU float64
	// BandwidthEfficiency is the fraction of peak memory bandwidth a decode
	// step achieves, from MinEfficiency to 1.
	BandwidthEfficiency float64
	// KVBandwidthEfficiency is the fraction of peak memory bandwidth a
	// decode step's attention reads the context's KV cache at, from
	// MinEfficiency to 1;
	// 0 (the default) means BandwidthEfficiency: KV read as fast as the
	// weights. The attention kernel sets it, so it differs by engine and
	// release (docs/evaluation/ACCURACY.md measures 0.62-0.78 on published points); a
	// calibration file sets it (kv_bandwidth_efficiency).
	KVBandwidthEfficiency float64
	// MaxNumSeqs is vLLM's --max-num-seqs: the most sequences in a batch.
	MaxNumSeqs int
	// StepOverhead is a fixed time added to every decode step (scheduling,
	// sampling, kernel launches); >= 0.
	StepOverhead time.Duration
	// SequenceStepCost is time added to a decode step per running sequence
	// (sampling, detokenising and scheduling work that grows with the
	// batch), so the step rises with concurrency beyond the KV reads; >= 0,
	// default 0 (calibration fits it).
	SequenceStepCost time.Duration
	// LayerStepCost is time added to a decode step per layer of the model
	// (the kernels each layer launches, their ramp and tail, norms and
	// rotary embedding): a step gains Layers × LayerStepCost beside
	// StepOverhead, so the fixed part of a step follows the model's depth;
	// >= 0, default 0 (the fitted mode fits it).
	LayerStepCost time.Duration
	// SequenceLayerCost is time added to a decode step per running sequence
	// per layer (the attention's per-sequence work: its block table, the
	// new token's KV write), beside SequenceStepCost: a step gains batch ×
	// Layers × SequenceLayerCost; >= 0, default 0 (the fitted mode fits it).
	SequenceLayerCost time.Duration
	// KVHeadCost is time added to a decode step per running sequence per
	// KV head a GPU holds per layer: the decode attention kernel's work
	// item (FlashAttention's and FlashInfer's decode grids run one block
	// per sequence and KV head, their splits reduced after), each with a
	// fixed cost beside the KV bytes it reads. A step gains batch × Layers
	// × ceil(KV heads / TP) × this, so a multi-head model (32 KV heads)
	// pays four times a grouped-query one's (8); >= 0, default 0.
	KVHeadCost time.Duration
	// EmbeddingLookup makes a decode step read only the batch's rows of the
	// input embedding table, not the table (an untied model's lm_head is
	// still read whole): the weights a step reads are the parameters less
	// vocab × hidden. Off (the reference and calibrated modes), a step
	// reads every parameter.
	EmbeddingLookup bool
	// RequestOverhead is a fixed time every request spends before the
	// scheduler sees it (HTTP, tokenising, queueing into the engine): the
	// TTFT floor at low load beyond the prefill; >= 0, default 0
	// (calibration fits it).
	RequestOverhead time.Duration
	// AllReduceLatency is the time of one tensor-parallel all-reduce of a
	// decode step's activations; with TP > 1 each layer does two (after
	// attention and after the MLP), so every step gains 2 × layers × this.
	// >= 0; ignored at TP 1.
	AllReduceLatency time.Duration
	// ExpertMFU is the fraction of dense tensor FLOPS a MoE model's routed
	// experts reach in a prefill (grouped GEMMs over few tokens per expert
	// run below the dense layers' MFU); 0 means MFU.
	ExpertMFU float64
	// PrefillFloor makes a prefill pass cost at least a step: the larger
	// of its compute and the weights it reads (a MoE pass reads the
	// experts its tokens route to), plus StepOverhead and the all-reduces.
	// Off (the reference), a prefill is its compute alone.
	PrefillFloor bool
	// Interconnect prices each all-reduce's bytes (tokens × hidden × 2
	// bytes, 2 (TP - 1) / TP of them over each link) at the GPU's
	// LinkBandwidthBytesPerSecond, beside AllReduceLatency: NVLink or PCIe
	// from the catalog. Off (the reference), an all-reduce is its latency.
	Interconnect bool
	// GraphPadding makes a MoE model's decode step route the batch vLLM
	// runs, not the batch it serves: vLLM replays a decode step as the
	// CUDA graph captured for the next size up (CaptureSize), and the
	// padding tokens pass through the router as real tokens do, so the
	// step reads the experts of the padded batch. Off (the reference and
	// calibrated modes), the experts read are those of the batch.
	GraphPadding bool
	// OutputLagSteps is how many decode steps a token waits, after the
	// step that produced it, before the client sees it (vLLM V1 processes
	// a step's outputs while the next step runs): added, at the batch's
	// step time, to the first and the last token of every request in
	// `infscale accuracy`'s replay. 0 to 4; 0 (the reference) is none.
	OutputLagSteps float64
	// ImagePull is the container image pull time of a cold start.
	ImagePull time.Duration
	// WeightLoadBytesPerSecond is the rate weights load at a cold start
	// (storage or network to GPU memory), > 0.
	WeightLoadBytesPerSecond float64
	// WarmUp is engine start-up after the weights are loaded (profiling, CUDA
	// graph capture, health check).
	WarmUp time.Duration
	// CPURequestCores is the pod's CPU request in cores, > 0; CPUPercent is
	// relative to it, as the HPA's CPU utilisation is.
	CPURequestCores float64
	// CPUIdleCores is the pod's CPU use with nothing running (API server,
	// metrics), in cores.
	CPUIdleCores float64
	// CPUEngineCores is the busy engine loop's CPU while anything runs: one
	// core spinning whatever the batch size.
	CPUEngineCores float64
	// CPUPerSequenceCores is the extra CPU per running sequence
	// (detokenising, streaming). Waiting requests cost nothing.
	CPUPerSequenceCores float64
	// Accounting selects nominal (docs/design.md) or vLLM memory accounting.
	Accounting Accounting
	// BlockSize is the KV block size in tokens under AccountingVLLM (vLLM's
	// --block-size, 16 on CUDA).
	BlockSize int
}

// DefaultConfig is docs/design.md's reference replica: Llama-3-8B at its nominal
// 8e9 parameters in FP16 on one H100 SXM (80 GB, 3.35 TB/s, 990 dense
// TFLOPS), memory utilisation 0.9, 4 GB reserve, MFU 0.4, bandwidth
// efficiency 0.7, max-num-seqs 64, no step overhead; cold start 45 s image +
// weights at 1 GB/s + 30 s warm-up; CPU idle 0.2 core, engine 1 core, 0.01
// core per running sequence, of 4 requested cores.
func DefaultConfig() Config {
	g, _ := LookupGPU("h100-sxm")
	m, _ := LookupModel("llama-3-8b")
	return Config{
		GPU: g, Model: m, TP: 1,
		WeightDType: DTypeFP16, KVDType: DTypeAuto,
		MemoryUtilization: 0.9, ReserveBytes: 4 * gb,
		MFU: 0.4, BandwidthEfficiency: 0.7,
		MaxNumSeqs:               64,
		ImagePull:                45 * time.Second,
		WeightLoadBytesPerSecond: 1 * gb,
		WarmUp:                   30 * time.Second,
		CPURequestCores:          4, CPUIdleCores: 0.2, CPUEngineCores: 1, CPUPerSequenceCores: 0.01,
		Accounting: AccountingNominal,
		BlockSize:  16,
	}
}

// Calibration constants of the vLLM-fitted mode; docs/evaluation/ACCURACY.md shows the
// points they were fitted on and the points they are tested against.
const (
	// CalibratedStepOverhead is the fixed per-step time fitted to vLLM's
	// nightly latency benchmark (Llama-3.1-8B, batch 8, on H100, A100 and
	// H200): what one decode step costs beyond reading weights and KV.
	CalibratedStepOverhead = 1500 * time.Microsecond
	// CalibratedAllReduceLatency is one all-reduce's time, fitted to the
	// nightly latency benchmark's tensor-parallel runs on H200 (Mixtral-8x7B
	// at TP 2 and Llama-70B at TP 4 both need about 32 µs per all-reduce).
	CalibratedAllReduceLatency = 32 * time.Microsecond
	// CalibratedBandwidthEfficiency is the fraction of peak memory bandwidth
	// a decode step achieves, fitted with CalibratedStepOverhead.
	CalibratedBandwidthEfficiency = 0.77
	// CalibratedReserveBytes is vLLM's profiled non-KV memory on an H100
	// serving an 8B model: non_torch_memory 1.79 GiB + PyTorch activation
	// peak 1.26 GiB (vllm-project/vllm PR #10511's profiler log).
	CalibratedReserveBytes = 3.05 * gib
	// CalibratedMaxNumSeqs is vLLM's default --max-num-seqs.
	CalibratedMaxNumSeqs = 256
)

// Calibrated is DefaultConfig switched to vLLM's memory accounting (exact
// parameters, device GiB, profiled reserve, 16-token blocks), the model's
// own dtype (--dtype auto), with the
// fitted CalibratedStepOverhead and vLLM's default max-num-seqs. Use it to
// predict a real vLLM deployment; the defaults stay docs/design.md's reference.
func Calibrated() Config {
	c := DefaultConfig()
	c.Accounting = AccountingVLLM
	c.WeightDType = DTypeAuto
	c.ReserveBytes = CalibratedReserveBytes
	c.StepOverhead = CalibratedStepOverhead
	c.AllReduceLatency = CalibratedAllReduceLatency
	c.BandwidthEfficiency = CalibratedBandwidthEfficiency
	c.MaxNumSeqs = CalibratedMaxNumSeqs
	return c
}

// Bounds Validate enforces beyond signs and finiteness: values past them
// are typing mistakes, and would make New allocate per batch slot or print
// infinite CPU percentages.
const (
	// MaxMaxNumSeqs bounds MaxNumSeqs (vLLM's default is 256; New keeps a
	// table with one entry per batch size for MoE models).
	MaxMaxNumSeqs = 1 << 20
	// MinCPURequestCores is the smallest CPU request Kubernetes expresses:
	// one millicore (1m).
	MinCPURequestCores = 0.001
	// MaxCPUCores bounds every CPU figure in cores.
	MaxCPUCores = 10000
	// MaxBlockSize bounds BlockSize in tokens (vLLM uses 16 on CUDA; its
	// largest supported sizes are a few hundred).
	MaxBlockSize = 1 << 16
	// MinEfficiency is the smallest MFU (the experts' too) and memory
	// bandwidth efficiency (the weights' and the KV cache's) Validate and
	// a calibration file accept; the largest is 1, the GPU's peak. Served
	// models reach tens of percent (docs/evaluation/ACCURACY.md's fits
	// find bandwidth efficiencies of 0.5-0.9 and MFUs of 0.4-1): 1% of an
	// H100's 989 TFLOPS or 3.35 TB/s is below a sixth of a T4's 65 TFLOPS
	// and 320 GB/s, so a smaller value is a typing mistake (0.004 for
	// 0.4) that replays a GPU slower than any served.
	MinEfficiency = 0.01
)

// Exclusive bounds of the step model's times that a calibration file has
// too (Validate's and the file's: a step term of seconds is no replica).
const (
	stepOverheadBelow     = 10 * time.Second
	sequenceStepCostBelow = 10 * time.Second
	layerStepCostBelow    = time.Second
	requestOverheadBelow  = 600 * time.Second
)

// EfficiencyOK reports whether v is an MFU or a bandwidth efficiency a
// GPU reaches: from MinEfficiency to 1.
func EfficiencyOK(v float64) bool { return v >= MinEfficiency && v <= 1 }

// EfficiencyRange says what EfficiencyOK accepts, for error messages.
var EfficiencyRange = fmt.Sprintf("a fraction from %g to 1 (%g%% to 100%% of the GPU's peak)", MinEfficiency, 100*MinEfficiency)

// FieldError is one invalid Config field. Field is the CLI flag name
// ("memory-utilization"), Value what was given, and Allowed what would be.
type FieldError struct {
	Field   string
	Value   string
	Allowed string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %s is invalid (allowed: %s)", e.Field, e.Value, e.Allowed)
}

// MaxColdStartPart bounds each part of a cold start: the image pull, the
// weights' load (their bytes over WeightLoadBytesPerSecond) and the
// warm-up, a day each.
const MaxColdStartPart = 24 * time.Hour

// Validate checks every field and returns all problems at once, joined with
// errors.Join; each is a *FieldError. It returns nil for a usable config.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, value, allowed string) {
		errs = append(errs, &FieldError{Field: field, Value: value, Allowed: allowed})
	}
	fraction := func(field string, v float64) {
		if !(v > 0 && v <= 1) {
			bad(field, fmt.Sprint(v), "a fraction in (0, 1]")
		}
	}
	positive := func(field string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			bad(field, fmt.Sprint(v), "a finite number > 0")
		}
	}
	efficiency := func(field string, v float64) {
		if !EfficiencyOK(v) {
			bad(field, fmt.Sprint(v), EfficiencyRange)
		}
	}
	nonNegative := func(field string, v float64) {
		if !(v >= 0) || math.IsInf(v, 0) {
			bad(field, fmt.Sprint(v), "a finite number >= 0")
		}
	}
	if c.GPU.MemoryBytes <= 0 || c.GPU.BandwidthBytesPerSecond <= 0 || c.GPU.BF16FLOPS <= 0 {
		bad("gpu", fmt.Sprintf("%q", c.GPU.Name), "a GPU with memory, bandwidth and FLOPS: "+strings.Join(GPUNames(), ", "))
	}
	m := c.Model
	if m.Layers <= 0 || m.Hidden <= 0 || m.Heads <= 0 || m.KVHeads <= 0 || m.HeadDim <= 0 || m.Vocab <= 0 || m.Intermediate <= 0 || m.NominalParams <= 0 {
		bad("model", fmt.Sprintf("%q", m.Name), "a model with a complete shape: "+strings.Join(ModelNames(), ", "))
	}
	if c.TP < 1 || c.TP > 64 {
		bad("tp", fmt.Sprint(c.TP), "an integer from 1 to 64")
	} else if m.Heads > 0 && m.KVHeads > 0 && !tpDivides(c.TP, m) {
		bad("tp", fmt.Sprint(c.TP), tpRequirement(m))
	}
	if c.WeightDType != DTypeAuto && c.WeightDType.Bytes() == 0 {
		bad("dtype", c.WeightDType.String(), "auto, fp16, bf16, fp8, int8, int4")
	}
	if c.KVDType != DTypeAuto && c.KVDType != DTypeFP16 && c.KVDType != DTypeBF16 && c.KVDType != DTypeFP8 && c.KVDType != DTypeINT8 {
		bad("kv-dtype", c.KVDType.String(), "auto, fp16, bf16, fp8, int8")
	}
	fraction("memory-utilization", c.MemoryUtilization)
	nonNegative("reserve", c.ReserveBytes)
	efficiency("mfu", c.MFU)
	if !(c.OutputLagSteps >= 0 && c.OutputLagSteps <= 4) {
		bad("output-lag-steps", fmt.Sprint(c.OutputLagSteps), "a number of steps from 0 to 4")
	}
	if c.ExpertMFU != 0 {
		efficiency("expert-mfu", c.ExpertMFU)
	}
	efficiency("bandwidth-efficiency", c.BandwidthEfficiency)
	if c.KVBandwidthEfficiency != 0 {
		efficiency("kv-bandwidth-efficiency", c.KVBandwidthEfficiency)
	}
	if c.MaxNumSeqs < 1 || c.MaxNumSeqs > MaxMaxNumSeqs {
		bad("max-num-seqs", fmt.Sprint(c.MaxNumSeqs), fmt.Sprintf("an integer from 1 to %d", MaxMaxNumSeqs))
	}
	for _, d := range []struct {
		field string
		v     time.Duration
		below time.Duration // exclusive; a calibration file's bound where it has the term
	}{{"step-overhead", c.StepOverhead, stepOverheadBelow}, {"sequence-step-cost", c.SequenceStepCost, sequenceStepCostBelow},
		{"layer-step-cost", c.LayerStepCost, layerStepCostBelow}, {"sequence-layer-cost", c.SequenceLayerCost, time.Second},
		{"kv-head-cost", c.KVHeadCost, time.Second}, {"request-overhead", c.RequestOverhead, requestOverheadBelow},
		{"allreduce-latency", c.AllReduceLatency, time.Second}, {"image-pull", c.ImagePull, MaxColdStartPart + 1},
		{"warm-up", c.WarmUp, MaxColdStartPart + 1}} {
		// A step term of hours, or a cold start part of centuries, is no
		// replica: 292 years of image pull overflowed the recommended
		// policy's lookahead (cold start + 45 s) into a negative one.
		if d.v < 0 || d.v >= d.below {
			allowed := "a duration >= 0 and below " + d.below.String()
			if d.below == MaxColdStartPart+1 {
				allowed = "a duration from 0 to " + MaxColdStartPart.String() + " (a day)"
			}
			bad(d.field, d.v.String(), allowed)
		}
	}
	positive("weight-load-rate", c.WeightLoadBytesPerSecond)
	cores := func(field string, v, lo float64) {
		if !(v >= lo && v <= MaxCPUCores) {
			bad(field, fmt.Sprint(v), fmt.Sprintf("a number of cores from %g to %g", lo, float64(MaxCPUCores)))
		}
	}
	cores("cpu-request", c.CPURequestCores, MinCPURequestCores)
	cores("cpu-idle", c.CPUIdleCores, 0)
	cores("cpu-engine", c.CPUEngineCores, 0)
	cores("cpu-per-seq", c.CPUPerSequenceCores, 0)
	if c.Accounting != AccountingNominal && c.Accounting != AccountingVLLM {
		bad("accounting", c.Accounting.String(), strings.Join(accountingNames, ", "))
	}
	if c.Accounting == AccountingVLLM && (c.BlockSize < 1 || c.BlockSize > MaxBlockSize) {
		bad("block-size", fmt.Sprint(c.BlockSize), fmt.Sprintf("an integer from 1 to %d", MaxBlockSize))
	}
	return errors.Join(errs...)
}

// tpDivides reports whether vLLM can shard m over tp GPUs: the attention
// heads split evenly (vLLM's "Total number of attention heads must be
// divisible by tensor parallel size"), the KV heads either split evenly
// or are replicated a whole number of times (QKVParallelLinear), and each
// dense MLP's intermediate size splits evenly (its gate/up projection is a
// MergedColumnParallelLinear, its down projection a RowParallelLinear:
// vLLM's divide() asserts it; Qwen2.5-7B's 18,944 refuses TP 28, which its
// 28 heads allow). A MoE model's expert MLPs are sharded by the fused MoE
// layer and not checked here.
func tpDivides(tp int, m Model) bool {
	if m.Heads%tp != 0 || (m.KVHeads%tp != 0 && tp%m.KVHeads != 0) {
		return false
	}
	for _, size := range m.denseMLPSizes() {
		if size%tp != 0 {
			return false
		}
	}
	return true
}

// denseMLPSizes are the intermediate sizes of m's dense MLPs, as sharded
// by tensor parallelism: a dense model's, a MoE model's dense layers' (when
// not every layer is MoE) and its shared experts'.
func (m Model) denseMLPSizes() []int {
	var out []int
	if m.Experts <= 1 || m.moeLayers() < m.Layers {
		out = append(out, m.denseIntermediate())
	}
	if m.Experts > 1 && m.SharedExpertIntermediate > 0 {
		out = append(out, m.SharedExpertIntermediate)
	}
	return out
}

// tpDegrees lists the degrees from 1 to 64 that tpDivides accepts for m.
// tpRequirement says which tensor-parallel degrees vLLM takes for m, and
// why: "a degree that divides ...'s 32 attention heads ..., as vLLM
// requires: 1, 2, 4, 8" (m's heads and KV heads > 0).
func tpRequirement(m Model) string {
	mlp := ""
	switch sizes := m.denseMLPSizes(); len(sizes) {
	case 0:
	case 1:
		mlp = fmt.Sprintf(" and its MLP intermediate size %d", sizes[0])
	default:
		mlp = " and its MLP intermediate sizes " + strings.Join(strings.Split(joinInts(sizes), ", "), " and ")
	}
	return fmt.Sprintf("a degree that divides %s's %d attention heads%s, and divides or is a multiple of its %d KV heads, as vLLM requires: %s",
		m.Name, m.Heads, mlp, m.KVHeads, joinInts(tpDegrees(m)))
}

func tpDegrees(m Model) []int {
	var out []int
	for tp := 1; tp <= 64; tp++ {
		if tpDivides(tp, m) {
			out = append(out, tp)
		}
	}
	return out
}

func joinInts(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ", ")
}
