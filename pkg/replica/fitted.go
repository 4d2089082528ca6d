package replica

import "time"

// The step-model terms fitted on the shared sim-to-real set (13 vLLM
// v0.15.1 experiments on H100 SXM, shared/testdata/groundtruth), on the
// rows of every model but FittedHeldOut's (`infscale accuracy --fit`;
// docs/ACCURACY.md gives the fit and held-out errors).
const (
	FittedBandwidthEfficiency   = 0.77
	FittedKVBandwidthEfficiency = 0.77
	FittedMFU                   = 0.4
	FittedExpertMFU             = 0.4
	FittedStepOverhead          = 1500 * time.Microsecond
	FittedSequenceStepCost      = 0 * time.Microsecond
	FittedAllReduceLatency      = 32 * time.Microsecond
	FittedRequestOverhead       = 0 * time.Microsecond
)

// FittedHeldOut lists the models (Hugging Face names, as the data set
// spells them) the fitted terms were not fitted on: a third of the data
// set's models, so that the errors on their rows are out of sample.
func FittedHeldOut() []string {
	return []string{"mistralai/Mistral-Nemo-Instruct-2407", "meta-llama/Llama-2-7b-hf"}
}

// Fitted is Calibrated with the step model's every term on and fitted:
// bandwidth efficiencies of the weights and of the KV cache, MFU (and the
// routed experts' own), a fixed and a per-sequence step cost, the
// all-reduce's latency (its bytes priced on the GPU's interconnect), the
// per-request overhead, and a prefill pass that costs at least a step.
func Fitted() Config {
	c := Calibrated()
	c.BandwidthEfficiency = FittedBandwidthEfficiency
	c.KVBandwidthEfficiency = FittedKVBandwidthEfficiency
	c.MFU = FittedMFU
	c.ExpertMFU = FittedExpertMFU
	c.StepOverhead = FittedStepOverhead
	c.SequenceStepCost = FittedSequenceStepCost
	c.AllReduceLatency = FittedAllReduceLatency
	c.RequestOverhead = FittedRequestOverhead
	c.PrefillFloor = true
	c.Interconnect = true
	return c
}
