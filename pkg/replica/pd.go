package replica

import (
	"fmt"
	"math"
)

// PD is the mean-value load a steady stream of requests puts on a
// prefill/decode (P/D) disaggregated pair of this replica (llm-d's
// prefill and decode roles, docs/llm-d.md): the first step of sizing the two
// pools apart. It is a steady-state estimate (no queueing, no bursts),
// not the replay.
type PD struct {
	// PrefillBusy is the prefill replicas kept busy: rate x prompt tokens /
	// PrefillTokensPerSecond.
	PrefillBusy float64 `json:"prefill_busy_replicas"`
	// DecodeSlots is the sequences one decode replica holds:
	// min(MaxBatch, KV capacity / (prompt + output)).
	DecodeSlots int `json:"decode_slots"`
	// StepSeconds is a decode step with DecodeSlots sequences each half
	// through its output (context prompt + output / 2): the slowest ITL a
	// full decode replica gives.
	StepSeconds float64 `json:"decode_step_seconds"`
	// DecodeSequences is the sequences decoding at once: rate x output x
	// StepSeconds (Little's law at the full-batch step).
	DecodeSequences float64 `json:"decode_sequences"`
	// DecodeBusy is DecodeSequences / DecodeSlots: decode replicas kept full.
	DecodeBusy float64 `json:"decode_busy_replicas"`
	// TransferBytes is one prompt's KV (prompt x KVBytesPerToken), moved
	// from a prefill to a decode replica; TransferSeconds that over the link.
	TransferBytes   float64 `json:"kv_transfer_bytes"`
	TransferSeconds float64 `json:"kv_transfer_seconds"`
}

// PD returns the pair's load for rate requests per second of prompt and
// output tokens with a KV link of linkBytesPerSecond between the pools.
// Errors: a rate or link not > 0, a prompt or output < 1, or one request
// that does not fit the KV cache.
func (r *Replica) PD(rate float64, prompt, output int, linkBytesPerSecond float64) (PD, error) {
	switch {
	case !(rate > 0) || math.IsInf(rate, 0):
		return PD{}, fmt.Errorf("rate %v: want requests per second > 0", rate)
	case prompt < 1 || output < 1:
		return PD{}, fmt.Errorf("prompt %d, output %d: want tokens >= 1", prompt, output)
	case !(linkBytesPerSecond > 0) || math.IsInf(linkBytesPerSecond, 0):
		return PD{}, fmt.Errorf("KV link %v bytes/s: want > 0", linkBytesPerSecond)
	}
	per := int64(prompt + output)
	if per > r.KVCapacityTokens() {
		return PD{}, fmt.Errorf("a request of %d tokens does not fit the KV cache of %d tokens", per, r.KVCapacityTokens())
	}
	p := PD{PrefillBusy: rate * float64(prompt) / r.PrefillTokensPerSecond()}
	p.DecodeSlots = int(min(int64(r.MaxBatch()), r.KVCapacityTokens()/per))
	p.StepSeconds = r.StepTime(p.DecodeSlots, int64(p.DecodeSlots)*int64(prompt+output/2))
	p.DecodeSequences = rate * float64(output) * p.StepSeconds
	p.DecodeBusy = p.DecodeSequences / float64(p.DecodeSlots)
	p.TransferBytes = float64(prompt) * r.KVBytesPerToken()
	p.TransferSeconds = p.TransferBytes / linkBytesPerSecond
	return p, nil
}
