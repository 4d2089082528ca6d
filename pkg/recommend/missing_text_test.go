package recommend

import "testing"

// TestPartialDataNamesTheMetric: the partial-data step names the unknown
// metric, so a reader knows which signal to fix. queue:4 and ttft:1s on 4
// replicas, queue 4, TTFT unknown (NaN, requests running): queue says
// ceil(4/4) = 1 (ratio 4/16 = 0.25, outside the tolerance), ttft nothing;
// one of two metrics is unknown, so no scale-down from 4 to 1.
func TestPartialDataNamesTheMetric(t *testing.T) {
	p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalTTFT, Target: 1}}, Min: 1, Max: 10})
	obs := queueObs(4, 4)
	obs.Running, obs.Waiting = 2, 2
	d := Decide(p, obs, nil, at(1000))
	expect(t, d, 4, ReasonPartialData)
	want := "partial data: ttft unknown (1 of 2 metrics), no scale-down from 4 to 1 on the others"
	if s, ok := stepWith(d, ReasonPartialData, 4); !ok || s.Text != want {
		t.Errorf("want a partial-data step %q\n%s", want, stepsText(d))
	}
}

// TestLargestNamesTheMetric: the step that takes the largest of several
// metrics names the one that set it. queue:4 and waiting:2 on 2 replicas,
// 20 waiting: queue ceil(20/4) = 5, waiting ceil(20/2) = 10: waiting's 10;
// queue:4 and kv:0.5 with kv 0.25 on 4: queue 5, kv ceil(0.25/0.5 × 4) = 2:
// queue's 5.
func TestLargestNamesTheMetric(t *testing.T) {
	for _, tc := range []struct {
		metrics []Metric
		obs     Observation
		want    string
	}{
		{[]Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalWaiting, Target: 2}}, queueObs(2, 20), "largest of the metrics' recommendations = 10 (waiting)"},
		{[]Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalKV, Target: 0.5}}, Observation{Current: 4, Running: 0, Waiting: 20, Held: nan, KV: 0.25, CPU: nan, TTFT: nan}, "largest of the metrics' recommendations = 5 (queue)"},
	} {
		p := mustValidate(t, &Policy{Metrics: tc.metrics, Min: 1, Max: 20})
		d := Decide(p, tc.obs, nil, at(1000))
		found := false
		for _, s := range d.Steps {
			found = found || s.Stage == StageLargest && s.Text == tc.want
		}
		if !found {
			t.Errorf("want a step %q\n%s", tc.want, stepsText(d))
		}
	}
}
