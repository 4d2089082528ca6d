package recommend

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Signal is a load signal a policy scales on.
type Signal int

// The signals, in the order DESIGN.md lists them.
const (
	// SignalQueue is requests running + waiting (+ held by an activator), summed
	// over replicas; AverageValue target in requests per replica.
	SignalQueue Signal = iota + 1
	// SignalWaiting is requests queued in the servers, summed over replicas.
	SignalWaiting
	// SignalRunning is requests being decoded, summed over replicas.
	SignalRunning
	// SignalKV is KV-cache usage, a fraction 0..1, averaged over reporting
	// replicas; Utilization target as a fraction (0.75).
	SignalKV
	// SignalCPU is pod CPU as a percentage of the pod's request, averaged over
	// reporting replicas; Utilization target in percent (60).
	SignalCPU
	// SignalTTFT is a time-to-first-token quantile in seconds; target in seconds.
	SignalTTFT
)

// Observation is what a source saw of one target at one instant. Every
// float64 signal is NaN when unknown (absent, query error, NaN or ±Inf in the
// source): unknown is never 0.
type Observation struct {
	// Current is the replicas the workload runs now (the scale target's spec).
	Current int
	// Reporting is how many replicas reported the per-replica signals; it is
	// the denominator of utilisation averages. 0 means "use Current".
	Reporting int
	// Running and Waiting are totals over replicas, in requests.
	Running, Waiting float64
	// Held is requests held in front of the servers (activator, gateway,
	// KEDA HTTP add-on), in requests; NaN or 0 when nothing holds requests.
	Held float64
	// KV is the mean over reporting replicas of each replica's KV-cache usage
	// (the max over its engines), a fraction 0..1.
	KV float64
	// CPU is the mean over reporting replicas of CPU use as a percentage of
	// the pod's CPU request.
	CPU float64
	// TTFT is the observed time-to-first-token quantile, in seconds.
	TTFT float64
}

// behaviorType keeps the HPA behavior import in the contract; the policy
// decodes the HPA's own autoscaling/v2 behavior rather than re-declaring it.
type behaviorType = autoscalingv2.HorizontalPodAutoscalerBehavior

var _ = time.Second
