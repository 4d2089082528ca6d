package replay

import (
	"math"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/infscale/infscale/pkg/recommend"
)

// The llm-d baselines: the four autoscaling paths llm-d documents (KEDA's
// prometheus trigger on the Endpoint Picker's metrics, through the HPA KEDA
// generates), with the guides' thresholds and HPA behavior. Sources,
// llm-d/llm-d guides/workload-autoscaling/:
//
//   - llmd-queue: keda-epp/optimized-baseline/overlays/k8s/queue/scaledobject.yaml
//     (057abb4a51654802c439e9e77598fc6239f664b7): sum(llm_d_epp_flow_control_queue_size)
//     threshold 1 and sum(llm_d_epp_request_running) threshold 16, both
//     AverageValue; minReplicaCount 1; scaleUp and scaleDown windows 300 s,
//     Percent 100 per 15 s.
//   - llmd-saturation: .../k8s/saturation/scaledobject.yaml
//     (321a7e8c2bca4a21d8eed41c26ac1b224a59665f):
//     max(llm_d_epp_flow_control_pool_saturation) threshold 0.7 and the same
//     running trigger and behavior. The saturation is the utilization
//     detector's (llm-d-router ebab687927f5
//     pkg/epp/framework/plugins/flowcontrol/saturationdetector/utilization):
//     the mean over endpoints of max(waiting / 5, kv / 0.8) (defaults
//     queueDepthThreshold 5, kvCacheUtilThreshold 0.8), 1.0 for an empty pool.
//   - llmd-tokens: keda-epp-token-aware/optimized-baseline/base/scaledobject.yaml
//     (04c0115b34c2ca2c699e72547fb7c985997b7ef1): sum(llm_d_epp_inflight_tokens) /
//     V_P threshold 1.5 (seconds of prefill backlog) and
//     sum(vllm:kv_cache_usage_perc) threshold 0.8; minReplicaCount 1; scaleUp
//     window 0, Pods 1 per 180 s; scaleDown window 300, Pods 1 per 300 s. V_P
//     is calibrate.sh's CHUNK_SIZE (8192) / TTFT of that prompt on an idle
//     replica (README at 560d420e6422).
//   - llmd-slo: README.slo-aware.md (d38c9f0c81e9cbaf60b06eb2819147f5acdf982a):
//     s_raw = max(TTFT_q / S_ttft, TPOT_q / S_tpot) (NaN or no traffic: 0), s =
//     the 45 s average of min(s_raw, 2); with n provisioned and r ready
//     replicas and credit c = r/n (0 < r < n, else 1): d = n + ceil(n (s c /
//     0.55 - 1)) above 0.55, n - floor(n (1 - s / 0.40)) below 0.40, else n;
//     the formula is the metric at AverageValue 1; scaleUp window 30 s,
//     max(100 %, 4 pods) per 60 s; scaleDown window 180 s, 1 pod per 120 s;
//     bounds 3..8 in the benchmark (min 3 here). S_tpot 100 ms as in the
//     guide; S_ttft the replay's SLO (the guide's 3 s is its example).
//
// What the replay cannot see is modelled, and said so in docs/llm-d.md: it
// has no gateway, so the flow-control queue is the requests the EPP's
// utilization detector would hold (all waiting ones with the pool's KV
// usage at 0.8 or more, else those beyond 5 waiting per ready replica, plus
// any held while no replica is ready); llm_d_epp_request_running is the
// requests dispatched to the servers and not finished; the saturation is
// computed from the pool's mean waiting and KV (exact when the EPP keeps
// the endpoints balanced); in-flight tokens are the dispatched requests
// times the mean prompt (no prefix cache in the replay); the TTFT quantile
// is the replay's (Config.TTFTQuantile), the TPOT the replica model's step
// time at the mean batch and context. The guides' maxReplicaCount (8, 10)
// is a deployment's quota, not a default: max= gives it (default 100, as
// the other baselines).
const (
	llmdQueueDepth    = 5.0  // utilization detector queueDepthThreshold
	llmdKVThreshold   = 0.8  // utilization detector kvCacheUtilThreshold
	llmdChunk         = 8192 // calibrate.sh CHUNK_SIZE
	llmdSLOClamp      = 2.0
	llmdSLOWindow     = 45.0
	llmdSLOUp         = 0.55
	llmdSLODown       = 0.40
	llmdSLOTPOT       = 0.1 // seconds
	llmdSLODefaultMin = 3
)

// LLMDBaselines are the names of the llm-d baselines.
var LLMDBaselines = []string{"llmd-queue", "llmd-saturation", "llmd-tokens", "llmd-slo"}

// llmdCtl is one llm-d baseline: its triggers' values from the
// observation (values), fed as External metrics (no per-pod samples, no
// missing pods) into the HPA's arithmetic (a pkg/recommend Decide with one
// metric per trigger, AverageValue: running and waiting as two additive
// slots), after the HPA's check of a count outside [min, max].
type llmdCtl struct {
	values func(now float64, obs recommend.Observation) (running, waiting float64)
	outer  *infscaleCtl
	// triggers name the metric each slot carries (the running slot's,
	// then the waiting slot's), as the baseline's ScaledObject queries it.
	triggers [2]string
}

// llmdTriggers are each baseline's triggers' metrics, by slot (running,
// waiting): docs/llm-d.md's table of the four baselines.
var llmdTriggers = map[string][2]string{
	"llmd-queue":      {"llm_d_epp_request_running", "llm_d_epp_flow_control_queue_size"},
	"llmd-saturation": {"llm_d_epp_request_running", "llm_d_epp_flow_control_pool_saturation"},
	"llmd-tokens":     {"llm_d_epp_inflight_tokens", "vllm:kv_cache_usage_perc"},
	"llmd-slo":        {"slo", ""},
}

func (c *llmdCtl) Decide(now float64, obs recommend.Observation) int {
	if n, ok := c.outer.outsideBounds(now, obs.Current); ok {
		return n
	}
	a, b := c.values(now, obs)
	ext := recommend.Unknown()
	ext.Current, ext.Reporting = obs.Current, obs.Current
	// KEDA's prometheus scaler reads an empty result as 0 (ignoreNullValues
	// true, the guides' default) and the token guide's queries end in `or
	// vector(0)`.
	ext.Running, ext.Waiting, ext.Held = zeroNaN(a), zeroNaN(b), 0
	return c.outer.Decide(now, ext)
}

// explain is the HPA's reason on the KEDA metrics, the metric named as
// the trigger queries it (the signals are the scaler's slots: running for
// the first trigger, waiting for the second).
func (c *llmdCtl) explain() (reason, metric string) {
	reason, metric = c.outer.explain()
	slot := -1
	switch metric {
	case recommend.SignalRunning.String():
		slot = 0
	case recommend.SignalWaiting.String():
		slot = 1
	}
	if slot >= 0 {
		// A slot without a trigger (llmd-slo's second; one of llmd-tokens'
		// per pool of a P/D pair) reads 0: it is the largest only in a tie
		// at 0, and the other slot's trigger decided.
		metric = c.triggers[slot]
		if metric == "" {
			metric = c.triggers[1-slot]
		}
	}
	return reason, metric
}

func (c *llmdCtl) warm(n int, epoch time.Time) { c.outer.warm(n, epoch) }

func zeroNaN(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// llmdGated splits the requests not running into those the EPP's flow
// control would hold (flow) and those dispatched to the servers.
func llmdGated(obs recommend.Observation) (flow, dispatched float64) {
	held := orZero(obs.Held)
	if obs.Reporting == 0 {
		return held, 0
	}
	w := orZero(obs.Waiting)
	gated := math.Max(0, w-llmdQueueDepth*float64(obs.Reporting))
	if orZero(obs.KV) >= llmdKVThreshold {
		gated = w
	}
	return held + gated, orZero(obs.Running) + w - gated
}

// llmdSaturation is the utilization detector's pool saturation from the
// pool's means; 1 with no ready replica.
func llmdSaturation(obs recommend.Observation) float64 {
	if obs.Reporting == 0 {
		return 1
	}
	return math.Max(orZero(obs.Waiting)/float64(obs.Reporting)/llmdQueueDepth, orZero(obs.KV)/llmdKVThreshold)
}

// parseLLMD reads llmd-queue, llmd-saturation, llmd-tokens and llmd-slo,
// each with optional min= and max=.
func parseLLMD(full, s string, parts []part, off int) (Policy, error) {
	name := parts[0].text
	defMin := 1
	if name == "llmd-slo" {
		defMin = llmdSLODefaultMin
	}
	lo, hi, err := bounds(full, parts[1:], off, defMin)
	if err != nil {
		return Policy{}, err
	}
	if lo == 0 {
		// min=0 would run as 1 (the HPA's minReplicas) under a name
		// that says 0; refuse it where it was written.
		col := off + 1
		for _, p := range parts[1:] {
			if k, _, _ := strings.Cut(p.text, "="); k == "min" {
				col = off + p.at + 1 + len("min=")
			}
		}
		return Policy{}, policyError(full, col, "%s: min=0: llm-d's ScaledObjects scale through the HPA, whose minReplicas is at least 1 (KEDA's activation, scale to zero, is not modelled): give min=1 or more", name)
	}
	if lo > hi {
		return Policy{}, policyError(full, off+1, "%s: want min <= max, got min %d max %d", name, lo, hi)
	}
	hp := &recommend.Policy{Min: lo, Max: hi, Guard: &recommend.Guard{Off: true}}
	i32 := func(v int32) *int32 { return &v }
	sel := autoscalingv2.MaxChangePolicySelect
	pods, pct := autoscalingv2.PodsScalingPolicy, autoscalingv2.PercentScalingPolicy
	switch name {
	case "llmd-queue", "llmd-saturation":
		hp.Metrics = []recommend.Metric{{Signal: recommend.SignalRunning, Target: 16}, {Signal: recommend.SignalWaiting, Target: 1}}
		if name == "llmd-saturation" {
			hp.Metrics[1].Target = 0.7
		}
		hp.Behavior = autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: i32(300), Policies: []autoscalingv2.HPAScalingPolicy{{Type: pct, Value: 100, PeriodSeconds: 15}}},
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: i32(300), Policies: []autoscalingv2.HPAScalingPolicy{{Type: pct, Value: 100, PeriodSeconds: 15}}},
		}
	case "llmd-tokens":
		hp.Metrics = []recommend.Metric{{Signal: recommend.SignalRunning, Target: 1.5}, {Signal: recommend.SignalWaiting, Target: 0.8}}
		hp.Behavior = autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: i32(0), Policies: []autoscalingv2.HPAScalingPolicy{{Type: pods, Value: 1, PeriodSeconds: 180}}},
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: i32(300), Policies: []autoscalingv2.HPAScalingPolicy{{Type: pods, Value: 1, PeriodSeconds: 300}}},
		}
	case "llmd-slo":
		hp.Metrics = []recommend.Metric{{Signal: recommend.SignalRunning, Target: 1}}
		hp.Behavior = autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: i32(30), SelectPolicy: &sel,
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: pct, Value: 100, PeriodSeconds: 60}, {Type: pods, Value: 4, PeriodSeconds: 60}}},
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: i32(180), Policies: []autoscalingv2.HPAScalingPolicy{{Type: pods, Value: 1, PeriodSeconds: 120}}},
		}
	}
	if err := hp.Validate(); err != nil {
		return Policy{}, policyError(full, off+1, "%s: %v", name, err)
	}
	return Policy{Name: s, min: lo, max: hi, build: func(e env) (Controller, error) {
		c := &llmdCtl{outer: newInfscale(hp, e.cfg.Epoch), triggers: llmdTriggers[name]}
		switch name {
		case "llmd-queue":
			c.values = func(_ float64, obs recommend.Observation) (float64, float64) {
				flow, dispatched := llmdGated(obs)
				return dispatched, flow
			}
		case "llmd-saturation":
			c.values = func(_ float64, obs recommend.Observation) (float64, float64) {
				_, dispatched := llmdGated(obs)
				return dispatched, llmdSaturation(obs)
			}
		case "llmd-tokens":
			vp := llmdChunk / (e.sp.m.PrefillTime(llmdChunk) + e.sp.overhead) // V_P, tokens/s
			c.values = func(_ float64, obs recommend.Observation) (float64, float64) {
				if obs.Reporting == 0 {
					return 0, 0
				}
				tokens := (orZero(obs.Running) + orZero(obs.Waiting)) * orZero(obs.MeanPrompt)
				return tokens / vp, orZero(obs.KV) * float64(obs.Reporting)
			}
		case "llmd-slo":
			c.values = llmdSLO(e)
		}
		return c, nil
	}}, nil
}

// llmdSLO is the SLO guide's control law: its recording rules' smoothed
// saturation and its formula's desired replicas d (the metric at target 1).
func llmdSLO(e env) func(now float64, obs recommend.Observation) (float64, float64) {
	type sample struct{ t, s float64 }
	var win []sample
	sloTTFT := e.cfg.SLOTTFT
	return func(now float64, obs recommend.Observation) (float64, float64) {
		raw := 0.0
		if obs.Reporting > 0 {
			if v := obs.TTFT / sloTTFT; !math.IsNaN(v) {
				raw = v
			}
			if b := orZero(obs.Running) / float64(obs.Reporting); b > 0 {
				ctx := int64(orZero(obs.KV) * float64(e.sp.kvCap))
				raw = math.Max(raw, e.sp.m.StepTime(max(1, int(math.Round(b))), ctx)/llmdSLOTPOT)
			}
		}
		win = append(win, sample{now, math.Min(raw, llmdSLOClamp)})
		i := slices.IndexFunc(win, func(x sample) bool { return x.t > now-llmdSLOWindow })
		win = win[i:]
		s := 0.0
		for _, x := range win {
			s += x.s
		}
		s /= float64(len(win))
		n := float64(obs.Current)
		if n == 0 {
			return 1, 0
		}
		r := float64(obs.Reporting)
		c := 1.0
		if r > 0 && r < n {
			c = r / n
		}
		d := n
		switch {
		case s > llmdSLOUp:
			d = n + math.Ceil(n*(s*c/llmdSLOUp-1))
		case s < llmdSLODown:
			d = n - math.Floor(n*(1-s/llmdSLODown))
		}
		return d, 0
	}
}

// isLLMD reports whether head names an llm-d baseline.
func isLLMD(head string) bool {
	return strings.HasPrefix(head, "llmd-") && slices.Contains(LLMDBaselines, head)
}
