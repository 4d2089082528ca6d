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
