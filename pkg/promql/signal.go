package promql

import "fmt"

// Signal is one value Evaluate reads for a target. The first six are the
// load signals (recommend.Observation's); Current and Reporting are the
// replica counts around them.
type Signal int

// The signals, in evaluation order.
const (
	// Running is requests being decoded, summed over engines and pods.
	Running Signal = iota + 1
	// Waiting is requests queued in the servers, summed over engines and pods.
	Waiting
	// Reporting is the number of live pods that report Running (or Waiting
	// for a profile without a running family).
	Reporting
	// KV is KV-cache usage 0..1: max over a pod's engines, mean over pods.
	KV
	// CPU is pod CPU use in percent of the pod's CPU request, mean over pods.
	CPU
	// TTFT is a time-to-first-token quantile in seconds over a window.
	TTFT
	// Held is requests held in front of the servers (the target's held query).
	Held
	// Current is the replicas the workload runs (the target's replicas query).
	Current
	// Unready is the number of pods that exist but are not Ready (loading
	// weights); only with LiveReady, from kube-state-metrics.
	Unready
	// Stuck is the number of live pods that look like stuck engines (case
	// C18 of docs/design.md): requests waited through the whole window and neither token
	// counter moved in it. Only with Target.Stuck.
	Stuck
	// StuckWaiting is the Waiting of the Stuck pods (the same per-pod sums,
	// restricted to them), subtracted from Waiting. Only with Target.Stuck.
	StuckWaiting
	// Duplicated is the number of series deduplication folded (beyond one
	// per pod, engine and model) in the running (else waiting) family.
	// Only with Target.Duplicates.
	Duplicated
	// QueueTime is a queue-time quantile in seconds over a window (vLLM
	// request_queue_time_seconds). Only with Target.QueueTimeQuantile.
	QueueTime
	// ITL is an inter-token-latency quantile in seconds over a window. Only
	// with Target.ITLQuantile.
	ITL
	// Arrivals is requests finished successfully per second, summed over
	// pods (rate() of the requests counter over Options.DemandWindow), the
	// arrival rate at steady state. Only with Target.Demand.
	Arrivals
	// PromptTokens and GenerationTokens are tokens per second, summed over
	// pods (rate() of the token counters). Only with Target.Demand.
	PromptTokens
	GenerationTokens
	// PrefixHit is the prefix cache's hit fraction 0..1: prompt tokens
	// per second found in the cache over those looked up in it (rate() of
	// the profile's PrefixHits and PrefixQueries counters over
	// Options.DemandWindow, each summed over the pods that export both).
	// Only with Target.Demand; absent (a profile or a server without the
	// counters, no prompt in the window) is unknown, never an error.
	PrefixHit
	// Queued is the number of live pods whose waiting (their per-pod sum)
	// is above 0: the pods holding the queue (recommend.Observation.Queued);
	// for an llm-d EPP (epp.go) the endpoints whose per-endpoint queue is
	// above 0, stale ones included (serve caps it at the ready ones).
	// Only with Target.Demand, and not when an override owns the waiting
	// shape.
	Queued
	// Pools is the number of InferencePools whose Endpoint Picker series
	// the selector matches (distinct name labels of the ready-endpoints
	// gauge). Only for server epp: more than one and every signal is
	// unknown (ReasonAmbiguous), as in embedded mode.
	Pools
	// PoolSeries is, for server epp, the most series one EPP page (the
	// series' job, instance, pod and HA replica labels) has of one pool
	// gauge (ready endpoints or an average, either spelling), or, when the
	// flow-control queue is read (Target.FlowControlHeld), the
	// InferencePools its series name (label inference_pool) if more. Above
	// 1 the signals read from them are unknown (ReasonAmbiguous, the error
	// naming the target, the family and the labels that differ), as
	// embedded mode refuses such a page: the router writes one series of
	// each gauge per pool.
	PoolSeries
)

// MaxInFlight bounds a sum of requests at one target (Running, Waiting,
// Held): 10,000 replicas (the replay's most) x 2^20 sequences (the most a
// replica batches), 10,485,760,000. A larger sum is read as no count
// (ReasonBadData), as backtest refuses such a history
// (backtest.MaxInFlight, the same bound).
const MaxInFlight float64 = 10000 * (1 << 20)

// MaxArrivalRate, MaxTokenRate and MaxLatency bound the demand rates and
// the latency quantiles as other inputs bound them: 1e6 requests a second
// (load --rate, accuracy's stage_rate_rps), 1e6 requests of 2^20 tokens
// (load --prompt-tokens) a second, 1e7 s (accuracy's measured latency).
// Past them a value is read as no measurement (ReasonBadData).
const (
	MaxArrivalRate float64 = 1e6
	MaxTokenRate   float64 = 1e6 * (1 << 20)
	MaxLatency     float64 = 1e7
)

var signalNames = [...]string{
	Running: "running", Waiting: "waiting", Reporting: "reporting", KV: "kv",
	CPU: "cpu", TTFT: "ttft", Held: "held", Current: "current", Unready: "unready",
	Stuck: "stuck", StuckWaiting: "stuck_waiting", Duplicated: "duplicated",
	QueueTime: "queue_time", ITL: "itl", Arrivals: "arrivals",
	PromptTokens: "prompt_tokens", GenerationTokens: "generation_tokens",
	PrefixHit: "prefix_hit", Queued: "queued", Pools: "pools", PoolSeries: "pool_series",
}

// Signals returns every Signal in evaluation order.
func Signals() []Signal {
	return []Signal{Running, Waiting, Reporting, KV, CPU, TTFT, Held, Current, Unready, Stuck, StuckWaiting, Duplicated,
		QueueTime, ITL, Arrivals, PromptTokens, GenerationTokens, PrefixHit, Queued, Pools, PoolSeries}
}

// String returns the lower-case name used in labels, logs and golden files.
func (s Signal) String() string {
	if s > 0 && int(s) < len(signalNames) {
		return signalNames[s]
	}
	return fmt.Sprintf("Signal(%d)", int(s))
}

// ParseSignal maps a name ("running", "kv", ...) to a Signal.
func ParseSignal(name string) (Signal, error) {
	for _, s := range Signals() {
		if s.String() == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("unknown signal %q (allowed: running, waiting, reporting, kv, cpu, ttft, held, current, unready, stuck, stuck_waiting, duplicated, queue_time, itl, arrivals, prompt_tokens, generation_tokens, prefix_hit)", name)
}
