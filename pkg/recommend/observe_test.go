package recommend

import (
	"math"
	"testing"
)

func TestObserveReplicas(t *testing.T) {
	// Three replicas; the third's scrape failed (all NaN); the second has no
	// KV family. running 3+5 = 8, waiting 1+2 = 3, kv mean of 0.35 only,
	// cpu mean (40+50)/2 = 45, reporting 2 of current 3.
	o := ObserveReplicas([]ReplicaSample{
		{Running: 3, Waiting: 1, KV: 0.35, CPU: 40},
		{Running: 5, Waiting: 2, KV: nan, CPU: 50},
		{Running: nan, Waiting: nan, KV: nan, CPU: nan},
	}, 3)
	if o.Current != 3 || o.Reporting != 2 || o.Running != 8 || o.Waiting != 3 || o.KV != 0.35 || o.CPU != 45 || !math.IsNaN(o.Held) || !math.IsNaN(o.TTFT) {
		t.Errorf("%+v", o)
	}
	// Nothing reports: every signal unknown, never 0.
	o = ObserveReplicas([]ReplicaSample{{nan, nan, nan, nan}}, 1)
	if o.Reporting != 0 || !math.IsNaN(o.Running) || !math.IsNaN(o.Waiting) || !math.IsNaN(o.KV) {
		t.Errorf("%+v", o)
	}
	if d := Decide(queuePolicy(4), o, nil, at(0)); d.Desired != 1 || d.Reason != ReasonNoData {
		t.Errorf("all unknown: %d (%s)", d.Desired, d.Reason)
	}
}
