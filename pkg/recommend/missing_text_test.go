package recommend

import (
	"strings"
	"testing"
)

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

// TestMissingReplicasText: the step of a metric with replicas missing says
// how many replicas the new ratio is over and multiplies that ratio, and,
// when it keeps the count, whether the tolerance or the change of direction
// kept it. The incident reproduced with serve (2 of 6 pages answering):
// queue target 20, current 6, 2 reporting, queue 248: ratio 248 / (20 × 2)
// = 6.2; the 4 missing at 0: 248 / (20 × 6) = 2.0667, × 6 = 12.4, ceil 13
// (it read "ratio 6.2 becomes 2.067 over 6 × 6 = ceil(12.4) = 13", a
// product of 36). Queue 132 on 6 of 8: 132 / (20 × 6) = 1.1, the 2 missing
// at 0: 132 / (20 × 8) = 0.825, below 1: keep 8 (it read "within tolerance
// [0.9, 1.1] or changing direction", 0.825 being outside the band). Queue
// 76 on 3 of 4: 76 / 60 = 1.267, over 4: 76 / 80 = 0.95, inside [0.9, 1.1].
func TestMissingReplicasText(t *testing.T) {
	for _, tc := range []struct {
		name           string
		cur, reporting int
		queue          float64
		desired        int // the metric's recommendation
		reason         Reason
		want           string
	}{
		{"scale-up over all", 6, 2, 248, 13, ReasonMetric,
			"queue 248 / target 20 per replica = ceil(12.4) = 13 (running 0 + waiting 248); 4 of 6 replicas missing, counted at 0 each (scale-up): ratio 6.2 becomes 2.067 over 6 replicas: 2.067 × 6 = ceil(12.4) = 13"},
		{"direction", 8, 6, 132, 8, ReasonTolerance,
			"queue 132 / target 20 per replica = ceil(6.6) = 7 (running 0 + waiting 132); 2 of 8 replicas missing, counted at 0 each (scale-up): ratio 1.1 becomes 0.825 over 8 replicas, on the other side of 1 from 1.1 (the missing or unready replicas counted change the direction): keep 8"},
		{"tolerance", 4, 3, 76, 4, ReasonTolerance,
			"queue 76 / target 20 per replica = ceil(3.8) = 4 (running 0 + waiting 76); 1 of 4 replicas missing, counted at 0 each (scale-up): ratio 1.267 becomes 0.95 over 4 replicas, within tolerance [0.9, 1.1]: keep 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 20}}, Min: 1, Max: 20})
			obs := queueObs(tc.cur, tc.queue)
			obs.Reporting = tc.reporting
			d := Decide(p, obs, nil, at(1000))
			if len(d.Steps) == 0 || len(d.Raw) == 0 {
				t.Fatalf("no steps:\n%s", stepsText(d))
			}
			if s := d.Steps[0]; d.Raw[0].Desired != tc.desired || s.Reason != tc.reason || s.Text != tc.want {
				t.Errorf("metric step: got %d (%s) %q\nwant %d (%s) %q", d.Raw[0].Desired, s.Reason, s.Text, tc.desired, tc.reason, tc.want)
			}
		})
	}
}

// TestRawLargest: RawResults.Largest names the metric the "largest" step
// names. queue:4 and waiting:2 on 2 replicas, 20 waiting: queue ceil(20/4)
// = 5, waiting ceil(20/2) = 10: waiting. queue:4 and waiting:4 on 2, 20
// waiting: both 5, a tie: the first, queue. queue:4 and ttft:1s with TTFT
// unknown: queue alone. Nothing known: none.
func TestRawLargest(t *testing.T) {
	for _, tc := range []struct {
		metrics []Metric
		obs     Observation
		want    string // "" none
	}{
		{[]Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalWaiting, Target: 2}}, queueObs(2, 20), "waiting"},
		{[]Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalWaiting, Target: 4}}, queueObs(2, 20), "queue"},
		{[]Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalTTFT, Target: 1}}, queueObs(2, 20), "queue"},
		{[]Metric{{Signal: SignalQueue, Target: 4}}, Observation{Current: 2, Running: nan, Waiting: nan, Held: nan, KV: nan, CPU: nan, TTFT: nan}, ""},
	} {
		p := mustValidate(t, &Policy{Metrics: tc.metrics, Min: 1, Max: 20})
		d := Decide(p, tc.obs, nil, at(1000))
		s, ok := d.Raw.Largest()
		got := ""
		if ok {
			got = s.String()
		}
		if got != tc.want {
			t.Errorf("%v: Largest() = %q, want %q\n%s", tc.metrics, got, tc.want, stepsText(d))
		}
		for _, st := range d.Steps {
			if st.Stage == StageLargest && !strings.HasSuffix(st.Text, "("+tc.want+")") {
				t.Errorf("%v: the largest step %q names another metric than %q", tc.metrics, st.Text, tc.want)
			}
		}
	}
}
