package replica

// Summary is what `infscale gpu` prints: a replica's derived figures at one
// context length, in base units (bytes, seconds, tokens, percent of the CPU
// request). The JSON field names are a stable output contract.
type Summary struct {
	GPU              string     `json:"gpu"`
	Model            string     `json:"model"`
	TP               int        `json:"tp"`
	WeightDType      DType      `json:"dtype"`
	KVDType          DType      `json:"kv_dtype"`
	Accounting       Accounting `json:"accounting"`
	Params           float64    `json:"params"`
	ActiveParams     float64    `json:"active_params"`
	WeightsBytes     float64    `json:"weights_bytes"`
	KVBytesPerToken  float64    `json:"kv_bytes_per_token"`
	KVFreeBytes      float64    `json:"kv_free_bytes"`
	KVBlocks         int64      `json:"kv_blocks,omitempty"`
	BlockSize        int        `json:"block_size,omitempty"`
	KVCapacityTokens int64      `json:"kv_capacity_tokens"`
	MaxBatch         int        `json:"max_batch"`

	PrefillTokensPerSecond float64 `json:"prefill_tokens_per_second"`
	// RequestOverheadSeconds is Config.RequestOverhead (0 unless
	// calibrated): the TTFT floor beyond the prefill.
	RequestOverheadSeconds float64 `json:"request_overhead_seconds,omitempty"`
	// ContextTokens is the per-sequence context the step times assume.
	ContextTokens int `json:"context_tokens"`
	// FullBatch is MaxBatch, or fewer when that many contexts of
	// ContextTokens do not fit the KV cache.
	FullBatch             int     `json:"full_batch"`
	StepBatch1Seconds     float64 `json:"step_batch1_seconds"`
	StepFullBatchSeconds  float64 `json:"step_full_batch_seconds"`
	OutputTokensPerSecond float64 `json:"output_tokens_per_second"` // at FullBatch

	ColdStartSeconds         float64 `json:"cold_start_seconds"`
	ImagePullSeconds         float64 `json:"image_pull_seconds"`
	WeightLoadSeconds        float64 `json:"weight_load_seconds"`
	WeightLoadBytesPerSecond float64 `json:"weight_load_bytes_per_second"`
	WarmUpSeconds            float64 `json:"warm_up_seconds"`

	CPURequestCores     float64 `json:"cpu_request_cores"`
	CPUIdlePercent      float64 `json:"cpu_idle_percent"`
	CPUBatch1Percent    float64 `json:"cpu_batch1_percent"`
	CPUFullBatchPercent float64 `json:"cpu_full_batch_percent"`
}

// Summarize computes the Summary with every sequence holding contextTokens
// tokens of context (docs/design.md's block uses 1000). contextTokens < 1 counts
// as 1.
func (r *Replica) Summarize(contextTokens int) Summary {
	if contextTokens < 1 {
		contextTokens = 1
	}
	c := r.cfg
	full := r.maxBatch
	if fit := r.kvCapacityTokens / int64(contextTokens); fit < int64(full) {
		full = int(max(fit, 1))
	}
	s := Summary{
		GPU: c.GPU.Name, Model: c.Model.Name, TP: c.TP,
		WeightDType: r.weightDType, KVDType: r.kvDType, Accounting: c.Accounting,
		Params: r.params, ActiveParams: r.activeParams,
		WeightsBytes: r.weightsBytes, KVBytesPerToken: r.kvBytesPerToken,
		KVFreeBytes: r.kvFreeBytes, KVBlocks: r.kvBlocks,
		KVCapacityTokens: r.kvCapacityTokens, MaxBatch: r.maxBatch,
		PrefillTokensPerSecond:   r.PrefillTokensPerSecond(),
		RequestOverheadSeconds:   r.requestOverhead,
		ContextTokens:            contextTokens,
		FullBatch:                full,
		StepBatch1Seconds:        r.StepTime(1, int64(contextTokens)),
		StepFullBatchSeconds:     r.StepTime(full, int64(full)*int64(contextTokens)),
		ColdStartSeconds:         r.coldStartSeconds,
		ImagePullSeconds:         c.ImagePull.Seconds(),
		WeightLoadSeconds:        r.weightLoadSecs,
		WeightLoadBytesPerSecond: c.WeightLoadBytesPerSecond,
		WarmUpSeconds:            c.WarmUp.Seconds(),
		CPURequestCores:          c.CPURequestCores,
		CPUIdlePercent:           r.CPUPercent(0),
		CPUBatch1Percent:         r.CPUPercent(1),
		CPUFullBatchPercent:      r.CPUPercent(full),
	}
	if c.Accounting == AccountingVLLM {
		s.BlockSize = c.BlockSize
	}
	s.OutputTokensPerSecond = float64(full) / s.StepFullBatchSeconds
	return s
}
