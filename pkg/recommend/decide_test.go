package recommend

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Issue 2 acceptance: running 2, waiting 10, target 4, max 3, current 1.
func TestDecideQueueCappedByMax(t *testing.T) {
	p := queuePolicy(4)
	p.Max = 3
	mustValidate(t, p)
	obs := Observation{Current: 1, Running: 2, Waiting: 10, Held: nan, KV: nan, CPU: nan, TTFT: nan}
	// queue = 2 + 10 = 12; ceil(12/4) = 3; ratio 12/(4×1) = 3 is outside
	// [0.9, 1.1]; scale-up limit max(1+4, ceil(1×2)) = 5 > max 3; 3 <= 3.
	d := Decide(p, obs, nil, at(1000))
	expect(t, d, 3, ReasonMetric)
	wantRaw(t, d.Raw[0], SignalQueue, 12, 4, 3)
	if s := d.Steps[0]; s.Reason != ReasonMetric || s.Value != 3 {
		t.Errorf("first step %+v, want the metric's 3", s)
	}
}

// Issue 2 acceptance: --current 0 --held 5 --min 0 --target 4 → 2.
func TestDecideActivateFromZero(t *testing.T) {
	p := queuePolicy(4)
	p.Min = 0
	mustValidate(t, p)
	obs := Observation{Current: 0, Running: nan, Waiting: nan, Held: 5, KV: nan, CPU: nan, TTFT: nan}
	// at zero: total = held 5; ceil(5/4) = 2, no tolerance from zero;
	// scale-up limit from 0: max(0+4, ceil(0×2)) = 4 >= 2.
	expect(t, Decide(p, obs, nil, at(1000)), 2, ReasonActivate)

	// One held request still activates one replica: ceil(1/4) = 1.
	obs.Held = 1
	expect(t, Decide(p, obs, nil, at(1000)), 1, ReasonActivate)

	// A backlog of 40 asks for ceil(40/4) = 10 but the default scale-up
	// limit from 0 is max(0+4, 0) = 4 per 15 s.
	obs.Held = 40
	expect(t, Decide(p, obs, nil, at(1000)), 4, ReasonScaleUpLimit)

	// Nothing held at zero: stay at zero.
	obs.Held = 0
	expect(t, Decide(p, obs, nil, at(1000)), 0, ReasonIdleToZero)
}

// Issue 2 acceptance: tolerance on 10 replicas, target 4.
func TestDecideTolerance(t *testing.T) {
	for _, tc := range []struct {
		total   float64
		desired int
		reason  Reason
	}{
		{41, 10, ReasonTolerance}, // 41/40 = 1.025 inside [0.9, 1.1]
		{44, 10, ReasonTolerance}, // 44/40 = 1.1 inside the inclusive band
		{45, 12, ReasonMetric},    // 45/40 = 1.125 outside: ceil(45/4) = ceil(11.25) = 12
		{36, 10, ReasonTolerance}, // 36/40 = 0.9 inside (lower edge, inclusive)
	} {
		p := mustValidate(t, queuePolicy(4))
		p.Max = 20
		mustValidate(t, p)
		d := Decide(p, queueObs(10, tc.total), nil, at(1000))
		if d.Desired != tc.desired || d.Reason != tc.reason {
			t.Errorf("total %v: got %d (%s), want %d (%s)\n%s", tc.total, d.Desired, d.Reason, tc.desired, tc.reason, stepsText(d))
		}
	}
	// 35/40 = 0.875 is below 0.9: ceil(35/4) = 9, but the down window
	// (default 300 s) holds nothing higher in a fresh state, so 9.
	p := mustValidate(t, queuePolicy(4))
	expect(t, Decide(p, queueObs(10, 35), nil, at(1000)), 9, ReasonMetric)
}

// Tolerance per direction: up 0.5, down 0.
func TestDecideToleranceAsymmetric(t *testing.T) {
	p := queuePolicy(4)
	p.Max = 20
	p.Tolerance = &Tolerance{Up: 0.5, Down: 0}
	mustValidate(t, p)
	// 56/40 = 1.4 <= 1.5: keep 10.
	expect(t, Decide(p, queueObs(10, 56), nil, at(1000)), 10, ReasonTolerance)
	// 39/40 = 0.975 < 1.0: ceil(39/4) = 10 ... = current, reason metric.
	expect(t, Decide(p, queueObs(10, 38), nil, at(1000)), 10, ReasonMetric)
	// 35/40 = 0.875: ceil(8.75) = 9.
	expect(t, Decide(p, queueObs(10, 35), nil, at(1000)), 9, ReasonMetric)
}

// Issue 2 acceptance: from 8 replicas with raw 2 and no down window.
func TestDecideScaleDownRateLimits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rules   *autoscalingv2.HPAScalingRules
		desired int
		reason  Reason
	}{
		// Pods 1: 8 − 1 = 7.
		{"pods 1", rules(0, autoscalingv2.MaxChangePolicySelect, pods(1, 15)), 7, ReasonScaleDownLimit},
		// Percent 50: trunc(8 × 0.5) = 4; raw 2 < 4.
		{"percent 50", rules(0, autoscalingv2.MaxChangePolicySelect, percent(50, 15)), 4, ReasonScaleDownLimit},
		// Max change: min(7, 4) = 4.
		{"both Max", rules(0, autoscalingv2.MaxChangePolicySelect, pods(1, 15), percent(50, 15)), 4, ReasonScaleDownLimit},
		// Min change: max(7, 4) = 7.
		{"both Min", rules(0, autoscalingv2.MinChangePolicySelect, pods(1, 15), percent(50, 15)), 7, ReasonScaleDownLimit},
		// Disabled: limit = current 8.
		{"Disabled", rules(0, autoscalingv2.DisabledPolicySelect, pods(1, 15), percent(50, 15)), 8, ReasonScaleDownLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := queuePolicy(4)
			p.Behavior.ScaleDown = tc.rules
			mustValidate(t, p)
			// raw: total 8 / target 4 = 2; ratio 8/32 = 0.25.
			expect(t, Decide(p, queueObs(8, 8), nil, at(1000)), tc.desired, tc.reason)
		})
	}
}

// Issue 2 acceptance: a time script with state (the decide CLI runs the
// same through --state).
func TestDecideTimeScriptStabilization(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	var st State
	// t=1000, from 1: ceil(12/4) = 3 (ratio 3); limit max(1+4, 2) = 5.
	expect(t, Decide(p, queueObs(1, 12), &st, at(1000)), 3, ReasonMetric)
	// t=1015 at 3, total 4: ceil(4/4) = 1 (ratio 4/12 = 0.33), but the
	// 300 s down window still holds 3 (t=1000 > 1015−300).
	expect(t, Decide(p, queueObs(3, 4), &st, at(1015)), 3, ReasonScaleDownStabilized)
	// t=1290: 1000 > 1290−300 = 990, still 3.
	expect(t, Decide(p, queueObs(3, 4), &st, at(1290)), 3, ReasonScaleDownStabilized)
	// t=1305: cutoff 1005 excludes t=1000; highest of {1, 1, 1} = 1. Down
	// limit trunc(3 × 0) = 0, min 1: 1.
	expect(t, Decide(p, queueObs(3, 4), &st, at(1305)), 1, ReasonMetric)
}

// Issue 2 acceptance: scale to zero, cooldown 120 s, fresh state, idle.
func TestDecideScaleToZeroCooldown(t *testing.T) {
	p := queuePolicy(4)
	p.Min, p.Zero = 0, &Zero{Cooldown: 120 * 1e9}
	mustValidate(t, p)
	var st State
	idle := Observation{Current: 1, Running: 0, Waiting: 0, Held: 0, KV: nan, CPU: nan, TTFT: nan}
	// t=2000: first observation, idle 0 s < 120 s: the last replica stays.
	expect(t, Decide(p, idle, &st, at(2000)), 1, ReasonCooldown)
	// t=2119: idle 119 s < 120 s.
	expect(t, Decide(p, idle, &st, at(2119)), 1, ReasonCooldown)
	// t=2125: idle 125 s >= 120 s: 0, whatever the 300 s down window holds.
	expect(t, Decide(p, idle, &st, at(2125)), 0, ReasonIdleToZero)
	// At zero and still idle: stay.
	idle.Current = 0
	expect(t, Decide(p, idle, &st, at(2140)), 0, ReasonIdleToZero)
	// A held request at t=2200 activates 1 and counts as activity.
	idle.Held = 1
	expect(t, Decide(p, idle, &st, at(2200)), 1, ReasonActivate)
	// t=2215 at 1, idle again: idle since the activity at 2200, 15 s.
	idle.Current, idle.Held = 1, 0
	expect(t, Decide(p, idle, &st, at(2215)), 1, ReasonCooldown)
	// t=2320: 120 s after the activity at 2200.
	expect(t, Decide(p, idle, &st, at(2320)), 0, ReasonIdleToZero)
}

// KEDA scales to zero from any count once the cooldown has passed, even
// while the down window still holds more.
func TestDecideZeroFromSeveral(t *testing.T) {
	p := queuePolicy(4)
	p.Min, p.Zero = 0, &Zero{Cooldown: 60 * 1e9}
	mustValidate(t, p)
	var st State
	heldZero := func(o Observation) Observation { o.Held = 0; return o }
	// t=0 at 3 with queue 12: ceil(12/4) = 3 (ratio 1, tolerance).
	expect(t, Decide(p, heldZero(queueObs(3, 12)), &st, at(0)), 3, ReasonTolerance)
	// t=30 idle: raw 0, but the 300 s window holds 3: 3 (stabilized).
	expect(t, Decide(p, heldZero(queueObs(3, 0)), &st, at(30)), 3, ReasonScaleDownStabilized)
	// t=60: idle since the activity at t=0 for 60 s >= 60 s: 0.
	expect(t, Decide(p, heldZero(queueObs(3, 0)), &st, at(60)), 0, ReasonIdleToZero)
}

// Activity resets idleness; unknown activity never goes to zero.
func TestDecideZeroNeedsKnownIdleness(t *testing.T) {
	p := queuePolicy(4)
	p.Min, p.Zero = 0, &Zero{Cooldown: 60 * 1e9}
	mustValidate(t, p)
	var st State
	busy := Observation{Current: 1, Running: 1, Waiting: 0, Held: nan, KV: nan, CPU: nan, TTFT: nan}
	unknown := Observation{Current: 1, Running: nan, Waiting: nan, Held: nan, KV: nan, CPU: nan, TTFT: nan}
	expect(t, Decide(p, busy, &st, at(0)), 1, ReasonMetric) // ratio 1/(4×1) = 0.25: ceil(1/4) = 1
	expect(t, Decide(p, unknown, &st, at(100)), 1, ReasonNoData)
	expect(t, Decide(p, unknown, &st, at(1000)), 1, ReasonNoData)
}

// C01/C02: unknown (NaN, ±Inf) is never 0: keep current, no scale-down.
func TestDecideUnknownKeepsCurrent(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	for _, v := range []float64{nan, posInf, negInf, -1} {
		obs := Observation{Current: 4, Running: 0, Waiting: v, Held: nan, KV: nan, CPU: nan, TTFT: nan}
		d := Decide(p, obs, nil, at(1000))
		expect(t, d, 4, ReasonNoData)
		if d.Raw[0].Valid {
			t.Errorf("waiting %v: raw valid", v)
		}
	}
}

// HPA missing-data rules with two metrics.
func TestDecidePartialData(t *testing.T) {
	p := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalKV, Target: 0.8}}, Min: 1, Max: 10}
	mustValidate(t, p)
	// queue 4 on 4 replicas says ceil(4/4) = 1 (down), kv unknown: keep 4.
	obs := Observation{Current: 4, Running: 4, Waiting: 0, Held: nan, KV: nan, CPU: nan, TTFT: nan}
	expect(t, Decide(p, obs, nil, at(1000)), 4, ReasonPartialData)
	// queue 40 says ceil(40/4) = 10 (up), kv unknown: scaling up is allowed.
	obs.Waiting = 36
	expect(t, Decide(p, obs, nil, at(1000)), 8, ReasonScaleUpLimit) // limit max(4+4, ceil(4×2)) = 8
	// kv 0.96 says 0.96/0.8 = 1.2 × 4 = 4.8 → 5, queue unknown: 5.
	obs = Observation{Current: 4, Running: nan, Waiting: nan, Held: nan, KV: 0.96, CPU: nan, TTFT: nan}
	expect(t, Decide(p, obs, nil, at(1000)), 5, ReasonMetric)
	// Both known: the largest wins. queue ceil(20/4) = 5, kv 0.4/0.8 = 0.5 × 4 = 2.
	obs = Observation{Current: 4, Running: 20, Waiting: 0, Held: nan, KV: 0.4, CPU: nan, TTFT: nan}
	expect(t, Decide(p, obs, nil, at(1000)), 5, ReasonMetric)
}

// Float guard: ceil(2.1/0.7) = 3, not 4.
func TestDecideFloatGuard(t *testing.T) {
	p := queuePolicy(0.7)
	mustValidate(t, p)
	// 2.1/0.7 = 3.0000000000000004 in float64; ratio 2.1/(0.7×1) = 3.
	expect(t, Decide(p, queueObs(1, 2.1), nil, at(1000)), 3, ReasonMetric)
}

// The HPA's missing-pods rule (calcPlainMetricReplicas).
func TestDecideMissingPods(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	// 2 of 4 replicas report a total of 2: per replica 1, usage 1/4 = 0.25
	// < 1 (down), so the 2 missing count at the target 4 each: (2 + 8) /
	// (4×4) = 0.625 → ceil(0.625 × 4) = ceil(2.5) = 3, not ceil(2/4) = 1.
	obs := queueObs(4, 2)
	obs.Reporting = 2
	expect(t, Decide(p, obs, nil, at(1000)), 3, ReasonMetric)
	// 2 of 4 report 20: usage 10/4 = 2.5 > 1 (up), the missing count as 0:
	// 20/16 = 1.25 → ceil(1.25 × 4) = 5.
	obs = queueObs(4, 20)
	obs.Reporting = 2
	expect(t, Decide(p, obs, nil, at(1000)), 5, ReasonMetric)
	// 2 of 4 report 7: usage 3.5/4 = 0.875 (down), fill 8: 15/16 = 0.9375
	// is within the band: keep 4.
	obs = queueObs(4, 7)
	obs.Reporting = 2
	expect(t, Decide(p, obs, nil, at(1000)), 4, ReasonTolerance)
	// kv: 1 of 2 reports 0.2 at target 0.8: usage 0.25 (down), the missing
	// one counts as a full cache (1.0): (0.2 + 1.0)/2 = 0.6 / 0.8 = 0.75 →
	// ceil(0.75 × 2) = ceil(1.5) = 2 = current ... direction: 2 > 2 no; 2.
	pk := &Policy{Metrics: []Metric{{Signal: SignalKV, Target: 0.8}}, Min: 1, Max: 10}
	mustValidate(t, pk)
	ok := Observation{Current: 2, Reporting: 1, Running: nan, Waiting: nan, Held: nan, KV: 0.2, CPU: nan, TTFT: nan}
	expect(t, Decide(pk, ok, nil, at(1000)), 2, ReasonMetric)
}

// Utilisation and ttft arithmetic.
func TestDecideUtilizationAndTTFT(t *testing.T) {
	cpu := &Policy{Metrics: []Metric{{Signal: SignalCPU, Target: 60}}, Min: 1, Max: 10}
	mustValidate(t, cpu)
	// cpu mean 90% / 60 = 1.5 × 4 = 6.
	o := Observation{Current: 4, Running: nan, Waiting: nan, Held: nan, KV: nan, CPU: 90, TTFT: nan}
	expect(t, Decide(cpu, o, nil, at(1000)), 6, ReasonMetric)
	// The docs/design.md lesson: CPU at 46% never reaches 60%: 46/60 = 0.767 →
	// ceil(0.767 × 1) = 1 on one replica, never more.
	o = Observation{Current: 1, Running: nan, Waiting: nan, Held: nan, KV: nan, CPU: 46, TTFT: nan}
	expect(t, Decide(cpu, o, nil, at(1000)), 1, ReasonMetric)

	ttft := &Policy{Metrics: []Metric{{Signal: SignalTTFT, Target: 2}}, Min: 1, Max: 10}
	mustValidate(t, ttft)
	// ttft 5 s / 2 s = 2.5 × 3 = 7.5 → 8; limit max(3+4, 6) = 7.
	o = Observation{Current: 3, Running: nan, Waiting: nan, Held: nan, KV: nan, CPU: nan, TTFT: 5}
	expect(t, Decide(ttft, o, nil, at(1000)), 7, ReasonScaleUpLimit)
}

// HPA documentation examples (kubernetes.io, Horizontal Pod Autoscaling).
func TestDecideHPADocExamples(t *testing.T) {
	// "if the current metric value is 200m, and the desired value is 100m,
	// the number of replicas will be doubled": 0.2 on 3 replicas at 0.1
	// per replica: ceil(0.2×... ) — per replica 0.2 means total 0.6: ceil(0.6/0.1) = 6.
	p := queuePolicy(0.1)
	mustValidate(t, p)
	expect(t, Decide(p, queueObs(3, 0.6), nil, at(1000)), 6, ReasonMetric)

	// Scale-down policies "Pods 4 per 60 s and Percent 10 per 60 s,
	// selectPolicy Max" from 80 replicas: 10% of 80 = 8 > 4 pods, so 72.
	p = queuePolicy(1)
	p.Max = 100
	p.Behavior.ScaleDown = rules(0, autoscalingv2.MaxChangePolicySelect, pods(4, 60), percent(10, 60))
	mustValidate(t, p)
	var st State
	expect(t, Decide(p, queueObs(80, 1), &st, at(1000)), 72, ReasonScaleDownLimit)
	// 30 s later at 72: the period start is 72 + 8 = 80, limit 72: no more.
	expect(t, Decide(p, queueObs(72, 1), &st, at(1030)), 72, ReasonScaleDownLimit)
	// 61 s after the first step the period is clear: "10% of 72 is 7.2,
	// rounded up to 8": trunc(72 × 0.9) = trunc(64.8) = 64.
	expect(t, Decide(p, queueObs(72, 1), &st, at(1061)), 64, ReasonScaleDownLimit)

	// Default scale-up: max(4 pods, 100%) per 15 s. From 10, raw 50:
	// max(10+4, ceil(10×2)) = 20.
	p = queuePolicy(1)
	p.Max = 100
	mustValidate(t, p)
	expect(t, Decide(p, queueObs(10, 50), nil, at(1000)), 20, ReasonScaleUpLimit)
	// From 1, raw 20: max(1+4, 2) = 5.
	expect(t, Decide(p, queueObs(1, 20), nil, at(1000)), 5, ReasonScaleUpLimit)
}

// Scale-up events count against the period, and a lagging consumer is not
// counted twice: events are infscale's own output changes and the limits
// start from its previous output.
func TestDecideScaleUpEventsFromOwnOutput(t *testing.T) {
	p := queuePolicy(1)
	p.Max = 100
	p.Guard = &Guard{Off: true} // the HPA's bookkeeping alone (the guard would hold 6 while 4 are coming)
	mustValidate(t, p)
	var st State
	// t=0 from 2, raw 50: limit max(2+4, ceil(2×2)) = 6; event +4 (2 → 6).
	expect(t, Decide(p, queueObs(2, 50), &st, at(0)), 6, ReasonScaleUpLimit)
	// t=5, the consumer still at 2: the limit starts from the previous
	// output 6: period start 6 − 4 = 2, max(2+4, ceil(2×2)) = 6: stays 6.
	expect(t, Decide(p, queueObs(2, 50), &st, at(5)), 6, ReasonScaleUpLimit)
	if len(st.ScaleUpEvents) != 1 || st.ScaleUpEvents[0].Change != 4 {
		t.Errorf("scale-up events %+v, want one +4", st.ScaleUpEvents)
	}
	// t=16 at 6: the t=0 event is out of the 15 s period: start 6,
	// max(6+4, ceil(6×2)) = 12.
	expect(t, Decide(p, queueObs(6, 50), &st, at(16)), 12, ReasonScaleUpLimit)
}

// Scale-up stabilisation window: the lowest recommendation in it.
func TestDecideScaleUpWindow(t *testing.T) {
	p := queuePolicy(4)
	p.Behavior.ScaleUp = rules(60, autoscalingv2.MaxChangePolicySelect, pods(4, 15))
	mustValidate(t, p)
	var st State
	// t=0 at 2: total 8 → 2 (ratio 1, tolerance).
	expect(t, Decide(p, queueObs(2, 8), &st, at(0)), 2, ReasonTolerance)
	// t=15: total 24 → 6, but the up window holds 2 (lowest since t=−45).
	expect(t, Decide(p, queueObs(2, 24), &st, at(15)), 2, ReasonScaleUpStabilized)
	// t=61: t=0 aged out; lowest of {6 (t=15), 6} = 6; limit 2+4 = 6.
	expect(t, Decide(p, queueObs(2, 24), &st, at(61)), 6, ReasonMetric)
}

var posInf, negInf = 1 / zero(), -1 / zero()

func zero() float64 { return 0 }

// A ttft policy with min 0: at zero there is no ttft, held requests still
// activate one replica (no additive target to divide the backlog by).
func TestDecideActivateWithoutAdditiveMetric(t *testing.T) {
	p := &Policy{Metrics: []Metric{{Signal: SignalTTFT, Target: 2}}, Min: 0, Max: 10}
	mustValidate(t, p)
	obs := Observation{Current: 0, Running: nan, Waiting: nan, Held: 3, KV: nan, CPU: nan, TTFT: nan}
	expect(t, Decide(p, obs, nil, at(0)), 1, ReasonActivate)
	obs.Held = 0
	expect(t, Decide(p, obs, nil, at(0)), 0, ReasonIdleToZero)
}

// Issue 13 item 1: an unknown held count is unknown activity. With running
// and waiting 0 on 1 replica, min 0 and a 60 s cooldown, held unknown (the
// held query empty or failed) never lets the last replica go, however long
// it lasts; the idle clock starts from the last reading with held unknown.
// At zero replicas, held
// unknown is not "no demand" either: no-data, the floor (min 0), and no
// step says "held 0".
func TestDecideZeroUnknownHeld(t *testing.T) {
	p := queuePolicy(4)
	p.Min, p.Zero = 0, &Zero{Cooldown: 60 * 1e9}
	mustValidate(t, p)
	var st State
	idle := Observation{Current: 1, Running: 0, Waiting: 0, Held: nan, KV: nan, CPU: nan, TTFT: nan}
	for _, sec := range []int64{0, 100, 1000} {
		d := Decide(p, idle, &st, at(sec))
		expect(t, d, 1, ReasonCooldown)
		// Unknown counts as possible activity: the idle clock restarts.
		if !st.LastActive.Equal(at(sec)) {
			t.Errorf("t=%d: last active %v: an unknown held read as 0\n%s", sec, st.LastActive, stepsText(d))
		}
	}
	// An unknown reading counts as possible activity: held unknown at t=0,
	// known 0 after: at t=59 idle is 59 s < 60 s; at t=60 it is 60 s: 0.
	st2 := State{}
	idle.Held = nan
	Decide(p, idle, &st2, at(0))
	idle.Held = 0
	expect(t, Decide(p, idle, &st2, at(59)), 1, ReasonCooldown)
	expect(t, Decide(p, idle, &st2, at(60)), 0, ReasonIdleToZero)

	zero := Observation{Current: 0, Running: nan, Waiting: nan, Held: nan, KV: nan, CPU: nan, TTFT: nan}
	d := Decide(p, zero, nil, at(0))
	expect(t, d, 0, ReasonNoData)
	if d.Raw[0].Valid {
		t.Error("queue valid at zero replicas with held unknown")
	}
	for _, s := range d.Steps {
		if s.Reason == ReasonIdleToZero {
			t.Errorf("step %+v reads an unknown held as 0 (no requests held)", s)
		}
	}
}

// Issue 13 item 2: queue + ttft on 5 replicas, running 0 and waiting 0, the
// TTFT quantile NaN because no request finished: the ttft metric abstains
// and the queue's 0 decides (no partial-data): ceil(0/4) = 0, floor min 1,
// default rate limit 100 % per 15 s from 5 → 1. The same NaN from a read
// that failed (NoneFinished false), or with requests waiting, stays
// unknown and holds 5 (partial-data).
func TestDecideTTFTAbstainsWhenIdle(t *testing.T) {
	p := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalTTFT, Target: 2}}, Min: 1, Max: 10,
		Behavior: autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: new(int32)}}}
	mustValidate(t, p)
	idle := Observation{Current: 5, Reporting: 5, Running: 0, Waiting: 0, Held: nan, KV: nan, CPU: nan, TTFT: nan, NoneFinished: true}
	d := Decide(p, idle, nil, at(0))
	expect(t, d, 1, ReasonMin)
	if !d.Raw[1].Abstained || d.Raw[1].Valid {
		t.Errorf("ttft raw %+v, want abstained", d.Raw[1])
	}
	failed := idle
	failed.NoneFinished = false
	expect(t, Decide(p, failed, nil, at(0)), 5, ReasonPartialData)
	busy := idle
	busy.Waiting = 1 // ceil(1/4) = 1 < 5, but a NaN quantile with a request waiting is unknown
	expect(t, Decide(p, busy, nil, at(0)), 5, ReasonPartialData)
}

// TestHoldWithinBounds: a hold for want of data keeps the previous output
// within the policy's present bounds (the reason stays the hold's).
// Previous output 50 (decided under a larger max), now max 3: queue 10 / 8
// = ceil(1.25) = 2 with ttft unknown is partial data, which holds 50, and
// max lowers it to 3; with both unknown (no data) the same. A floor raised
// since (min 4 against a previous 2) raises a hold to 4.
func TestHoldWithinBounds(t *testing.T) {
	p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 8}, {Signal: SignalTTFT, Target: 2}}, Min: 1, Max: 3})
	partial := queueObs(3, 10) // TTFT unknown
	st := State{LastDesired: 50, LastAt: at(0)}
	expect(t, Decide(p, partial, &st, at(15)), 3, ReasonPartialData)
	none := queueObs(3, nan)
	st = State{LastDesired: 50, LastAt: at(0)}
	expect(t, Decide(p, none, &st, at(15)), 3, ReasonNoData)

	q := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 8}, {Signal: SignalTTFT, Target: 2}}, Min: 4, Max: 10})
	st = State{LastDesired: 2, LastAt: at(0)}
	expect(t, Decide(q, queueObs(2, nan), &st, at(15)), 4, ReasonNoData)
}
