package recommend

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Rows of the HPA controller's own tables (kubernetes
// pkg/controller/podautoscaler/horizontal_test.go: TestScalingWithRules
// for convertDesiredReplicasWithBehaviorRate, and
// TestNormalizeDesiredReplicasWithBehavior for
// stabilizeRecommendationWithBehaviors), with their expected values and
// comments, run through infscale's rateLimit and stabilize.

// hpaRules is the HPA tests' generateScalingRules: selectPolicy Max, a Pods
// policy when pods != 0, a Percent policy when percent != 0.
func hpaRules(nPods, podsPeriod, pct, pctPeriod, window int32) *autoscalingv2.HPAScalingRules {
	sel := autoscalingv2.MaxChangePolicySelect
	r := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, SelectPolicy: &sel}
	if nPods != 0 {
		r.Policies = append(r.Policies, pods(nPods, podsPeriod))
	}
	if pct != 0 {
		r.Policies = append(r.Policies, percent(pct, pctPeriod))
	}
	return r
}

// uniformEvents is the HPA tests' generateEventsUniformDistribution: the
// events spread over the last periodSeconds, each in the centre of its
// segment (for 3 events over 120 s: at now−100, now−60, now−20).
func uniformEvents(changes []int, periodSeconds int, now time.Time) []ScaleEvent {
	seg := float64(periodSeconds) / float64(len(changes))
	out := make([]ScaleEvent, len(changes))
	for i, c := range changes {
		ago := float64(periodSeconds) - seg*float64(i+1) + seg/2
		out[i] = ScaleEvent{At: now.Add(-time.Duration(ago * float64(time.Second))), Change: c}
	}
	return out
}

func TestHPAScalingWithRules(t *testing.T) {
	now := at(10000)
	// condition: the HPA's ScalingLimited reason, as infscale's Reason.
	const within = Reason(0)
	for _, tc := range []struct {
		name               string
		up, down           []int // events over the last 120 s
		min, max           int
		upRules, downRules *autoscalingv2.HPAScalingRules
		current, desired   int
		wantReplicas       int
		wantReason         Reason
	}{
		{name: "prenormalized desired replicas within range", current: 5, desired: 7, min: 3, max: 8, wantReplicas: 7, wantReason: within},
		{name: "prenormalized desired replicas < minReplicas", current: 3, desired: 1, min: 2, max: 8, wantReplicas: 2, wantReason: ReasonMin},
		{name: "maxReplicas is the limit because maxReplicas < scaleUpLimit", current: 20, desired: 1000, min: 1, max: 10, wantReplicas: 10, wantReason: ReasonMax},
		{name: "desired replica count is more than the maximum replica count", current: 100, desired: 1000, min: 100, max: 150, wantReplicas: 150, wantReason: ReasonMax},
		{name: "scaleUpLimit < maxReplicas with user policies", current: 3, desired: 1000, min: 1, max: 2000, upRules: hpaRules(0, 0, 1, 60, 0), wantReplicas: 4, wantReason: ReasonScaleUpLimit},
		{name: "scaleDownLimit > minReplicas with user defined policies", current: 1000, desired: 3, min: 3, max: 2000, downRules: hpaRules(20, 60, 0, 0, 0), wantReplicas: 980, wantReason: ReasonScaleDownLimit},
		{name: "scaleUp with default behavior", current: 10, desired: 50, min: 1, max: 1000, wantReplicas: 20, wantReason: ReasonScaleUpLimit},
		{name: "scaleUp with pods policy larger than percent policy", current: 10, desired: 500, min: 1, max: 1000, upRules: hpaRules(100, 60, 100, 60, 0), wantReplicas: 110, wantReason: ReasonScaleUpLimit},
		{name: "scaleUp with percent policy larger than pods policy", current: 10, desired: 500, min: 1, max: 1000, upRules: hpaRules(2, 60, 100, 60, 0), wantReplicas: 20, wantReason: ReasonScaleUpLimit},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy", current: 10, desired: 50, min: 1, max: 1000, upRules: hpaRules(100, 60, 0, 0, 0), wantReplicas: 50, wantReason: within},
		{name: "scaleUp with pod policy limitation", current: 10, desired: 50, min: 1, max: 1000, upRules: hpaRules(30, 60, 0, 0, 0), wantReplicas: 40, wantReason: ReasonScaleUpLimit},
		{name: "scaleUp with percent policy limitation", current: 10, desired: 50, min: 1, max: 1000, upRules: hpaRules(0, 0, 200, 60, 0), wantReplicas: 30, wantReason: ReasonScaleUpLimit},
		{name: "scaleDown with percent policy larger than pod policy", current: 100, desired: 2, min: 1, max: 1000, downRules: hpaRules(20, 60, 1, 60, 300), wantReplicas: 80, wantReason: ReasonScaleDownLimit},
		{name: "scaleDown with pod policy larger than percent policy", current: 100, desired: 2, min: 1, max: 1000, downRules: hpaRules(2, 60, 1, 60, 300), wantReplicas: 98, wantReason: ReasonScaleDownLimit},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy", current: 10, desired: 0, min: 1, max: 1000, downRules: hpaRules(100, 60, 0, 0, 300), wantReplicas: 1, wantReason: ReasonMin},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy", current: 10, desired: 2, min: 5, max: 1000, downRules: hpaRules(0, 0, 100, 60, 300), wantReplicas: 5, wantReason: ReasonMin},
		{name: "scaleDown with pod policy limitation", current: 10, desired: 2, min: 1, max: 1000, downRules: hpaRules(5, 60, 0, 0, 300), wantReplicas: 5, wantReason: ReasonScaleDownLimit},
		{name: "scaleDown with percent policy limitation", current: 10, desired: 5, min: 1, max: 1000, downRules: hpaRules(0, 0, 50, 60, 300), wantReplicas: 5, wantReason: within},
		// 200 < 100 − 15 + 300
		{name: "scaleUp MaxReplicas limitation with large pod policy and events", up: []int{1, 5, 9}, current: 100, desired: 500, min: 1, max: 200, upRules: hpaRules(300, 60, 0, 0, 0), wantReplicas: 200, wantReason: ReasonMax},
		{name: "scaleUp MaxReplicas limitation with large percent policy and events", up: []int{1, 5, 9}, current: 100, desired: 500, min: 1, max: 200, upRules: hpaRules(0, 0, 10000, 60, 0), wantReplicas: 200, wantReason: ReasonMax},
		// 120 seconds ago there were 100 − 15 replicas, Pods 5: the limit
		// 90 is below current, so no scale-up at all.
		{name: "scaleUp with a lot of recent scale up events", up: []int{1, 5, 9}, current: 100, desired: 500, min: 1, max: 1000, upRules: hpaRules(5, 120, 0, 0, 0), wantReplicas: 100, wantReason: ReasonScaleUpLimit},
		{name: "scaleUp with pod policy and previous scale up events", up: []int{1, 5, 9}, current: 100, desired: 500, min: 1, max: 1000, upRules: hpaRules(150, 120, 0, 0, 0), wantReplicas: 235, wantReason: ReasonScaleUpLimit},     // 100 − 15 + 150
		{name: "scaleUp with percent policy and previous scale up events", up: []int{1, 5, 9}, current: 100, desired: 500, min: 1, max: 1000, upRules: hpaRules(0, 0, 200, 120, 0), wantReplicas: 255, wantReason: ReasonScaleUpLimit}, // (100 − 15) + 200%
		// start 6 − 4 + 2 = 4; ceil(4 × 4) = 16
		{name: "scaleUp with percent policy and previous scale up and down events", up: []int{4}, down: []int{2}, current: 6, desired: 24, min: 1, max: 1000, upRules: hpaRules(0, 0, 300, 300, 0), wantReplicas: 16, wantReason: ReasonScaleUpLimit},
		{name: "scaleDown with default policy and previous events", down: []int{1, 5, 9}, current: 10, desired: 5, min: 1, max: 1000, wantReplicas: 5, wantReason: within},
		{name: "scaleDown MinReplicas limitation with large pod policy and previous events", down: []int{1, 5, 9}, current: 100, desired: 0, min: 1, max: 1000, downRules: hpaRules(115, 120, 0, 0, 300), wantReplicas: 1, wantReason: ReasonMin},
		{name: "scaleDown MinReplicas 5 with large pod policy and previous events", down: []int{1, 5, 9}, current: 100, desired: 0, min: 5, max: 1000, downRules: hpaRules(130, 120, 0, 0, 300), wantReplicas: 5, wantReason: ReasonMin},
		{name: "scaleDown MinReplicas limitation with large percent policy and previous events", down: []int{1, 5, 9}, current: 100, desired: 2, min: 5, max: 1000, downRules: hpaRules(0, 0, 100, 120, 300), wantReplicas: 5, wantReason: ReasonMin},
		{name: "scaleDown with pod policy limitation and previous events", down: []int{1, 5, 9}, current: 100, desired: 2, min: 1, max: 1000, downRules: hpaRules(5, 120, 0, 0, 300), wantReplicas: 100, wantReason: ReasonScaleDownLimit},     // 100 + 15 − 5
		{name: "scaleDown with percent policy limitation and previous events", down: []int{2, 4, 6}, current: 100, desired: 0, min: 1, max: 1000, downRules: hpaRules(0, 0, 50, 120, 300), wantReplicas: 56, wantReason: ReasonScaleDownLimit}, // (100 + 12) − 50%
		// start 10 − 2 + 4 = 12; trunc(12 × 0.5) = 6
		{name: "scaleDown with percent policy and previous scale up and down events", up: []int{2}, down: []int{4}, current: 10, desired: 1, min: 1, max: 1000, downRules: hpaRules(0, 0, 50, 180, 0), wantReplicas: 6, wantReason: ReasonScaleDownLimit},
		// (100 + 30) − 10% = 117 > current 100: keep 100
		{name: "scaleDown with previous events preventing further scale down", down: []int{10, 10, 10}, current: 100, desired: 0, min: 1, max: 1000, downRules: hpaRules(0, 0, 10, 120, 300), wantReplicas: 100, wantReason: ReasonScaleDownLimit},
		// (10 + 30) − 1000% = −360 < 5: 5
		{name: "scaleDown with previous events still allowing more scale down", down: []int{10, 10, 10}, current: 10, desired: 5, min: 1, max: 1000, downRules: hpaRules(0, 0, 1000, 120, 300), wantReplicas: 5, wantReason: within},
		{name: "outdated events, one up policy", up: []int{8, 12, 9, 11}, current: 100, desired: 200, min: 1, max: 1000, upRules: hpaRules(1000, 60, 0, 0, 0), wantReplicas: 200, wantReason: within},
		{name: "events for two up policies", up: []int{8, 12, 9, 11}, current: 100, desired: 200, min: 1, max: 1000, upRules: hpaRules(1000, 120, 100, 60, 0), wantReplicas: 200, wantReason: within},
		{name: "outdated events for two up policies", up: []int{8, 12, 9, 11}, current: 100, desired: 200, min: 1, max: 1000, upRules: hpaRules(1000, 30, 100, 60, 0), wantReplicas: 200, wantReason: within},
		{name: "outdated events, one down policy", down: []int{8, 12, 9, 11}, current: 100, desired: 5, min: 1, max: 1000, downRules: hpaRules(1000, 60, 0, 0, 300), wantReplicas: 5, wantReason: within},
		{name: "events for two down policies", down: []int{8, 12, 9, 11}, current: 100, desired: 5, min: 1, max: 1000, downRules: hpaRules(1000, 120, 100, 60, 300), wantReplicas: 5, wantReason: within},
		{name: "outdated events for two down policies", down: []int{8, 12, 9, 11}, current: 100, desired: 5, min: 1, max: 1000, downRules: hpaRules(1000, 30, 100, 60, 300), wantReplicas: 5, wantReason: within},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 1}}, Min: tc.min, Max: tc.max}
			p.Behavior.ScaleUp, p.Behavior.ScaleDown = tc.upRules, tc.downRules
			mustValidate(t, p)
			st := &State{}
			if tc.up != nil {
				st.ScaleUpEvents = uniformEvents(tc.up, 120, now)
			}
			if tc.down != nil {
				st.ScaleDownEvents = uniformEvents(tc.down, 120, now)
			}
			b := bounds{lo: tc.min, hi: tc.max, loReason: ReasonMin, hiReason: ReasonMax}
			got, reason, text := p.rateLimit(st, tc.desired, tc.current, b, now)
			if got != tc.wantReplicas || reason != tc.wantReason {
				t.Errorf("got %d (%v), want %d (%v): %s", got, reason, tc.wantReplicas, tc.wantReason, text)
			}
		})
	}
}

func TestHPANormalizeDesiredReplicasWithBehavior(t *testing.T) {
	now := at(100000)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, tc := range []struct {
		name             string
		recs             []TimedReplicas
		current, desired int
		up, down         int32 // windows, seconds (0 when the HPA row leaves them out)
		want             int
	}{
		{"empty recommendations for scaling down", nil, 100, 5, 0, 0, 5},
		{"simple scale down stabilization", []TimedReplicas{{ago(2 * time.Minute), 4}, {ago(time.Minute), 5}}, 100, 3, 0, 180, 5},
		{"simple scale up stabilization", []TimedReplicas{{ago(2 * time.Minute), 4}, {ago(time.Minute), 5}}, 1, 7, 300, 0, 4},
		{"no scale down stabilization", []TimedReplicas{{ago(2 * time.Minute), 1}, {ago(time.Minute), 2}}, 100, 3, 300, 0, 3},
		{"no scale up stabilization", []TimedReplicas{{ago(2 * time.Minute), 4}, {ago(time.Minute), 5}}, 1, 3, 0, 300, 3},
		{"no scale down stabilization, old elements", []TimedReplicas{{ago(10 * time.Minute), 10}, {ago(9 * time.Minute), 9}}, 100, 3, 0, 0, 3},
		{"no scale up stabilization, old elements", []TimedReplicas{{ago(10 * time.Minute), 10}, {ago(9 * time.Minute), 9}}, 1, 100, 0, 0, 100},
		{"scale down stabilization, one obsolete element", []TimedReplicas{{ago(10 * time.Minute), 10}, {ago(9 * time.Minute), 9}, {ago(2 * time.Minute), 5}, {ago(time.Minute), 4}}, 100, 3, 0, 180, 5},
		{"scale up stabilization, one obsolete element", []TimedReplicas{{ago(100 * time.Minute), 10}, {ago(3 * time.Minute), 9}, {ago(2 * time.Minute), 5}, {ago(time.Minute), 6}}, 1, 100, 300, 0, 5},
		{"do not scale up when prenormalized rec goes down", []TimedReplicas{{ago(100 * time.Minute), 2}, {ago(3 * time.Minute), 3}}, 2, 1, 300, 300, 2},
		{"do not scale down when prenormalized rec goes up", []TimedReplicas{{ago(100 * time.Minute), 2}, {ago(3 * time.Minute), 1}}, 2, 3, 300, 300, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 1}}, Min: 1, Max: 1000}
			p.Behavior.ScaleUp = hpaRules(4, 15, 0, 0, tc.up)
			p.Behavior.ScaleDown = hpaRules(0, 0, 100, 15, tc.down)
			mustValidate(t, p)
			// infscale keeps its history time-ordered (the HPA reuses slots).
			st := &State{Recommendations: append([]TimedReplicas(nil), tc.recs...)}
			if got, text := p.stabilize(st, tc.desired, tc.current, now, true); got != tc.want {
				t.Errorf("got %d, want %d: %s", got, tc.want, text)
			}
		})
	}
}

// Rows of the HPA's replica_calculator_test.go for the missing-pods rule.
func TestHPAReplicaCalcMissingMetrics(t *testing.T) {
	cpu := &Policy{Metrics: []Metric{{Signal: SignalCPU, Target: 100}}, Min: 1, Max: 10}
	mustValidate(t, cpu)
	for _, tc := range []struct {
		name string
		cpu  float64 // the one reporting pod's CPU, % of its request
		want int
	}{
		// 1000m of 1.0: 100% = target: no fill, ratio 1: keep 2.
		{"TestReplicaCalcMissingMetricsNoChangeEq", 100, 2},
		// 1900m: 190% > target, the missing pod counts 0%: 95% → within: 2.
		{"TestReplicaCalcMissingMetricsNoChangeGt", 190, 2},
		// 600m: 60% < target, the missing pod counts 100%: 80% →
		// ceil(0.8 × 2) = 2.
		{"TestReplicaCalcMissingMetricsNoChangeLt", 60, 2},
	} {
		obs := Observation{Current: 2, Reporting: 1, Running: nan, Waiting: nan, Held: nan, KV: nan, CPU: tc.cpu, TTFT: nan}
		if d := Decide(cpu, obs, nil, at(0)); d.Desired != tc.want {
			t.Errorf("%s: got %d, want %d\n%s", tc.name, d.Desired, tc.want, stepsText(d))
		}
	}
	// TestPlainMetricReplicaCalcMissingMetricsNoChangeEq: 5 pods, 3 report
	// qps 20, 19, 21 against 20 per pod: ratio 1: keep 5.
	qps := &Policy{Metrics: []Metric{{Signal: SignalRunning, Target: 20}}, Min: 1, Max: 10}
	mustValidate(t, qps)
	obs := Observation{Current: 5, Reporting: 3, Running: 60, Waiting: nan, Held: nan, KV: nan, CPU: nan, TTFT: nan}
	if d := Decide(qps, obs, nil, at(0)); d.Desired != 5 {
		t.Errorf("plain missing metrics: got %d, want 5\n%s", d.Desired, stepsText(d))
	}
}

// The HPA's unready-pods rule (replica_calculator_test.go rows, CPU at
// 1.0 core requests, target 30%).
func TestHPAReplicaCalcUnready(t *testing.T) {
	cpu := &Policy{Metrics: []Metric{{Signal: SignalCPU, Target: 30}}, Min: 1, Max: 10}
	mustValidate(t, cpu)
	for _, tc := range []struct {
		name                        string
		current, reporting, unready int
		mean                        float64 // mean CPU % of the ready replicas
		want                        int
	}{
		// 300m, 500m, 700m all ready: 50/30 × 3 = 5.
		{"TestReplicaCalcScaleUp", 3, 3, 0, 50, 5},
		// the 300m pod unready: ready mean 60%, ratio 2; the unready one
		// counts 0 on a scale-up: 2 × 2 / 3 = 1.333 × 3 = 4.
		{"TestReplicaCalcScaleUpUnreadyLessScale", 3, 2, 1, 60, 4},
		// only the 400m pod ready: 40/30 = 1.333; two unready at 0:
		// 1.333/3 = 0.444 < 1 reverses the direction: keep 3.
		{"TestReplicaCalcScaleUpUnreadyNoScale", 3, 1, 2, 40, 3},
		// scale-down with 2 of 5 unready: they are left out: ready mean
		// 20% / 30 = 0.667 × 3 ready = 2.
		{"scale-down leaves unready out", 5, 3, 2, 20, 2},
	} {
		obs := Observation{Current: tc.current, Reporting: tc.reporting, Unready: tc.unready, Running: nan, Waiting: nan, Held: nan, KV: nan, CPU: tc.mean, TTFT: nan}
		if d := Decide(cpu, obs, nil, at(0)); d.Desired != tc.want {
			t.Errorf("%s: got %d, want %d\n%s", tc.name, d.Desired, tc.want, stepsText(d))
		}
	}
	// Additive: 7 replicas, 3 ready report a queue of 6, 4 starting,
	// target 4: usage 2/4 = 0.5 < 1, the unready are left out: ceil(0.5 × 3)
	// = 2 (as ceil(6/4)), whereas counted as missing they would hold it at
	// (6 + 4×4)/(4×7) = 0.786 → ceil(0.786 × 7) = 6.
	q := mustValidate(t, queuePolicy(4))
	obs := queueObs(7, 6)
	obs.Reporting, obs.Unready = 3, 4
	expect(t, Decide(q, obs, nil, at(0)), 2, ReasonMetric)
	obs.Unready = 0
	expect(t, Decide(q, obs, nil, at(0)), 6, ReasonMetric)
}
