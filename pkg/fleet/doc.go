// Package fleet is a simulated vLLM fleet for demos and end-to-end tests:
// N replicas on loopback, each exposing vLLM-named /metrics
// (vllm:num_requests_running, vllm:num_requests_waiting,
// vllm:kv_cache_usage_perc, vllm:time_to_first_token_seconds, token and
// request counters), serving requests that arrive at a controllable rate
// with pkg/replica's step time, prefill speed and KV capacity. It can follow
// a desired replica count (infscale_desired_replicas read from a URL, or any
// function) as KEDA would: new replicas serve after their cold start, extra
// replicas go at once (their requests are re-queued on the others). For
// fault drills it takes bursts, /metrics failures and clients going away,
// from Go (Inject, SetFailing, Cancel) or over HTTP (Config.Control).
//
// Reading guide: fleet.go (Fleet, Start, the control methods), engine.go
// (one replica's continuous-batching engine, advanced tick by tick),
// exposition.go (each replica's registry and HTTP server), follow.go
// (reading infscale_desired_replicas), control.go (the fault-drill API).
package fleet
