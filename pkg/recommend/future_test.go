package recommend

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// far is a state entry dated 2099 (a node whose clock runs ahead wrote it).
var far = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)

// A recommendation dated in the future does not pin the scaleDown window:
// it is ignored and pruned.
func TestFutureRecommendationIgnored(t *testing.T) {
	p := queuePolicy(4)
	p.Behavior.ScaleDown = rules(20, autoscalingv2.MaxChangePolicySelect, percent(100, 15))
	mustValidate(t, p)
	st := &State{
		Recommendations: []TimedReplicas{{At: far, Replicas: 4}},
		LastDesired:     4, LastAt: at(1000),
	}
	// t=1030, 4 replicas, queue 8: ratio 8/(4·4) = 0.5, outside the band →
	// ceil(8/4) = 2. base: the last output is 30 s old > the longest window
	// or period (20 s) → current 4. Without the 2099 entry the scaleDown
	// window (1010, 1030] holds only this 2: min(max(4, 2), 2) = 2. Rate
	// limit 100 % per 15 s from 4: trunc(4 × 0) = 0, not binding → 2.
	// (Counted, the 2099 entry would make the window's highest 4 → 4.)
	d := Decide(p, queueObs(4, 8), st, at(1030))
	expect(t, d, 2, ReasonMetric)
	if len(st.Recommendations) != 1 || !st.Recommendations[0].At.Equal(at(1030)) || st.Recommendations[0].Replicas != 2 {
		t.Errorf("recommendations %v, want only {1030 2}: the 2099 entry pruned", st.Recommendations)
	}
}

// A scale event dated in the future is not counted by the rate limit and
// is pruned.
func TestFutureScaleEventIgnored(t *testing.T) {
	p := queuePolicy(4)
	p.Behavior.ScaleDown = rules(0, autoscalingv2.MaxChangePolicySelect, pods(1, 15))
	mustValidate(t, p)
	st := &State{
		ScaleDownEvents: []ScaleEvent{{At: far, Change: 1}},
		LastDesired:     4, LastAt: at(1000),
	}
	// t=1030, 4 replicas, queue 8 → raw 2 (as above); window 0 s → 2.
	// Rate limit 1 pod per 15 s: no event in (1015, 1030] once the 2099 one
	// is dropped, period start = 4 − 0 + 0 = 4, limit 4 − 1 = 3 → 3. (Counted,
	// the 2099 event would give start 4 + 1 = 5, limit 4: no scale-down.)
	d := Decide(p, queueObs(4, 8), st, at(1030))
	expect(t, d, 3, ReasonScaleDownLimit)
	// The only event left is this decision's 4 → 3.
	if len(st.ScaleDownEvents) != 1 || !st.ScaleDownEvents[0].At.Equal(at(1030)) || st.ScaleDownEvents[0].Change != 1 {
		t.Errorf("scale-down events %v, want only {1030 1}", st.ScaleDownEvents)
	}
}

// A demand sample dated ahead of now does not feed the lookahead trend.
func TestFutureDemandIgnored(t *testing.T) {
	p := queuePolicy(4)
	p.Max, p.Lookahead = 100, 60*time.Second
	p.Behavior.ScaleDown = rules(20, autoscalingv2.MaxChangePolicySelect, percent(100, 15))
	mustValidate(t, p)
	st := &State{
		Demand:      []DemandSample{{At: at(1020), Demand: 8}, {At: at(1040), Demand: 100}},
		LastDesired: 4, LastAt: at(1020),
		FirstSeen: at(1000), LastActive: far,
	}
	// t=1030, queue 8 on 4 → raw 2. Lookahead over (910, 1030]: samples 8 at
	// 1020 and 8 at 1030 (the 1040 one is 10 s ahead: dropped) → slope 0 →
	// ceil(8/4) = 2, not above 2. Counted, the 1040 sample would give (t
	// relative to now −10, 0, +10; demand 8, 8, 100) slope Σty/Σt² =
	// (−80 + 0 + 1000)/200 = 4.6/s → 8 + 276 = 284 → 71 replicas.
	// base: the last output is 10 s old → 4; window (1010, 1030] holds only
	// this 2 → 2; 100 % per 15 s from 4 allows 0 → 2.
	d := Decide(p, queueObs(4, 8), st, at(1030))
	expect(t, d, 2, ReasonMetric)
	if len(st.Demand) != 2 || !st.Demand[1].At.Equal(at(1030)) {
		t.Errorf("demand %v, want the samples at 1020 and 1030", st.Demand)
	}
	// A future last activity is read as activity now.
	if !st.LastActive.Equal(at(1030)) {
		t.Errorf("last active %v, want 1030 (the 2099 value brought back to now)", st.LastActive)
	}
}

// Dips are kept in the order they ended (recorded), so one that started
// before now can end after it: a state saved by a node whose clock runs
// ahead. What was recorded after now is dropped, as the other lists'
// entries are, and so are an open dip's lows reached after now: the state
// the decision leaves must load again (State.Validate).
func TestFutureDipDropped(t *testing.T) {
	p := holdPolicy(t, 90*time.Second, nil)
	st := &State{
		LastDesired: 8, LastAt: at(1000),
		Dips: []Dip{
			{At: at(800), Seconds: 100, Returned: true, Back: 8, From: 8, Floor: 5}, // ended 900
			{At: at(950), Seconds: 20, Returned: true, Back: 3, From: 3, Floor: 2},  // ended 970
			{At: at(700), Seconds: 300, Returned: true, Back: 8, From: 8, Floor: 3}, // ended 1000
		},
		OpenDip: &OpenDip{At: at(920), From: 8, Floor: 1, Lows: []DipLow{{At: at(920), Floor: 4}, {At: at(990), Floor: 1}}},
	}
	if err := st.Validate(); err != nil {
		t.Fatalf("the saved state: %v", err)
	}
	// Restored at 940 by a node 60 s behind, then a decision at 955.
	Resume(st, 8, at(940))
	Decide(p, runObs(8, 40), st, at(955))
	if len(st.Dips) != 1 || !st.Dips[0].At.Equal(at(800)) {
		t.Errorf("dips %+v, want only the one that ended at 900", st.Dips)
	}
	// The open dip's low at 990 is gone: its floor is 4 again, and the
	// recommendation 4 (40 running / 10) is no return.
	if d := st.OpenDip; d == nil || d.Floor != 4 || len(d.Lows) != 1 || !d.Lows[0].At.Equal(at(920)) {
		t.Errorf("open dip %+v, want from 8, floor 4 since 920", d)
	}
	if err := st.Validate(); err != nil {
		t.Errorf("the state after the decision does not load: %v", err)
	}
}
