// Package replica models one LLM inference replica (one vLLM-like engine on one
// or more GPUs) from first principles: how many bytes its weights take, how
// many tokens of KV cache fit beside them, how fast it prefills (compute-bound)
// and decodes (memory-bound), how long it takes to start, and how busy its pod's
// CPU looks.
//
// Reading guide: gpu.go and model.go are the catalogs (every figure with its
// source); dtype.go the number formats; config.go the knobs and their
// defaults (DefaultConfig reproduces docs/design.md's reference block figure for
// figure; Calibrated is the vLLM-fitted mode); replica.go derives a Replica
// once with New and answers the simulator's questions (StepTime, PrefillTime,
// KVCapacityTokens, MaxBatch, ColdStart, CPUPercent) in a few multiplies.
//
// Units: bytes, seconds, FLOP/s and tokens throughout; "GB" is 1e9 bytes and
// "GiB" 2^30 bytes. The package is pure: no I/O, no clock.
package replica
