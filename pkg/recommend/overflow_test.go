package recommend

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// A ceil of an overflowed count is the cap, never a negative or undefined
// integer: +Inf and NaN (+Inf − +Inf) are above any cluster, like 1e300.
func TestCeilReplicasNonFinite(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want int
	}{
		{math.Inf(1), 2147483647},
		{math.NaN(), 2147483647},
		{1e300, 2147483647},
		{2147483647, 2147483647},
		{2147483646.5, 2147483647},
		{1e9 + 0.5, 1000000001}, // the slack is at most a milli-replica
		{1e9 + 0.0001, 1000000000},
		{math.Inf(-1), 0},
		{0, 0},
		{2.1 / 0.7, 3},
	} {
		if got := ceilReplicas(tc.x); got != tc.want {
			t.Errorf("ceilReplicas(%g) = %d, want %d", tc.x, got, tc.want)
		}
	}
}

// Finite inputs whose sum, ratio or product overflows float64 to +Inf are
// the huge finite case: raw capped at 2^31−1, the step says so, and the
// decision scales up (rate limited), never to min or down.
func TestOverflowCapped(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	// running 1.7e308 + waiting 1.7e308 = +Inf (> MaxFloat64 ≈ 1.798e308).
	obs := queueObs(1, 1.7e308)
	obs.Running = 1.7e308
	d := Decide(p, obs, nil, at(1000))
	// From 1: Pods 4 per 15 s gives 5, Percent 100 gives 2; Max policy: 5.
	expect(t, d, 5, ReasonScaleUpLimit)
	if d.Raw[0].Replicas != 2147483647 {
		t.Errorf("raw replicas %d, want 2147483647", d.Raw[0].Replicas)
	}
	if !strings.Contains(d.Steps[0].Text, "= +Inf (float64 overflow), capped at 2147483647") {
		t.Errorf("step %q does not explain the overflow", d.Steps[0].Text)
	}

	// From 8 replicas the same page never scales down: 8 + 4 = 12 and
	// 8 × 2 = 16 allowed, max 10 binds.
	obs.Current = 8
	expect(t, Decide(p, obs, nil, at(1000)), 10, ReasonMax)

	// A ratio that overflows: 1e308 / 1e-300 = 1e608 > MaxFloat64.
	p = mustValidate(t, queuePolicy(1e-300))
	d = Decide(p, queueObs(1, 1e308), nil, at(1000))
	expect(t, d, 5, ReasonScaleUpLimit)
	if d.Raw[0].Replicas != 2147483647 {
		t.Errorf("raw replicas %d, want 2147483647", d.Raw[0].Replicas)
	}

	// A seconds signal: ttft 1e308 s / target 1e-10 s = +Inf ratio × 2.
	p = mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalTTFT, Target: 1e-10}}, Min: 1, Max: 10})
	o := queueObs(2, 1)
	o.TTFT = 1e308
	d = Decide(p, o, nil, at(1000))
	// From 2: 2 + 4 = 6, 2 × 2 = 4; Max policy: 6.
	expect(t, d, 6, ReasonScaleUpLimit)
	if d.Raw[0].Replicas != 2147483647 {
		t.Errorf("ttft raw replicas %d, want 2147483647", d.Raw[0].Replicas)
	}
}

// target × current overflowing must not turn the ratio into 0: 1.65e308
// over 20 replicas at target 9e306 (9e306 × 20 = 1.8e308 > MaxFloat64) is
// 1.65e308 / 9e306 / 20 = 18.333 / 20 = 0.91667 per replica, inside
// [0.9, 1.1]: keep 20 (a ratio of v / +Inf = 0 would go to ceil(18.333) = 19).
func TestRatioProductOverflow(t *testing.T) {
	p := queuePolicy(9e306)
	p.Max = 30
	d := Decide(mustValidate(t, p), queueObs(20, 1.65e308), nil, at(1000))
	expect(t, d, 20, ReasonTolerance)
	if r := d.Raw[0].Ratio; math.Abs(r-0.9166666666666666) > 1e-12 {
		t.Errorf("ratio %v, want 0.91667", r)
	}
}

// A denormal target is refused with the allowed range.
func TestDenormalTargetRefused(t *testing.T) {
	err := queuePolicy(1e-320).Validate()
	if err == nil || !strings.Contains(err.Error(), "metrics[0].target") ||
		!strings.Contains(err.Error(), "[2.2250738585072014e-308, 1.7976931348623157e+308]") {
		t.Errorf("Validate(target 1e-320) = %v, want the allowed range", err)
	}
	if err := queuePolicy(0x1p-1022).Validate(); err != nil {
		t.Errorf("the smallest normal target is allowed: %v", err)
	}
}

// An overflowed total is no lookahead sample: the state keeps finite
// numbers only (JSON has no +Inf) and the projection is the capped total.
func TestOverflowNotALookaheadSample(t *testing.T) {
	p := queuePolicy(4)
	p.Lookahead = 60 * time.Second
	mustValidate(t, p)
	var st State
	expect(t, Decide(p, queueObs(10, 40), &st, at(1000)), 10, ReasonTolerance) // 40 / (4 × 10) = 1
	obs := queueObs(10, 1.7e308)
	obs.Running = 1.7e308
	// From 10: 10 + 4 = 14, 10 × 2 = 20 allowed, max 10 binds.
	expect(t, Decide(p, obs, &st, at(1015)), 10, ReasonMax)
	if len(st.Demand) != 1 || st.Demand[0].Demand != 40 {
		t.Errorf("demand samples %+v, want the one finite sample 40", st.Demand)
	}
	if _, err := json.Marshal(&st); err != nil {
		t.Errorf("state after an overflow does not encode: %v", err)
	}
}
