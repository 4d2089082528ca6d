package replica

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrDoesNotFit reports a configuration whose weights and reserve leave no
// room for the KV cache of even one block.
var ErrDoesNotFit = errors.New("model does not fit")

// Replica is a derived, immutable replica: New computes every constant once
// so that the simulator's hot-path calls (StepTime, PrefillTime, CPUPercent)
// are a few multiplies. Safe for concurrent use. All times are float64
// seconds.
type Replica struct {
	cfg Config

	weightDType      DType
	kvDType          DType
	params           float64 // total parameters counted for memory (nominal or exact)
	activeParams     float64 // parameters one token passes through
	weightsBytes     float64 // all TP shards
	kvBytesPerToken  float64 // all TP shards, KV heads replicated when TP > KV heads
	kvFreeBytes      float64 // all TP shards
	kvBlocks         int64   // AccountingVLLM only, per GPU (the same on each)
	kvCapacityTokens int64
	maxBatch         int

	prefillSecondsPerToken float64 // 1 / prefill tokens/s
	weightSeconds          float64 // dense weights read per step
	expertSeconds          float64 // all expert weights read per step (MoE)
	expertTouched          []float64
	kvSecondsPerToken      float64 // context KV read per step, per token
	overheadSeconds        float64
	perSeqSeconds          float64 // SequenceStepCost + layers × (SequenceLayerCost + KV heads per GPU × KVHeadCost), plus the all-reduces' bytes per sequence (Interconnect)
	arTokenSeconds         float64 // all-reduce bytes of one token over every layer (Interconnect)
	requestOverhead        float64 // RequestOverhead

	coldStartSeconds float64
	weightLoadSecs   float64

	cpuIdlePercent   float64
	cpuBusyPercent   float64 // idle + engine core
	cpuPerSeqPercent float64
}

// New validates cfg and derives the Replica. Errors: the joined
// *FieldError list of Config.Validate, ErrDoesNotFit (wrapped, with the
// figures) when no KV cache is left, a *FieldError for a weight load
// rate that loads the weights in more than MaxColdStartPart, or one of
// Field FieldStep for a decode step at batch 1 of MaxDecodeStep or more.
func New(cfg Config) (*Replica, error) { return build(cfg, true) }

// build is New, with the decode step's bound checked when checkStep.
func build(cfg Config, checkStep bool) (*Replica, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Replica{cfg: cfg}
	m, g, tp := cfg.Model, cfg.GPU, float64(cfg.TP)

	r.weightDType = cfg.WeightDType
	if r.weightDType == DTypeAuto {
		r.weightDType = m.DType
	}
	if r.weightDType.Bytes() == 0 {
		r.weightDType = DTypeBF16 // a custom model without a dtype
	}
	r.kvDType = cfg.KVDType
	if r.kvDType == DTypeAuto {
		r.kvDType = DTypeBF16
		if r.weightDType == DTypeFP16 || r.weightDType == DTypeBF16 {
			r.kvDType = r.weightDType
		}
	}

	// Parameter counts: nominal accounting scales the exact shape-derived
	// counts to the nominal size, so "8B" weighs 8e9 parameters.
	scale := 1.0
	if cfg.Accounting == AccountingNominal {
		scale = m.NominalParams / m.Params()
	}
	r.params = m.Params() * scale
	r.activeParams = m.ActiveParams() * scale
	expertParams := m.ExpertParams() * scale
	wb := r.weightDType.Bytes()
	// vLLM quantizes the linear layers only: under its accounting the
	// token embedding and the lm_head of 8- and 4-bit weights stay 16-bit
	// (a compressed-tensors checkpoint lists the lm_head in its ignore
	// list, and the embedding is no Linear), the parameters of
	// embedding16 × 2 bytes.
	embedding16 := 0.0
	if cfg.Accounting == AccountingVLLM && wb < 2 {
		embedding16 = float64(m.Vocab) * float64(m.Hidden)
		if !m.TiedEmbeddings {
			embedding16 *= 2
		}
	}
	r.weightsBytes = (r.params-embedding16)*wb + embedding16*2

	// KV bytes per token across all shards: with TP > KV heads each shard
	// still holds at least one (replicated) KV head.
	kvHeadsPerGPU := math.Ceil(float64(m.KVHeads) / tp)
	r.kvBytesPerToken = 2 * float64(m.Layers) * kvHeadsPerGPU * tp * float64(m.HeadDim) * r.kvDType.Bytes()

	switch cfg.Accounting {
	case AccountingVLLM:
		perGPU := g.DeviceMemory()*cfg.MemoryUtilization - r.weightsBytes/tp - cfg.ReserveBytes
		blockBytes := float64(cfg.BlockSize) * r.kvBytesPerToken / tp
		r.kvBlocks = int64(math.Max(0, math.Floor(perGPU/blockBytes)))
		r.kvFreeBytes = perGPU * tp
		r.kvCapacityTokens = r.kvBlocks * int64(cfg.BlockSize)
	default:
		r.kvFreeBytes = tp*(g.MemoryBytes*cfg.MemoryUtilization-cfg.ReserveBytes) - r.weightsBytes
		r.kvCapacityTokens = int64(math.Max(0, math.Floor(r.kvFreeBytes/r.kvBytesPerToken)))
	}
	if r.kvCapacityTokens < 1 {
		return nil, fmt.Errorf("%w: %s in %s on %d x %s: weights %.1f GB and reserve leave %.2f GB for KV cache (need at least %.0f bytes per token); use more GPUs (--tp), a smaller dtype or a larger GPU",
			ErrDoesNotFit, m.Name, r.weightDType, cfg.TP, g.Name, r.weightsBytes/gb, r.kvFreeBytes/gb, r.kvBytesPerToken)
	}
	r.maxBatch = cfg.MaxNumSeqs
	if int64(r.maxBatch) > r.kvCapacityTokens {
		r.maxBatch = int(r.kvCapacityTokens)
	}

	flops := tp * g.FLOPS(r.weightDType) * cfg.MFU
	r.prefillSecondsPerToken = 2 * r.activeParams / flops
	if cfg.ExpertMFU > 0 && m.Experts > 1 {
		// Routed experts at their own efficiency, the rest at MFU.
		routed := float64(m.moeLayers()) * float64(m.ExpertsPerToken) * m.mlpParams() * scale
		r.prefillSecondsPerToken = 2*(r.activeParams-routed)/flops + 2*routed/(tp*g.FLOPS(r.weightDType)*cfg.ExpertMFU)
	}

	bw := tp * g.BandwidthBytesPerSecond * cfg.BandwidthEfficiency
	read := r.params - expertParams
	if cfg.EmbeddingLookup && !m.TiedEmbeddings {
		read -= float64(m.Vocab) * float64(m.Hidden) * scale
		embedding16 = min(embedding16, float64(m.Vocab)*float64(m.Hidden)) // the lm_head alone
	}
	r.weightSeconds = ((read-embedding16)*wb + embedding16*2) / bw
	r.expertSeconds = expertParams * wb / bw
	if m.Experts > 1 {
		// The expected fraction of experts a batch routes to: each token
		// picks k of E experts, so an expert stays unread with probability
		// (1 - k/E)^batch; with GraphPadding the batch is the padded one.
		r.expertTouched = make([]float64, r.maxBatch+1)
		for b := range r.expertTouched {
			routed := b
			if cfg.GraphPadding {
				routed = CaptureSize(b, cfg.MaxNumSeqs)
			}
			r.expertTouched[b] = expertFraction(m, routed)
		}
	}
	r.kvSecondsPerToken = r.kvBytesPerToken / bw
	if cfg.KVBandwidthEfficiency > 0 {
		r.kvSecondsPerToken = r.kvBytesPerToken / (tp * g.BandwidthBytesPerSecond * cfg.KVBandwidthEfficiency)
	}
	layers := float64(m.Layers)
	r.overheadSeconds = cfg.StepOverhead.Seconds() + layers*cfg.LayerStepCost.Seconds()
	r.perSeqSeconds = cfg.SequenceStepCost.Seconds() + layers*cfg.SequenceLayerCost.Seconds() +
		layers*kvHeadsPerGPU*cfg.KVHeadCost.Seconds()
	r.requestOverhead = cfg.RequestOverhead.Seconds()
	if cfg.TP > 1 {
		r.overheadSeconds += 2 * float64(m.Layers) * cfg.AllReduceLatency.Seconds()
		if cfg.Interconnect && g.LinkBandwidthBytesPerSecond > 0 {
			// Ring all-reduce: each GPU sends 2 (TP - 1) / TP of the
			// activations (hidden × 2 bytes a token), twice a layer.
			r.arTokenSeconds = 2 * float64(m.Layers) * 2 * (tp - 1) / tp * float64(m.Hidden) * 2 / g.LinkBandwidthBytesPerSecond
			r.perSeqSeconds += r.arTokenSeconds
		}
	}

	r.weightLoadSecs = r.weightsBytes / cfg.WeightLoadBytesPerSecond
	if r.weightLoadSecs > MaxColdStartPart.Seconds() {
		return nil, &FieldError{Field: "weight-load-rate", Value: fmt.Sprintf("%.4g B/s", cfg.WeightLoadBytesPerSecond),
			Allowed: fmt.Sprintf("bytes per second that load the %.4g GB of weights within a day (%.4g B/s or more; this one takes %.4g s)", r.weightsBytes/1e9, r.weightsBytes/MaxColdStartPart.Seconds(), r.weightLoadSecs)}
	}
	r.coldStartSeconds = cfg.ImagePull.Seconds() + r.weightLoadSecs + cfg.WarmUp.Seconds()

	pct := 100 / cfg.CPURequestCores
	r.cpuIdlePercent = cfg.CPUIdleCores * pct
	r.cpuBusyPercent = (cfg.CPUIdleCores + cfg.CPUEngineCores) * pct
	r.cpuPerSeqPercent = cfg.CPUPerSequenceCores * pct
	// Each figure has its own bound; together they may still make a step
	// no GPU takes (a calibration's layer_step_cost_s 0.99 read 31.7 s a
	// token at batch 1).
	if step := r.StepTime(1, 0); checkStep && !(step < MaxDecodeStep.Seconds()) {
		return nil, &FieldError{Field: FieldStep, Value: fmt.Sprintf("%.4g s", step),
			Allowed: fmt.Sprintf("a decode step of one sequence under %v (real ones take milliseconds: the fixed step overhead, the per-layer cost and the weights read at the bandwidth efficiency add up to this one); times are in seconds: check --step-overhead, --layer-step-cost, --bandwidth-efficiency, or the calibration file's *_s values", MaxDecodeStep)}
	}
	return r, nil
}

// FieldStep is the FieldError.Field of a decode step over MaxDecodeStep:
// no one flag or key sets it.
const FieldStep = "step"

// MaxDecodeStep bounds a replica's decode step at batch 1 with no
// context: one token a second per request is beyond any GPU of the
// catalog (their steps take 5 to 100 ms); a slower one is figures in the
// wrong unit.
const MaxDecodeStep = time.Second

// CaptureSize is the batch vLLM runs a decode step of batch sequences
// as: the smallest of its default CUDA graph capture sizes at or above
// batch (1, 2, 4, then multiples of 8 below 256, then multiples of 16, up
// to min(2 × maxNumSeqs, 512): vllm/config/compilation.py,
// cudagraph_capture_sizes), or batch itself above the largest (run
// without a graph, unpadded).
func CaptureSize(batch, maxNumSeqs int) int {
	var c int
	switch {
	case batch <= 2:
		return batch
	case batch <= 4:
		c = 4
	case batch <= 256:
		c = (batch + 7) / 8 * 8
	default:
		c = (batch + 15) / 16 * 16
	}
	if c > min(2*maxNumSeqs, 512) {
		return batch
	}
	return c
}

func expertFraction(m Model, batch int) float64 {
	return 1 - math.Pow(1-float64(m.ExpertsPerToken)/float64(m.Experts), float64(batch))
}

// Config returns the configuration the replica was derived from.
func (r *Replica) Config() Config { return r.cfg }

// WeightDType is the resolved weight dtype (never DTypeAuto).
func (r *Replica) WeightDType() DType { return r.weightDType }

// KVDType is the resolved KV cache dtype (never DTypeAuto).
func (r *Replica) KVDType() DType { return r.kvDType }

// Params is the parameter count the weights hold (nominal under
// AccountingNominal, exact under AccountingVLLM).
func (r *Replica) Params() float64 { return r.params }

// ActiveParams is the parameter count one token passes through.
func (r *Replica) ActiveParams() float64 { return r.activeParams }

// WeightsBytes is the weights' size in bytes across all TP shards.
func (r *Replica) WeightsBytes() float64 { return r.weightsBytes }

// KVBytesPerToken is the KV cache one token of context occupies, in bytes
// across all TP shards.
func (r *Replica) KVBytesPerToken() float64 { return r.kvBytesPerToken }

// KVFreeBytes is the memory left for the KV cache, in bytes across all
// shards (before rounding down to whole blocks).
func (r *Replica) KVFreeBytes() float64 { return r.kvFreeBytes }

// KVBlocks is the number of KV blocks per GPU under AccountingVLLM (what
// vLLM logs as "# GPU blocks"); 0 under AccountingNominal.
func (r *Replica) KVBlocks() int64 { return r.kvBlocks }

// KVCapacityTokens is how many tokens of context (prompt + generated) the
// KV cache holds, summed over all running sequences.
func (r *Replica) KVCapacityTokens() int64 { return r.kvCapacityTokens }

// MaxBatch is the most sequences that can run at once: MaxNumSeqs, capped
// by KV capacity at one token each. The simulator also checks KV space per
// admitted sequence.
func (r *Replica) MaxBatch() int { return r.maxBatch }

// PrefillTokensPerSecond is the compute-bound prefill rate:
// TP × FLOPS × MFU / (2 × active parameters).
func (r *Replica) PrefillTokensPerSecond() float64 { return 1 / r.prefillSecondsPerToken }

// PrefillTime is the seconds to prefill tokens prompt tokens (compute-bound,
// linear; the attention's quadratic term is ignored). With
// Config.PrefillFloor the pass costs at least its weight reads (the
// experts its tokens touch), plus the step overhead and the all-reduces
// (their bytes with Config.Interconnect). 0 for tokens <= 0.
func (r *Replica) PrefillTime(tokens int) float64 {
	if tokens <= 0 {
		return 0
	}
	t := float64(tokens) * r.prefillSecondsPerToken
	if !r.cfg.PrefillFloor {
		return t
	}
	mem := r.weightSeconds
	if r.expertTouched != nil {
		mem += r.expertSeconds * expertFraction(r.cfg.Model, tokens)
	}
	return math.Max(t, mem) + r.overheadSeconds + float64(tokens)*r.arTokenSeconds
}

// StepTime is the seconds one decode step takes for batch running sequences
// holding contextTokens tokens of KV in total: the larger of the
// memory-bound time (weights over TP × bandwidth × BandwidthEfficiency plus
// context KV over TP × bandwidth × KVBandwidthEfficiency, which defaults to
// the weights';
// a mixture of experts reads only the experts the batch routes to) and the
// compute-bound time (batch × 2 × active parameters over TP × FLOPS × MFU),
// plus StepOverhead + layers × LayerStepCost, batch × (SequenceStepCost +
// layers × (SequenceLayerCost + ceil(KV heads / TP) × KVHeadCost)) and, with TP > 1, 2 × layers
// × AllReduceLatency. Each step produces one token per sequence. 0 for an
// empty batch.
func (r *Replica) StepTime(batch int, contextTokens int64) float64 {
	if batch <= 0 {
		return 0
	}
	mem := r.weightSeconds + float64(contextTokens)*r.kvSecondsPerToken
	if r.expertTouched != nil {
		if batch < len(r.expertTouched) {
			mem += r.expertSeconds * r.expertTouched[batch]
		} else {
			mem += r.expertSeconds * expertFraction(r.cfg.Model, batch)
		}
	}
	if c := float64(batch) * r.prefillSecondsPerToken; c > mem {
		mem = c
	}
	return mem + r.overheadSeconds + float64(batch)*r.perSeqSeconds
}

// ClosedLoopTPOT is the TPOT, in seconds, of each request of a closed
// loop of c clients sending prompt-token prompts for output tokens, in the
// steady state where the clients' requests are spread out (no two
// admitted in one step) and c <= MaxBatch: every interval is a decode step
// of the batch (c sequences, each halfway through its output), except the
// c - 1 steps that also carry another client's prefill (chunked), which
// last max(prefill of prompt + c - 1 tokens, the step). TPOT =
// step + (c - 1) / (output - 1) × (mixed - step).
func (r *Replica) ClosedLoopTPOT(c, prompt, output int) float64 {
	c = max(c, 1)
	step := r.StepTime(c, int64(c)*int64(prompt+output/2))
	if c == 1 || output <= 1 {
		return step
	}
	mixed := math.Max(r.PrefillTime(prompt+c-1), step)
	share := math.Min(float64(c-1)/float64(output-1), 1)
	return step + share*(mixed-step)
}

// RequestOverhead is the seconds each request spends before the scheduler
// sees it (Config.RequestOverhead): added to every TTFT and e2e latency.
func (r *Replica) RequestOverhead() float64 { return r.requestOverhead }

// OutputLagSteps is Config.OutputLagSteps: the decode steps a token
// waits after its own before the client sees it.
func (r *Replica) OutputLagSteps() float64 { return r.cfg.OutputLagSteps }

// ColdStart is the seconds from scheduling a pod to its first served
// request: image pull + weights / load rate + warm-up.
func (r *Replica) ColdStart() float64 { return r.coldStartSeconds }

// WeightLoadTime is the weight-loading part of ColdStart, in seconds.
func (r *Replica) WeightLoadTime() float64 { return r.weightLoadSecs }

// CPUPercent is the pod's CPU use as a percentage of its CPU request, as
// rate(process_cpu_seconds_total) / request reads: idle cores with nothing
// running; idle + one busy engine core + a small cost per running sequence
// otherwise. Waiting requests cost nothing: the engine loop is as busy with
// 1 waiting request as with 1000.
func (r *Replica) CPUPercent(running int) float64 {
	if running <= 0 {
		return r.cpuIdlePercent
	}
	return r.cpuBusyPercent + float64(running)*r.cpuPerSeqPercent
}
