package recommend

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Signal is a load signal a policy scales on.
type Signal int

// The signals, in the order docs/design.md lists them.
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
	// SignalQueueWait is a queue-time quantile (vllm:request_queue_time_seconds)
	// in seconds; target in seconds; the arithmetic of ttft.
	SignalQueueWait
	// SignalDemand is the work arriving per second against one replica's
	// capacity (Policy.Capacity, see demand.go); target is the utilisation
	// one replica should run at, a fraction in (0, 1].
	SignalDemand
)

// Observation is what a source saw of one target at one instant. Every
// float64 signal is NaN when unknown (absent, query error, NaN or ±Inf in the
// source): unknown is never 0.
type Observation struct {
	// Current is the replicas the workload runs now (the scale target's spec).
	Current int
	// Reporting is how many replicas reported the per-replica signals; it is
	// the denominator of utilisation averages. 0 means "Current − Unready".
	// Replicas neither reporting nor unready are missing (a failed scrape)
	// and the HPA's missing-pods rule applies (raw.go podsRule).
	Reporting int
	// Unready is how many of Current are not ready yet (starting, loading
	// weights) and so report nothing: the HPA leaves them out on a
	// scale-down and counts them at 0 on a scale-up. 0 when not known.
	Unready int
	// Running and Waiting are totals over replicas, in requests.
	Running, Waiting float64
	// Queued is how many reporting replicas have a request waiting (their
	// own waiting above 0): the replicas holding the queue, each request
	// waiting on the replica it was routed to. 0 when not known (or
	// nothing waits); the latency guards' capacity bound then estimates
	// it from Running (latencyCap).
	Queued int
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
	// QueueTime is the observed queue-time quantile (time a request waited
	// before its first scheduling), in seconds.
	QueueTime float64
	// ITL is the observed inter-token-latency quantile, in seconds.
	ITL float64
	// ArrivalRate is requests arriving per second over the target.
	ArrivalRate float64
	// ArrivalWindow is the span ArrivalRate was counted over (Prometheus's
	// rate() window; embedded, the time between two scrapes), for the
	// demand trend's noise gate (demand.go); 0 means DefaultArrivalWindow.
	ArrivalWindow time.Duration
	// PromptTokensRate and GenerationTokensRate are prompt (prefilled) and
	// generated tokens per second over the target.
	PromptTokensRate, GenerationTokensRate float64
	// MeanPrompt and MeanOutput are the mean prompt and output length of
	// recently finished requests, in tokens per request.
	MeanPrompt, MeanOutput float64
	// PrefixHit is the fraction (0..1) of prompt tokens found in the
	// prefix cache over the rate window: the rate of the servers' cache-hit
	// token counter over that of their cache-query (prompt) token counter
	// (vLLM V1 vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total,
	// SGLang sglang:cached_tokens_total / sglang:prompt_tokens_total;
	// HitFraction). The demand signal prefills only the rest
	// (Capacity.RequestSecondsCached). NaN when unknown (no such counters,
	// no prompt in the window), which the demand arithmetic takes as 0:
	// every prompt token prefilled.
	PrefixHit float64
	// NoneFinished is true when TTFT is NaN because no request finished in
	// the quantile's window (the histogram's count did not grow: PromQL's
	// histogram_quantile is NaN), as opposed to a read that failed. With
	// running and waiting known 0 the ttft metric then abstains
	// (TTFTAbstains).
	NoneFinished bool
}

// Unknown is an Observation with every signal unknown (NaN) and no
// replicas: what a source starts from, filling what it read.
func Unknown() Observation {
	nan := math.NaN()
	return Observation{Running: nan, Waiting: nan, Held: nan, KV: nan, CPU: nan, TTFT: nan,
		QueueTime: nan, ITL: nan, ArrivalRate: nan, PromptTokensRate: nan, GenerationTokensRate: nan, MeanPrompt: nan, MeanOutput: nan, PrefixHit: nan}
}

// Metric is one signal of a Policy with its target.
type Metric struct {
	// Signal is what is measured.
	Signal Signal
	// Target is the value one replica should carry: requests per replica for
	// queue, waiting and running (AverageValue); a fraction 0..1 for kv and a
	// percentage of the CPU request for cpu (Utilization); seconds for ttft.
	// It must be finite and > 0 (kv also <= 1).
	Target float64
}

// Tolerance is the HPA's dead band around a usage ratio of 1, per direction
// (Kubernetes >= 1.33 semantics): a ratio r with 1-Down <= r <= 1+Up keeps
// the current replicas. Both are fractions >= 0 (0.1 is 10%).
type Tolerance struct {
	Up, Down float64
}

// DefaultTolerance is the HPA's default (the controller's
// --horizontal-pod-autoscaler-tolerance), 10% each way.
var DefaultTolerance = Tolerance{Up: 0.1, Down: 0.1}

// Zero enables scale to zero with KEDA semantics (only with Policy.Min 0):
// after Cooldown without any observed activity the last replica is removed,
// whatever the stabilisation windows and rate limits say.
type Zero struct {
	// Cooldown is KEDA's cooldownPeriod: how long the target must have been
	// idle (running + waiting + held all 0) before it goes to zero.
	Cooldown time.Duration
}

// DefaultZeroCooldown is KEDA's default cooldownPeriod (300 s), used when a
// policy has Min 0 and no Zero.
const DefaultZeroCooldown = 300 * time.Second

// ScheduleWindow raises the minimum while a cron window is active: from each
// time Cron fires, for Duration, the floor is Min.
type ScheduleWindow struct {
	// Cron is a standard 5-field cron expression (minute hour day-of-month
	// month day-of-week, robfig/cron/v3 ParseStandard, also @daily etc.).
	Cron string
	// Duration is how long the window lasts after each firing (> 0, at
	// most a year), on Location's wall clock: a DST change inside it
	// shortens or lengthens it in elapsed time (compiledWindow).
	Duration time.Duration
	// Min is the replica floor while the window is active (>= 0, <= Policy.Max).
	Min int
	// Location is the IANA time zone the cron is read in ("" is UTC).
	Location string
}

// Policy is what to scale on and how: metrics with targets, bounds, the
// HPA's tolerance and behavior, and what the HPA lacks (lookahead, scale to
// zero, a schedule floor). Call Validate before the first Decide: it reports
// every problem and prepares the policy (defaults, compiled schedules).
// A validated Policy is read-only in Decide and may be shared.
type Policy struct {
	// Metrics are the signals; the largest recommendation wins (>= 1).
	Metrics []Metric
	// Min and Max bound the desired replicas (0 <= Min <= Max, Max >= 1).
	// Min 0 enables scale to zero (see Zero).
	Min, Max int
	// Tolerance is the dead band; nil means the behavior's
	// scaleUp/scaleDown.tolerance when set, else DefaultTolerance.
	Tolerance *Tolerance
	// Behavior is the HPA's own autoscaling/v2 behavior; unset fields take
	// the HPA defaults (Validate fills them): scaleUp window 0 s, policies
	// Pods 4 and Percent 100 per 15 s, selectPolicy Max; scaleDown window
	// 300 s, Percent 100 per 15 s, selectPolicy Max.
	Behavior autoscalingv2.HorizontalPodAutoscalerBehavior
	// NoBehavior is the HPA controller's path for an HPA without
	// spec.behavior (normalizeDesiredReplicas), as KEDA creates one from a
	// ScaledObject without advanced.horizontalPodAutoscalerConfig.behavior:
	// the highest recommendation within the controller's downscale
	// stabilisation window (Behavior.ScaleDown.StabilizationWindowSeconds
	// stands for --horizontal-pod-autoscaler-downscale-stabilization,
	// default 300 s; its start included) and, scaling up, at most max(2 ×
	// current, 4) per decision, with no periods and no scale-down limit.
	// Behavior's other fields must be unset.
	NoBehavior bool
	// Lookahead is the horizon demand is projected over (typically the cold
	// start); 0 disables it. See lookahead.go for the formula.
	Lookahead time.Duration
	// Zero configures scale to zero; only with Min 0 (nil then means
	// DefaultZeroCooldown).
	Zero *Zero
	// Schedule raises Min while a window is active.
	Schedule []ScheduleWindow
	// Guard is the runaway guard (guard.go); nil means on with DefaultSettle.
	Guard *Guard
	// Capacity is one replica's sustainable throughput, needed by the
	// demand signal (demand.go); nil otherwise.
	Capacity *Capacity
	// Hold is the cost-aware scale-down (hold.go); nil means off.
	Hold *Hold
	// RampBound is how many of its Poisson standard errors the demand
	// signal adds to an arrival trend that counts before projecting it
	// (demand.go; RampBoundFor derives it from the cost of a late and of
	// an early replica). 0 projects the fitted slope; 0 to 10.
	RampBound float64

	// prepared by Validate (or lazily by Decide):
	prepared             bool
	tol                  Tolerance
	windows              []compiledWindow
	upWindow, downWindow time.Duration // stabilizationWindowSeconds
	upPeriod, downPeriod time.Duration // longest periodSeconds, for pruning events
	cooldown             time.Duration // scale-to-zero cooldown
	demandMetric         int           // index of the first additive metric, -1 if none
}

// Reason says which step decided a Decision (or a Step).
type Reason int

// The reasons, see String for their names.
const (
	// ReasonMetric: the metrics' recommendation was applied as is (the
	// HPA's DesiredWithinRange).
	ReasonMetric Reason = iota + 1
	// ReasonTolerance: the usage ratio was within the tolerance band, current kept.
	ReasonTolerance
	// ReasonScaleUpStabilized: the scaleUp stabilisation window held the
	// recommendation at the lowest of its recent ones (the HPA's
	// ScaleUpStabilized).
	ReasonScaleUpStabilized
	// ReasonScaleDownStabilized: the scaleDown stabilisation window (or the
	// cost-aware hold) held the recommendation at the highest of its recent
	// ones (the HPA's ScaleDownStabilized).
	ReasonScaleDownStabilized
	// ReasonScaleUpLimit: a scaleUp behavior policy (Pods/Percent per
	// period) limited the increase (the HPA's ScaleUpLimit).
	ReasonScaleUpLimit
	// ReasonScaleDownLimit: a scaleDown behavior policy limited the
	// decrease (the HPA's ScaleDownLimit).
	ReasonScaleDownLimit
	// ReasonMin: raised to Min (the HPA's TooFewReplicas).
	ReasonMin
	// ReasonMax: lowered to Max (the HPA's TooManyReplicas).
	ReasonMax
	// ReasonIdleToZero: idle for the cooldown, scaled to (or stayed at) zero.
	ReasonIdleToZero
	// ReasonActivate: held requests activate a target at zero.
	ReasonActivate
	// ReasonSchedule: a schedule window raised the floor.
	ReasonSchedule
	// ReasonNoData: no metric was valid, current kept.
	ReasonNoData
	// ReasonLookahead: the projected demand asked for more than the present one.
	ReasonLookahead
	// ReasonPartialData: some metric was unknown, so a scale-down was withheld
	// (the HPA's missing-data rule).
	ReasonPartialData
	// ReasonCooldown: idle with Min 0, but the cooldown has not elapsed yet, so
	// the last replica stays.
	ReasonCooldown
	// ReasonGuard: the runaway guard held a ratio or backlog metric at the
	// replicas already asked for (at those present, when it asks for more
	// than exist) while they are coming (guard.go), or a
	// latency guard was bounded by capacity (latencyCap; also with the
	// runaway guard off).
	ReasonGuard
	// ReasonHold: the cost-aware hold (Hold, hold.go) kept replicas a
	// scale-down would release: their release's age is below their
	// break-even threshold T*, or they are the inherited fleet.
	ReasonHold
	// ReasonPair: a P/D pair's ratio bound (Bound) raised the role to what
	// the other role's demand implies.
	ReasonPair

	// ReasonLast is the last reason: ReasonMetric..ReasonLast are every
	// one (a loop over them, a table's width).
	ReasonLast = ReasonPair
)

// Step is one stage of the pipeline: the replica count after it, why, and
// the arithmetic in words.
type Step struct {
	// Stage is the pipeline stage the step explains, set on every step
	// (a step that changed nothing has a Stage but no Reason).
	Stage Stage `json:"stage"`
	// Reason is why this step set Value; 0 (JSON: the key left out) when
	// the step explains a stage that did not change the count.
	Reason Reason `json:"reason,omitempty"`
	// Value is the replica count after this step.
	Value int `json:"value"`
	// Text is the arithmetic, e.g. "queue 12 / target 4 per replica = 3".
	Text string `json:"text"`
}

// Stage names a stage of the pipeline (docs/recommend.md, "The pipeline",
// whose section numbers are in the comments).
type Stage string

// The stages, in pipeline order.
const (
	// StageMetric: one metric's recommendation with its tolerance and
	// guards (1-2), one step per metric.
	StageMetric Stage = "metric"
	// StageLargest: the largest of several metrics' recommendations (3).
	StageLargest Stage = "largest"
	// StageMissingData: no metric known, or a scale-down withheld for a
	// metric unknown (3): the count held.
	StageMissingData Stage = "missing-data"
	// StageLookahead: the projected demand (4).
	StageLookahead Stage = "lookahead"
	// StageZero: at zero replicas, activation or staying at zero (5); the
	// last replica kept for the cooldown, or gone after it (8).
	StageZero Stage = "zero"
	// StageStabilization: the stabilisation windows and the cost-aware
	// scale-down hold (6).
	StageStabilization Stage = "stabilization"
	// StageLimits: the scaling policies' rate limits, min, max and the
	// schedule floor (7-8; the HPA's convertDesiredReplicasWithBehaviorRate
	// bounds the count within its rate limits).
	StageLimits Stage = "limits"
)

// Raw is one metric's part of a decision.
type Raw struct {
	Signal Signal `json:"signal"`
	// Value is the observed signal (total requests for queue/waiting/running,
	// mean over reporting replicas for kv/cpu, seconds for ttft); NaN when
	// unknown (JSON null).
	Value float64 `json:"value"`
	// Target is the metric's target.
	Target float64 `json:"target"`
	// Ratio is the HPA usage ratio value/(target × replicas) (or value/target
	// for utilisation and ttft); NaN when unknown.
	Ratio float64 `json:"ratio"`
	// Replicas is the plain recommendation before tolerance, e.g. ceil(total/target).
	Replicas int `json:"replicas"`
	// Desired is the recommendation after tolerance (Current when inside the band).
	Desired int `json:"desired"`
	// Valid is false when the signal was unknown or the metric abstained.
	Valid bool `json:"valid"`
	// Abstained is true when the metric had nothing to say on known
	// idleness (ttft with no finished request and nothing running or
	// waiting: TTFTAbstains); it then does not block a scale-down.
	Abstained bool `json:"abstained,omitempty"`
}

// Decision is the outcome of Decide.
type Decision struct {
	// Desired is the recommended replica count: within Min..Max (0 with scale
	// to zero), except that no-data and partial-data keep the previous output.
	Desired int `json:"desired"`
	// Current is Observation.Current.
	Current int `json:"current"`
	// Reason is the step that decided Desired.
	Reason Reason `json:"reason"`
	// Raw is the per-metric part, in Policy.Metrics order (JSON: an object
	// keyed by signal name).
	Raw RawResults `json:"raw"`
	// Steps are the pipeline stages in order (none when decided by a
	// Decider with Quiet set: Decider.Explain).
	Steps []Step `json:"steps"`

	quiet bool  // steps not written (Decider.Quiet)
	stage Stage // the Stage step gives the steps it appends
}

// RawResults is Decision.Raw; it marshals to a JSON object keyed by signal.
type RawResults []Raw

// TimedReplicas is a replica recommendation at an instant.
type TimedReplicas struct {
	At       time.Time `json:"at"`
	Replicas int       `json:"replicas"`
}

// ScaleEvent is a change of the desired output: Change replicas (> 0) added
// (in State.ScaleUpEvents) or removed (in State.ScaleDownEvents) at At.
type ScaleEvent struct {
	At     time.Time `json:"at"`
	Change int       `json:"change"`
}

// DemandSample is the total demand of the first additive metric at an
// instant, in requests (for lookahead).
type DemandSample struct {
	At     time.Time `json:"at"`
	Demand float64   `json:"demand"`
}

// State is what Decide remembers between calls for one target, like the HPA
// controller's in-memory recommendations and scale events. It is
// JSON-serialisable (decide --state, serve's restart safety) and bounded:
// Decide prunes what the longest window no longer needs. The zero State is a
// fresh start.
type State struct {
	// Recommendations are the unstabilised recommendations (HPA:
	// timestampedRecommendation), oldest first, kept for the longer
	// stabilisation window.
	Recommendations []TimedReplicas `json:"recommendations"`
	// ScaleUpEvents and ScaleDownEvents are changes of infscale's own desired
	// output (see Decide), in the HPA's slots: an event older than its
	// direction's longest policy period gives its slot to the next one
	// (recordEvent).
	ScaleUpEvents   []ScaleEvent `json:"scale_up_events"`
	ScaleDownEvents []ScaleEvent `json:"scale_down_events"`
	// Demand is the recent demand, kept for twice the lookahead.
	Demand []DemandSample `json:"demand"`
	// FirstSeen is the first observation; LastActive the last one with
	// activity (running, waiting or held > 0). Zero when none.
	FirstSeen  time.Time `json:"first_seen"`
	LastActive time.Time `json:"last_active"`
	// LastDesired is the previous Decision.Desired, valid when LastAt is not zero.
	LastDesired int       `json:"last_desired"`
	LastAt      time.Time `json:"last_at"`
	// Coming is how many replicas asked for were not ready at the last
	// decision; ReadyAt when they last all became ready (the guard's settle,
	// guard.go). Zero when none.
	Coming  int       `json:"coming,omitempty"`
	ReadyAt time.Time `json:"ready_at,omitzero"`
	// Arrivals are the recent arrival rates of the demand signal, in
	// requests/s, oldest first, kept for 135 s (the trend span of 45 s and
	// the 90 s baseline the trend needs) or the lookahead, the longer (the
	// latency guards' highest rate while replicas start).
	Arrivals []DemandSample `json:"arrivals,omitempty"`
	// Work are work samples (replicas busy) an older version kept for the
	// trend: read and validated so its state files load, then dropped.
	Work []DemandSample `json:"work,omitempty"`
	// Dips are the last MaxDips dips of Hold, oldest first; OpenDip the one
	// in progress (hold.go).
	Dips    []Dip    `json:"dips,omitempty"`
	OpenDip *OpenDip `json:"open_dip,omitempty"`
	// Inherited is the current count at the state's first decision under
	// Hold (the fleet it began with; 0: none recorded): until a recorded
	// dip has released replica k <= Inherited, its threshold is the
	// break-even (hold.go).
	Inherited int `json:"inherited,omitempty"`
	// RatePeaks are the highest arrival rates (requests/s) per twelfth of
	// the hold's memory, oldest first (hold.go).
	RatePeaks []DemandSample `json:"rate_peaks,omitempty"`
	// Ramps are the last MaxRamps counted arrival trends of the demand
	// signal under Hold, oldest first, with what the rate did after
	// (ramp.go).
	Ramps []Ramp `json:"ramps,omitempty"`
	// HeldZeroAt is the first decision of the target's stay at zero that
	// read it at zero replicas (current read, 0) with held known 0, every
	// decision since having read it at zero or not at all, held not above
	// 0 (Decider: cleared by a current read above 0 or held above 0).
	// Zero when none. serve reads it to carry held 0 for an EPP pool idle
	// at zero whose flow-control queue series are gone (docs/llm-d.md);
	// no decision reads it.
	HeldZeroAt time.Time `json:"held_zero_at,omitzero"`
}

// MeanLengths is the mean prompt and output length, in tokens per request,
// of a target whose requests finish at arrivals per second while it
// prefills promptRate and generates generationRate tokens per second:
// the rate ratios promptRate/arrivals and generationRate/arrivals. Both
// NaN when arrivals is unknown or not > 0 (no finished request: no mean),
// each NaN when its rate is unknown.
func MeanLengths(arrivals, promptRate, generationRate float64) (prompt, output float64) {
	if !(arrivals > 0) || math.IsInf(arrivals, 0) {
		return math.NaN(), math.NaN()
	}
	return promptRate / arrivals, generationRate / arrivals
}

// HitFraction is the prefix-cache hit fraction (Observation.PrefixHit) of
// servers that found hits prompt tokens per second in their prefix cache
// out of queries looked up: hits / queries, in [0, 1]. NaN when either
// rate is unknown, queries is not > 0 (no prompt in the window) or hits
// is negative or above queries (counters that do not pair up).
func HitFraction(hits, queries float64) float64 {
	if !(queries > 0) || math.IsInf(queries, 0) || !(hits >= 0) || hits > queries {
		return math.NaN()
	}
	return hits / queries
}

// Largest is the metric whose recommendation the decision took: the valid
// one (known, not abstained) with the largest Desired, the first in
// Policy.Metrics order on a tie, as Decide's "largest" stage names it.
// ok is false when no metric was valid (no-data, or every metric
// abstained).
func (rs RawResults) Largest() (s Signal, ok bool) {
	best := 0
	for _, r := range rs {
		if !r.Valid || r.Abstained {
			continue
		}
		if !ok || r.Desired > best {
			s, best, ok = r.Signal, r.Desired, true
		}
	}
	return s, ok
}
