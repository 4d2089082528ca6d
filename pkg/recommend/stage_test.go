package recommend

import (
	"slices"
	"testing"
)

// TestStepStages: every step names its pipeline stage, values by hand on
// HPA default behavior (scale-up limit max(4 pods, 100%) per 15 s).
//
//   - queue:4, max 3, 2 replicas, queue 20: the metric asks ceil(20/4) = 5
//     (ratio 2.5, outside tolerance); stabilisation keeps 5 (no scale-up
//     window); the limits lower it to max 3.
//   - queue:4 and waiting:2, 2 replicas, 20 waiting: 5 and ceil(20/2) = 10,
//     the largest 10, stabilisation 10, the limits 2 + 4 = 6.
//   - nothing known on 4 replicas: the metric's step recommends nothing
//     (unlabelled, at the current 4), then the count is held at 4 (no-data).
//   - queue:4 and waiting:2 with waiting known and running not (so queue
//     unknown), 2 replicas, 20 waiting: waiting says ceil(20/2) = 10 and
//     decides; queue's step is unlabelled (no-data would say no metric was
//     known), the limits 2 + 4 = 6.
func TestStepStages(t *testing.T) {
	type step struct {
		stage  Stage
		reason Reason
		value  int
	}
	two := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalWaiting, Target: 2}}, Min: 1, Max: 10}
	capped := queuePolicy(4)
	capped.Max = 3
	for _, tc := range []struct {
		name string
		p    *Policy
		obs  Observation
		want []step
	}{
		{"max", capped, queueObs(2, 20), []step{{StageMetric, ReasonMetric, 5}, {StageStabilization, 0, 5}, {StageLimits, ReasonMax, 3}}},
		{"largest", two, queueObs(2, 20), []step{{StageMetric, ReasonMetric, 5}, {StageMetric, ReasonMetric, 10}, {StageLargest, ReasonMetric, 10},
			{StageStabilization, 0, 10}, {StageLimits, ReasonScaleUpLimit, 6}}},
		{"no data", queuePolicy(4), Observation{Current: 4, Running: nan, Waiting: nan, Held: nan, KV: nan, CPU: nan, TTFT: nan},
			[]step{{StageMetric, 0, 4}, {StageMissingData, ReasonNoData, 4}}},
		{"one unknown", two, Observation{Current: 2, Running: nan, Waiting: 20, Held: nan, KV: nan, CPU: nan, TTFT: nan},
			[]step{{StageMetric, 0, 2}, {StageMetric, ReasonMetric, 10}, {StageStabilization, 0, 10}, {StageLimits, ReasonScaleUpLimit, 6}}},
	} {
		d := Decide(mustValidate(t, tc.p), tc.obs, nil, at(0))
		var got []step
		for _, s := range d.Steps {
			got = append(got, step{s.Stage, s.Reason, s.Value})
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: steps %v, want %v\n%s", tc.name, got, tc.want, stepsText(d))
		}
	}
}
