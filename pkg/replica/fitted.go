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
	AllReduceLatency, RequestOverhead          time.Duration
}

// Apply sets the terms on c and turns on the terms without a free
// parameter (the prefill floor, the interconnect's bytes, the embedding
// lookup).
func (t FitTerms) Apply(c Config) Config {
	c.BandwidthEfficiency, c.KVBandwidthEfficiency = t.BandwidthEfficiency, t.KVBandwidthEfficiency
	c.MFU, c.ExpertMFU, c.OutputLagSteps = t.MFU, t.ExpertMFU, t.OutputLagSteps
	c.StepOverhead, c.SequenceStepCost = t.StepOverhead, t.SequenceStepCost
	c.LayerStepCost, c.SequenceLayerCost = t.LayerStepCost, t.SequenceLayerCost
	c.AllReduceLatency, c.RequestOverhead = t.AllReduceLatency, t.RequestOverhead
	c.PrefillFloor, c.Interconnect, c.EmbeddingLookup = true, true, true
	return c
}

// FittedH100 are the terms fitted on every row of the shared sim-to-real
// set (13 vLLM v0.15.1 experiments on H100 SXM, 6 models, the public
// ground-truth data set): `infscale accuracy --fit --held-out=`. One set
// for all rows; docs/evaluation/ACCURACY.md gives the fit and its errors.
var FittedH100 = FitTerms{
	BandwidthEfficiency: 0.764595, KVBandwidthEfficiency: 0.506284,
	MFU: 0.965219, OutputLagSteps: 1.070667,
	LayerStepCost: 17525 * time.Nanosecond, SequenceStepCost: 33296 * time.Nanosecond,
	AllReduceLatency: 5449 * time.Nanosecond, RequestOverhead: 5013713 * time.Nanosecond,
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
		BandwidthEfficiency: 0.696191, KVBandwidthEfficiency: 0.502805,
		MFU: 0.959614, OutputLagSteps: 1.093007,
		LayerStepCost: 11973 * time.Nanosecond, SequenceStepCost: 12079 * time.Nanosecond,
		AllReduceLatency: 2073 * time.Nanosecond, RequestOverhead: 3313722 * time.Nanosecond,
	}},
	{HeldOut: []string{"meta-llama/Llama-2-7b-hf", "meta-llama/Llama-3.1-70B-Instruct"}, Terms: FitTerms{
		BandwidthEfficiency: 0.682077, KVBandwidthEfficiency: 0.769818,
		MFU: 0.996699, OutputLagSteps: 1.021575,
		LayerStepCost: 13910 * time.Nanosecond, SequenceStepCost: 7562 * time.Nanosecond,
		AllReduceLatency: 2657 * time.Nanosecond, RequestOverhead: 5054419 * time.Nanosecond,
	}},
	{HeldOut: []string{"RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic", "01-ai/Yi-34B"}, Terms: FitTerms{
		BandwidthEfficiency: 0.670836, KVBandwidthEfficiency: 0.501525,
		MFU: 0.950672, OutputLagSteps: 0.849811,
		LayerStepCost: 8632 * time.Nanosecond, SequenceStepCost: 6139 * time.Nanosecond,
		AllReduceLatency: 2856 * time.Nanosecond, RequestOverhead: 4586827 * time.Nanosecond,
	}},
}

// FittedH100HeldOut is the first fold's terms (`--replica
// fitted-held-out`), fitted without FittedHeldOut's models.
var FittedH100HeldOut = FittedH100Folds[0].Terms

// FittedHeldOut lists the models FittedH100HeldOut was not fitted on:
// Mistral-Nemo-12B and Qwen2.5-7B, 4 of the 13 experiments.
func FittedHeldOut() []string { return FittedH100Folds[0].HeldOut }

// Fitted is Calibrated with the physical step model on and fitted
// (FittedH100): the weights and the KV cache read at their own fractions
// of the GPU's bandwidth (the input embedding looked up, not read),
// prefill at MFU (MoE experts too), a cost per layer per step, a cost per
// running sequence, the all-reduce's latency (its bytes priced on the
// GPU's interconnect), the per-request overhead, the output lag, and a
// prefill pass that costs at least a step. Every term is a property of
// the GPU and engine; the model's config gives bytes, layers and FLOPs.
// Fitted on H100 SXM; other GPUs take the same efficiencies and costs
// (out of sample).
func Fitted() Config { return FittedH100.Apply(Calibrated()) }
