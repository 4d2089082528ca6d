package serve

import (
	"math"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/promql"
)

// values builds promql.Values from the known ones; the rest are NaN.
func values(known map[promql.Signal]float64) promql.Values {
	var v promql.Values
	for i := range v {
		v[i] = math.NaN()
	}
	for s, x := range known {
		v[s] = x
	}
	return v
}

// TestPromObservationStuck: the stuck pods' waiting is left out and they
// leave Reporting, Current keeps them. The cases are pkg/promql's
// TestEngineStuck read by hand: 5 pods reporting, waiting 30, 2 stuck with
// waiting 20: waiting 10, reporting 3, current 5; only the 2 stuck pods
// reporting: no pod votes; 1 stuck of 2 with waiting 14 of 17: waiting 3,
// reporting 1; a count unknown: flagged only, the totals as read.
func TestPromObservationStuck(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name               string
		in                 map[promql.Signal]float64
		running, waiting   float64
		reporting, current int
		queued             int
	}{
		// Queued: the pods with a request waiting, stuck ones among them
		// (a stuck engine waits by definition), less the stuck.
		{"two of five", map[promql.Signal]float64{promql.Running: 9, promql.Waiting: 30, promql.Reporting: 5, promql.Current: 5, promql.Stuck: 2, promql.StuckWaiting: 20, promql.Queued: 3}, 9, 10, 3, 5, 1},
		{"all stuck", map[promql.Signal]float64{promql.Running: 1, promql.Waiting: 20, promql.Reporting: 2, promql.Current: 2, promql.Stuck: 2, promql.StuckWaiting: 20, promql.Queued: 2}, nan, nan, 0, 2, 2},
		{"one of two", map[promql.Signal]float64{promql.Running: 9, promql.Waiting: 17, promql.Reporting: 2, promql.Current: 2, promql.Stuck: 1, promql.StuckWaiting: 14, promql.Queued: 2}, 9, 3, 1, 2, 1},
		{"none", map[promql.Signal]float64{promql.Running: 8, promql.Waiting: 3, promql.Reporting: 1, promql.Current: 1, promql.Stuck: 0, promql.Queued: 1}, 8, 3, 1, 1, 1},
		{"waiting unknown", map[promql.Signal]float64{promql.Running: 10, promql.Waiting: 20, promql.Reporting: 3, promql.Current: 3, promql.Stuck: 1, promql.Queued: 2}, 10, 20, 3, 3, 2},
		{"count unknown", map[promql.Signal]float64{promql.Running: 10, promql.Waiting: 20, promql.Reporting: 3, promql.Current: 3, promql.StuckWaiting: 6}, 10, 20, 3, 3, 0},
	} {
		o := promObservation(values(tc.in), 0)
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		if !same(o.Running, tc.running) || !same(o.Waiting, tc.waiting) || o.Reporting != tc.reporting || o.Current != tc.current || o.Queued != tc.queued {
			t.Errorf("%s: running %v waiting %v reporting %d current %d queued %d; want %v %v %d %d %d",
				tc.name, o.Running, o.Waiting, o.Reporting, o.Current, o.Queued, tc.running, tc.waiting, tc.reporting, tc.current, tc.queued)
		}
	}
}

// TestPromObservationFields: every value lands in its field, the counts
// are rounded (0 when unknown), the mean lengths are the token rates over
// the arrival rate (600/2 = 300, 100/2 = 50), and the rate window is kept.
func TestPromObservationFields(t *testing.T) {
	o := promObservation(values(map[promql.Signal]float64{
		promql.Running: 4, promql.KV: 0.5, promql.CPU: 30, promql.TTFT: 1.5, promql.Held: 2,
		promql.QueueTime: 0.25, promql.ITL: 0.02, promql.Reporting: 2.4, promql.Unready: 0.6, promql.Current: 3.2,
		promql.Arrivals: 2, promql.PromptTokens: 600, promql.GenerationTokens: 100,
	}), 2*time.Minute)
	if o.Running != 4 || !math.IsNaN(o.Waiting) || o.KV != 0.5 || o.CPU != 30 || o.TTFT != 1.5 || o.Held != 2 ||
		o.QueueTime != 0.25 || o.ITL != 0.02 || o.Reporting != 2 || o.Unready != 1 || o.Current != 3 {
		t.Errorf("fields: %+v", o)
	}
	if o.ArrivalRate != 2 || o.MeanPrompt != 300 || o.MeanOutput != 50 || o.ArrivalWindow != 2*time.Minute {
		t.Errorf("demand: rate %v prompt %v output %v window %v; want 2 300 50 2m", o.ArrivalRate, o.MeanPrompt, o.MeanOutput, o.ArrivalWindow)
	}
	if u := promObservation(values(nil), 0); u.Reporting != 0 || u.Current != 0 || !math.IsNaN(u.Running) || !math.IsNaN(u.MeanPrompt) {
		t.Errorf("unknown: %+v", u)
	}
}
