package replica

import "time"

// FitTerms are the step model's fitted terms (Config fields of the same
// names): what `infscale accuracy --fit` prints.
type FitTerms struct {
	BandwidthEfficiency, KVBandwidthEfficiency float64
	MFU, ExpertMFU                             float64
	OutputLagSteps                             float64
	StepOverhead, SequenceStepCost             time.Duration
	LayerStepCost, SequenceLayerCost           time.Duration
	KVHeadCost                                 time.Duration
	AllReduceLatency, RequestOverhead          time.Duration
}

// Apply sets the terms on c and turns on the terms without a free
// parameter (the prefill floor, the interconnect's bytes, the embedding
// lookup, the MoE experts of the CUDA graph's padded batch).
func (t FitTerms) Apply(c Config) Config {
	c.BandwidthEfficiency, c.KVBandwidthEfficiency = t.BandwidthEfficiency, t.KVBandwidthEfficiency
	c.MFU, c.ExpertMFU, c.OutputLagSteps = t.MFU, t.ExpertMFU, t.OutputLagSteps
	c.StepOverhead, c.SequenceStepCost = t.StepOverhead, t.SequenceStepCost
	c.LayerStepCost, c.SequenceLayerCost, c.KVHeadCost = t.LayerStepCost, t.SequenceLayerCost, t.KVHeadCost
	c.AllReduceLatency, c.RequestOverhead = t.AllReduceLatency, t.RequestOverhead
	c.PrefillFloor, c.Interconnect, c.EmbeddingLookup, c.GraphPadding = true, true, true, true
	return c
}

// PagedDecodeKVEfficiencyH100 is the fraction of an H100's peak HBM
// bandwidth (3.35 TB/s) at which vLLM's decode attention on Hopper
// (FlashAttention 3 over the paged KV cache) reads the context's KV: the
// published kernel measurement, not a fit. Dao-AILab/flash-attention issue
// 1572 (2025-04-11) times FA3's paged decode on an H100, batch 16, 32 query
// and 32 KV heads of 128, pages of 8 tokens, CUDA graphs: 292.0 µs for
// 2,000-token contexts (524 MB of KV) and 567.2 µs for 4,000 (1,049 MB).
// The step between the two, 524 MB in 275.2 µs, is 1.905 TB/s = 0.569 of
// peak; the 16.8 µs the call costs beyond it is its blocks' fixed cost
// (DecodeBlockCostH100). FA3's own pull request 1236 measured 0.62 of an
// H100 PCIe's 2 TB/s on a grouped-query shape (16 query heads per KV head,
// 16k-token contexts, fixed cost included): the kernel reads KV at about
// the same fraction whatever the grouping, below the weights' GEMMs.
const PagedDecodeKVEfficiencyH100 = 0.569

// DecodeBlockCostH100 is the decode attention kernel's fixed cost per
// work block, amortized over the GPU, on H100: a block per sequence and
// KV head (and layer), beside the KV bytes the block reads at
// PagedDecodeKVEfficiencyH100. It is the same published measurement's
// intercept, not a fit: Dao-AILab/flash-attention issue 1572's FA3 paged
// decode (batch 16, 32 KV heads: 512 blocks) takes 16.8 µs beyond its
// bytes' 275.2 µs per 524 MB, 16.8 µs / 512 = 32.8 ns a block, 33 ns
// to the nanosecond (the blocks' setup, the ramp of their load
// pipelines, their output writes, run 132 SMs at a time). FlashAttention's and FlashInfer's decode grids
// are (sequence, KV head, split), so a multi-head model (Llama-2-7B: 32
// KV heads) runs four times the blocks of a grouped-query one of the same
// batch (8) for the same query heads.
const DecodeBlockCostH100 = 33 * time.Nanosecond

// AllReduceLatencyH100 is one tensor-parallel all-reduce's fixed time on
// H100 SXM over NVLink, from vLLM's own measurement rather than a fit:
// vLLM PR 24532's H100 table (benchmark_device_communicators.py, TP 4,
// bf16 rows of 8,192) times its one-stage custom all-reduce at 10 µs for
// 0.5 MB and 14 µs for 1 MB, a line through 6 µs at no bytes. The bytes
// are priced apart (Config.Interconnect).
const AllReduceLatencyH100 = 6 * time.Microsecond

// FittedH100 are the terms fitted on every row of the shared sim-to-real
// set (13 vLLM v0.15.1 experiments on H100 SXM, 6 models, the public
// ground-truth data set): `infscale accuracy --fit --held-out=`. One set
// for all rows, five terms fitted; the KV read efficiency, the attention
// blocks' cost and the all-reduce latency are the published measurements
// above, not fitted, and a step's cost per running sequence is theirs
// alone (the KV it reads, its blocks, its all-reduce bytes).
// docs/evaluation/ACCURACY.md gives the fit and its errors.
var FittedH100 = FitTerms{
	BandwidthEfficiency: 0.696149, KVBandwidthEfficiency: PagedDecodeKVEfficiencyH100,
	MFU: 0.986988, OutputLagSteps: 0.790297,
	LayerStepCost:    10191 * time.Nanosecond,
	KVHeadCost:       DecodeBlockCostH100,
	AllReduceLatency: AllReduceLatencyH100, RequestOverhead: 6089071 * time.Nanosecond,
}

// FittedFold is the same terms fitted without the rows of HeldOut's
// models (Hugging Face names, as the data set spells them): their errors
// on those rows are out of sample.
type FittedFold struct {
	HeldOut []string
	Terms   FitTerms
}

// FittedH100Folds are three fits, each without a third of the set's six
// models (`infscale accuracy --fit --held-out A --held-out B`): the dense
// GQA models of 7-12B (Mistral-Nemo at TP 1 and 2, Qwen2.5-7B), the Llama
// models (Llama-2-7B, the only MHA model, and Llama-3.1-70B at TP 4), and
// the TP 2 models of 34B and more (Scout, the only MoE, and Yi-34B).
var FittedH100Folds = []FittedFold{
	{HeldOut: []string{"mistralai/Mistral-Nemo-Instruct-2407", "Qwen/Qwen2.5-7B-Instruct"}, Terms: FitTerms{
		BandwidthEfficiency: 0.716005, KVBandwidthEfficiency: PagedDecodeKVEfficiencyH100,
		MFU: 0.991859, OutputLagSteps: 1.210926,
		LayerStepCost:    15053 * time.Nanosecond,
		KVHeadCost:       DecodeBlockCostH100,
		AllReduceLatency: AllReduceLatencyH100, RequestOverhead: 348899 * time.Nanosecond,
	}},
	{HeldOut: []string{"meta-llama/Llama-2-7b-hf", "meta-llama/Llama-3.1-70B-Instruct"}, Terms: FitTerms{
		BandwidthEfficiency: 0.723100, KVBandwidthEfficiency: PagedDecodeKVEfficiencyH100,
		MFU: 0.996313, OutputLagSteps: 1.076020,
		LayerStepCost:    12888 * time.Nanosecond,
		KVHeadCost:       DecodeBlockCostH100,
		AllReduceLatency: AllReduceLatencyH100, RequestOverhead: 4693063 * time.Nanosecond,
	}},
	{HeldOut: []string{"RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic", "01-ai/Yi-34B"}, Terms: FitTerms{
		BandwidthEfficiency: 0.688411, KVBandwidthEfficiency: PagedDecodeKVEfficiencyH100,
		MFU: 0.982908, OutputLagSteps: 0.680602,
		LayerStepCost:    8831 * time.Nanosecond,
		KVHeadCost:       DecodeBlockCostH100,
		AllReduceLatency: AllReduceLatencyH100, RequestOverhead: 7340850 * time.Nanosecond,
	}},
}

// FittedH100HeldOut is the first fold's terms (`--replica
// fitted-held-out`), fitted without FittedHeldOut's models.
var FittedH100HeldOut = FittedH100Folds[0].Terms

// FittedHeldOut lists the models FittedH100HeldOut was not fitted on:
// Mistral-Nemo-12B and Qwen2.5-7B, 4 of the 13 experiments.
func FittedHeldOut() []string { return FittedH100Folds[0].HeldOut }

// Fitted is Calibrated with the physical step model on and fitted
// (FittedH100): the weights read at a fitted fraction of the GPU's
// bandwidth (the input embedding looked up, not read), the KV cache at
// the attention kernel's measured fraction and each of its blocks
// (sequence × KV head × layer) at the kernel's measured fixed cost,
// prefill at MFU (MoE experts too, those of the CUDA graph's padded batch
// in decode), a cost per layer per step (no further cost per running
// sequence: the KV, the blocks and the all-reduce bytes price it),
// the all-reduce's measured latency (its bytes priced on the GPU's
// interconnect), the per-request overhead, the output lag, and a prefill
// pass that costs at least a step. Every term is a property of the GPU
// and engine; the model's config gives bytes, layers and FLOPs. Fitted on
// H100 SXM; other GPUs take the same efficiencies and costs (out of
// sample).
func Fitted() Config { return FittedH100.Apply(Calibrated()) }
