package recommend

import "testing"

// TestActivateLabelledOnlyWhenItSetsTheCount: at zero replicas held
// requests activate with max(1, ceil(held / target of the first additive
// metric)); when a metric already asks for more, activation changed
// nothing: its step is unlabelled at the count it leaves ("not above the
// present N", as the lookahead's) and the metric's reason stands. Held 5,
// queue:8 and waiting:2: queue 5 / 8 = 1, waiting 5 / 2 = 3, activation
// max(1, ceil(5 / 8)) = 1 < 3: 3, DesiredWithinRange. queue:4 alone: queue
// 5 / 4 = 2 and activation 2, a tie: activation lifts it from zero, 2,
// activate.
func TestActivateLabelledOnlyWhenItSetsTheCount(t *testing.T) {
	held := Observation{Current: 0, Running: 0, Waiting: 0, Held: 5, KV: nan, CPU: nan, TTFT: nan}
	two := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 8}, {Signal: SignalWaiting, Target: 2}}, Min: 0, Max: 10}
	one := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}}, Min: 0, Max: 10}
	for _, tc := range []struct {
		name   string
		p      *Policy
		want   int
		reason Reason
		step   Step
	}{
		{"metric above", two, 3, ReasonMetric, Step{Stage: StageZero, Reason: 0, Value: 3, Text: "activate: held 5 at zero replicas: max(1, ceil(5 / 8)) = 1: not above the present 3"}},
		{"tie", one, 2, ReasonActivate, Step{Stage: StageZero, Reason: ReasonActivate, Value: 2, Text: "activate: held 5 at zero replicas: max(1, ceil(5 / 4)) = 2"}},
	} {
		d := Decide(mustValidate(t, tc.p), held, nil, at(1000))
		expect(t, d, tc.want, tc.reason)
		found := false
		for _, s := range d.Steps {
			if s.Stage == StageZero {
				found = s == tc.step
			}
		}
		if !found {
			t.Errorf("%s: want the step %+v\n%s", tc.name, tc.step, stepsText(d))
		}
	}
}
