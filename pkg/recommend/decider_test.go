package recommend

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

func unknownObs(cur int) Observation {
	return Observation{Current: cur, Running: math.NaN(), Waiting: math.NaN(), Held: math.NaN(), KV: math.NaN(), CPU: math.NaN(), TTFT: math.NaN()}
}

// A loop holds its last desired value on no data, and the outage counts as
// that value in the windows.
func TestLoopHoldsOnNoData(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	var l Decider
	// Nothing ever known: no decision.
	if _, decided, _ := decideOnce(&l, p, Reading{Obs: unknownObs(0)}, at(990)); decided {
		t.Fatal("decided without any current count")
	}
	// queue 12 on 1 at target 4 → ceil(12/4) = 3 (scale-up limit max(1+4, 2×1) = 5).
	d, decided, held := decideOnce(&l, p, Reading{Obs: queueObs(1, 12), CurrentKnown: true}, at(1000))
	if !decided || held || d.Desired != 3 || !l.HasDesired || l.Desired != 3 || l.Current != 1 {
		t.Fatalf("first: %+v decided %v held %v, loop %+v", d, decided, held, l)
	}
	// 30 s without data: hold 3, recorded at 1030.
	d, _, held = decideOnce(&l, p, Reading{Obs: unknownObs(0)}, at(1030))
	if !held || d.Desired != 3 || d.Reason != ReasonNoData || d.Current != 1 {
		t.Errorf("no data: %+v held %v, want 3 held from current 1", d, held)
	}
	if r := l.State.Recommendations; len(r) == 0 || r[len(r)-1] != (TimedReplicas{At: at(1030), Replicas: 3}) {
		t.Errorf("recommendations %+v, want the held 3 at 1030 last", r)
	}
	// A reload narrowing max to 2 during the outage: the hold is bounded.
	p2 := queuePolicy(4)
	p2.Max = 2
	mustValidate(t, p2)
	if d, _, _ := decideOnce(&l, p2, Reading{Obs: unknownObs(0)}, at(1045)); d.Desired != 2 {
		t.Errorf("hold within max 2: %d", d.Desired)
	}
}

// Without a replicas reading the previous desired is the current count
// (the consumer sets it); the replicas that answered are the reporting ones.
func TestLoopCurrentFromDesired(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	var l Decider
	decideOnce(&l, p, Reading{Obs: queueObs(1, 12), CurrentKnown: true, SpecFollows: true}, at(1000)) // → 3
	obs := queueObs(1, 12)                                                                            // one pod answered
	d, _, _ := decideOnce(&l, p, Reading{Obs: obs, CurrentKnown: true, SpecFollows: true}, at(1015))
	if d.Current != 3 {
		t.Errorf("current %d, want the previous desired 3", d.Current)
	}
}

// Restore bounds the saved desired value; Horizon is the longest window or
// period, at least 5 minutes.
func TestLoopRestoreAndHorizon(t *testing.T) {
	p := mustValidate(t, queuePolicy(4)) // max 10
	var l Decider
	if got := l.Restore(p, 50, -1, State{}, at(1000)); got != 10 || l.HasCurrent {
		t.Errorf("restored %d (current known %v), want 10 and current unknown", got, l.HasCurrent)
	}
	for _, tc := range []struct {
		down int32
		want time.Duration
	}{{60, 5 * time.Minute}, {300, 5 * time.Minute}, {600, 10 * time.Minute}} {
		q := queuePolicy(4)
		q.Behavior.ScaleDown = &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &tc.down}
		if got := mustValidate(t, q).Horizon(); got != tc.want {
			t.Errorf("down window %d s: horizon %v, want %v", tc.down, got, tc.want)
		}
	}
}

// Requests held while no metric is known (the only replica still in its
// cold start: no page answers) are activity: the cooldown to zero runs
// from the last of them, not from the activation (KEDA's cooldownPeriod
// counts from the last time the trigger was active).
func TestLoopNoDataHeldIsActivity(t *testing.T) {
	p := queuePolicy(4)
	p.Min, p.Zero = 0, &Zero{Cooldown: 120 * time.Second}
	mustValidate(t, p)
	var l Decider
	held := func(cur int, running, held float64) Reading {
		return Reading{Obs: Observation{Current: cur, Running: running, Waiting: running, Held: held, KV: math.NaN(), CPU: math.NaN(), TTFT: math.NaN()}, CurrentKnown: true}
	}
	// t=2000 at zero, 4 held: activate 1.
	if d, _, _ := decideOnce(&l, p, held(0, math.NaN(), 4), at(2000)); d.Desired != 1 || d.Reason != ReasonActivate {
		t.Fatalf("activation: %+v", d)
	}
	// t=2015..2090: the replica starting, no page answers, still 4 held:
	// no metric known, 1 held on.
	for s := int64(2015); s <= 2090; s += 15 {
		if d, _, h := decideOnce(&l, p, held(1, math.NaN(), 4), at(s)); d.Desired != 1 || !h {
			t.Fatalf("t=%d: %+v held %v, want 1 held on", s, d, h)
		}
	}
	// t=2100 ready and idle (the held requests served): idle since 2090.
	// t=2205: 115 s < 120 s, the last replica stays (idle since the
	// activation at 2000 it would read 205 s and go to zero).
	// t=2215: 125 s >= 120 s: zero.
	for _, c := range []struct {
		s    int64
		want int
		why  Reason
	}{{2100, 1, ReasonCooldown}, {2205, 1, ReasonCooldown}, {2215, 0, ReasonIdleToZero}} {
		if d, _, _ := decideOnce(&l, p, held(1, 0, 0), at(c.s)); d.Desired != c.want || d.Reason != c.why {
			t.Errorf("t=%d: desired %d (%s), want %d (%s)", c.s, d.Desired, d.Reason, c.want, c.why)
		}
	}
}

// A Quiet loop decides as a loop that writes its steps, with no steps; its
// Explain gives the steps the other wrote for the same decision (outages
// held, scale-ups and -downs, missing pods, scale to zero included).
func TestLoopQuietExplain(t *testing.T) {
	kv := func(cur, reporting int, queue, kv float64) Observation {
		o := queueObs(cur, queue)
		o.KV, o.Reporting = kv, reporting
		return o
	}
	for _, p := range []*Policy{
		{Metrics: []Metric{{Signal: SignalQueue, Target: 24}, {Signal: SignalKV, Target: 0.8}}, Min: 1, Max: 8},
		{Metrics: []Metric{{Signal: SignalQueue, Target: 4}}, Min: 0, Max: 10},
	} {
		mustValidate(t, p)
		var loud, quiet Decider
		quiet.Quiet = true
		if quiet.Explain() != nil {
			t.Fatal("Explain before any decision")
		}
		readings := []Reading{
			{Obs: kv(2, 2, 60, 0.3), CurrentKnown: true, SpecFollows: true},
			{Obs: kv(2, 2, 60, 0.3), CurrentKnown: true, SpecFollows: true},
			{Obs: kv(3, 2, 90, 0.9), CurrentKnown: true, SpecFollows: true},
			{Obs: unknownObs(0)},
			{Obs: unknownObs(0)},
			{Obs: kv(4, 4, 10, 0.2), CurrentKnown: true},
			{Obs: kv(4, 1, 0, 0.1), CurrentKnown: true},
			{Obs: kv(1, 1, 0, 0), CurrentKnown: true},
			{Obs: kv(1, 1, 0, 0), CurrentKnown: true},
			{Obs: kv(0, 0, 0, math.NaN()), CurrentKnown: true},
		}
		for i := range 60 {
			r := readings[i%len(readings)]
			now := at(1000 + 15*int64(i))
			dl, okl, hl := decideOnce(&loud, p, r, now)
			dq, okq, hq := decideOnce(&quiet, p, r, now)
			if okl != okq || hl != hq || dl.Desired != dq.Desired || dl.Reason != dq.Reason || fmt.Sprint(dl.Raw) != fmt.Sprint(dq.Raw) { // NaN values: compared as printed
				t.Fatalf("%d: quiet %+v %v %v, loud %+v %v %v", i, dq, okq, hq, dl, okl, hl)
			}
			if len(dq.Steps) != 0 || len(dl.Steps) == 0 {
				t.Fatalf("%d: quiet steps %v, loud steps %v", i, dq.Steps, dl.Steps)
			}
			if got := quiet.Explain(); !reflect.DeepEqual(got, dl.Steps) {
				t.Fatalf("%d: Explain %+v, want %+v", i, got, dl.Steps)
			}
			if fmt.Sprintf("%+v", loud.State) != fmt.Sprintf("%+v", quiet.State) || loud.Desired != quiet.Desired || loud.Current != quiet.Current {
				t.Fatalf("%d: states differ: %+v, %+v", i, quiet.State, loud.State)
			}
		}
	}
}

// Loops that share one Scratch (serve's targets) decide as loops that each
// keep their own: the same decisions and the same States, nil and empty
// lists alike (so the same JSON), and Explain writes each newest
// decision's steps, over scale-ups and -downs, outages held, a lookahead
// (Demand samples), a clock that goes back (every list rewritten) and a
// restore.
func TestLoopSharedScratch(t *testing.T) {
	la := lookaheadPolicy(t)
	dem := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 20, Capacity: testCapacity})
	policies := []*Policy{
		mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 24}, {Signal: SignalKV, Target: 0.8}}, Min: 1, Max: 8}),
		mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}}, Min: 0, Max: 10}),
		la, dem,
	}
	obs := func(i, k int) Reading {
		switch (i + 3*k) % 9 {
		case 0, 1:
			o := queueObs(2, float64(10+20*k+i%7))
			o.KV, o.Reporting = 0.3, 2
			return Reading{Obs: o, CurrentKnown: true, SpecFollows: k%2 == 0}
		case 2:
			return Reading{Obs: unknownObs(0)}
		case 3:
			return Reading{Obs: demandObs(3, float64(i%11)), CurrentKnown: true}
		case 4, 5:
			return Reading{Obs: queueObs(4, float64(60*(i%5))), CurrentKnown: true}
		case 6:
			return Reading{Obs: queueObs(1, 0), CurrentKnown: true}
		default:
			return Reading{Obs: queueObs(3, float64(100-i%100)), CurrentKnown: i%3 != 0}
		}
	}
	var scratch State
	own := make([]Decider, len(policies))
	loud := make([]Decider, len(policies))
	shared := make([]Decider, len(policies))
	for k := range shared {
		shared[k].Scratch, shared[k].Quiet = &scratch, true
		own[k].Quiet = true
	}
	sec := int64(1000)
	for i := range 120 {
		sec += 15
		if i == 70 {
			sec -= 600 // the clock goes back: every list drops its future entries
		}
		now := at(sec)
		for k, p := range policies {
			if i == 90 && k == 1 {
				st := own[k].State
				for _, l := range []*Decider{&own[k], &loud[k], &shared[k]} {
					l.Restore(p, 5, 3, copyState(State{}, &st), now)
				}
			}
			r := obs(i, k)
			do, oko, ho := decideOnce(&own[k], p, r, now)
			dl, _, _ := decideOnce(&loud[k], p, r, now)
			ds, oks, hs := decideOnce(&shared[k], p, r, now)
			if oko != oks || ho != hs || do.Desired != ds.Desired || do.Reason != ds.Reason || fmt.Sprint(do.Raw) != fmt.Sprint(ds.Raw) {
				t.Fatalf("%d/%d: shared %+v %v %v, own %+v %v %v", i, k, ds, oks, hs, do, oko, ho)
			}
			if !reflect.DeepEqual(own[k].State, shared[k].State) {
				t.Fatalf("%d/%d: states differ:\n%#v\n%#v", i, k, shared[k].State, own[k].State)
			}
			jo, _ := json.Marshal(own[k].State)
			js, _ := json.Marshal(shared[k].State)
			if string(jo) != string(js) {
				t.Fatalf("%d/%d: JSON %s, want %s", i, k, js, jo)
			}
			if !oks {
				continue
			}
			if got := shared[k].Explain(); !reflect.DeepEqual(got, dl.Steps) || len(got) == 0 {
				t.Fatalf("%d/%d: Explain %+v, want %+v", i, k, got, dl.Steps)
			}
			if got := own[k].Explain(); !reflect.DeepEqual(got, dl.Steps) {
				t.Fatalf("%d/%d: own Explain %+v, want %+v", i, k, got, dl.Steps)
			}
		}
	}
}

// decideOnce is l.Decide into a fresh Decision.
func decideOnce(l *Decider, p *Policy, r Reading, now time.Time) (Decision, bool, bool) {
	var d Decision
	decided, held := l.Decide(&d, p, r, now)
	return d, decided, held
}

// TestLoopOutagePastTheWindows: the consumer behind (3 running of a
// desired 4: queue 16 at target 4 on 3 asks ceil(16/4) = 4), then an
// outage longer than every window (the default 300 s scale-down window):
// the held 4 is the output the consumer saw, recorded as the last output
// at each hold, so the first decision after it starts from 4 (base), not
// from the 3 running (serve exported 4, 3, 4 with the runaway guard
// holding at max(base 3, current 3), and recorded a scale-down).
func TestLoopOutagePastTheWindows(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	var l Decider
	for s := int64(1000); s <= 1060; s += 15 { // the consumer stays at 3
		if d, _, _ := decideOnce(&l, p, Reading{Obs: queueObs(3, 16), CurrentKnown: true}, at(s)); d.Desired != 4 {
			t.Fatalf("t=%d: desired %d, want 4\n%s", s, d.Desired, stepsText(d))
		}
	}
	for s := int64(1075); s <= 1400; s += 15 {
		if d, _, held := decideOnce(&l, p, Reading{Obs: unknownObs(0)}, at(s)); !held || d.Desired != 4 {
			t.Fatalf("t=%d no data: desired %d held %v, want 4 held", s, d.Desired, held)
		}
	}
	if l.State.LastDesired != 4 || !l.State.LastAt.Equal(at(1390)) {
		t.Errorf("after the holds: last desired %d at %v, want the held 4 at the last hold (1390)", l.State.LastDesired, l.State.LastAt)
	}
	d, _, _ := decideOnce(&l, p, Reading{Obs: queueObs(3, 16), CurrentKnown: true}, at(1415))
	if d.Desired != 4 || len(l.State.ScaleDownEvents) != 0 {
		t.Errorf("after the outage: desired %d, scale-down events %+v; want 4 and none\n%s", d.Desired, l.State.ScaleDownEvents, stepsText(d))
	}
}

// TestLoopOutageDuringScaleUp: an outage while replicas asked for are
// still coming does not forget them. queue:4 on 3 replicas with 24
// waiting asks ceil(24 / 4) = 6; at 1015 3 of the 6 are ready (3
// coming); no data at 1025 holds 6; at 1035 all 6 serve and 40 still
// wait (the queue has not seen their capacity): ceil(40 / 4) = 10. The
// guard dates their readiness at the last decision that saw them coming
// (1015), as without the outage: 20 s < the 30 s drain, so the queue is
// held at the 6 asked (as before the hold recorded itself as the last
// output); at 1045 (30 s) the hold ends and 10 = 6 + 4 (the scaleUp
// policy's 4 pods) goes out. With nothing counted coming after the hold
// the guard forgot them and asked 10 at 1035.
func TestLoopOutageDuringScaleUp(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	var l Decider
	if d, _, _ := decideOnce(&l, p, Reading{Obs: queueObs(3, 24), CurrentKnown: true}, at(1000)); d.Desired != 6 {
		t.Fatalf("1000: desired %d, want 6\n%s", d.Desired, stepsText(d))
	}
	starting := queueObs(6, 24)
	starting.Unready = 3
	if d, _, _ := decideOnce(&l, p, Reading{Obs: starting, CurrentKnown: true}, at(1015)); d.Desired != 6 || l.State.Coming != 3 {
		t.Fatalf("1015: desired %d coming %d, want 6 and 3\n%s", d.Desired, l.State.Coming, stepsText(d))
	}
	if d, _, held := decideOnce(&l, p, Reading{Obs: unknownObs(6)}, at(1025)); !held || d.Desired != 6 {
		t.Fatalf("1025 no data: desired %d held %v, want 6 held", d.Desired, held)
	}
	// A state saved mid-outage restores (serve's state file): the hold at
	// 1025 is its last output, the readiness dated 1015.
	if err := l.State.Validate(); err != nil || l.State.LastDesired != 6 || !l.State.LastAt.Equal(at(1025)) || !l.State.ReadyAt.Equal(at(1015)) || l.State.Coming != 0 {
		t.Errorf("saved mid-outage: %v; last %d at %v, ready at %v, coming %d; want valid, 6 at 1025, 1015, 0", err, l.State.LastDesired, l.State.LastAt, l.State.ReadyAt, l.State.Coming)
	}
	if d, _, _ := decideOnce(&l, p, Reading{Obs: queueObs(6, 40), CurrentKnown: true}, at(1035)); d.Desired != 6 {
		t.Errorf("1035, all 6 ready 20 s after 1015: desired %d, want 6 (held by the guard)\n%s", d.Desired, stepsText(d))
	}
	if d, _, _ := decideOnce(&l, p, Reading{Obs: queueObs(6, 40), CurrentKnown: true}, at(1045)); d.Desired != 10 {
		t.Errorf("1045, 30 s after 1015: desired %d, want 10 (the drain over)\n%s", d.Desired, stepsText(d))
	}
}

// TestLoopOutageBoundIsAnEvent: a hold moved by a bound (a reload to
// max 2 during an outage, 4 asked before it) is a change of the output:
// the 4 → 2 is a scale-down event, counted in the rate limit's period as
// the HPA counts every rescale, and once, whenever the data returns.
// queue:4 with 16 waiting on 4 asks 4; the hold at 1015 under max 2 is 2
// (a scale-down of 2, recorded at 1015); the data back at 1030 with 8
// waiting on 2 asks 2: no change, no event. (Before, nothing was recorded
// at all: the first decision after the outage started from the held 2.)
func TestLoopOutageBoundIsAnEvent(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	var l Decider
	if d, _, _ := decideOnce(&l, p, Reading{Obs: queueObs(4, 16), CurrentKnown: true}, at(1000)); d.Desired != 4 {
		t.Fatalf("1000: desired %d, want 4\n%s", d.Desired, stepsText(d))
	}
	p2 := queuePolicy(4)
	p2.Max = 2
	p2 = mustValidate(t, p2)
	if d, _, held := decideOnce(&l, p2, Reading{Obs: unknownObs(4)}, at(1015)); !held || d.Desired != 2 {
		t.Fatalf("1015 no data, max 2: desired %d held %v, want 2 held", d.Desired, held)
	}
	if ev := l.State.ScaleDownEvents; len(ev) != 1 || ev[0].Change != 2 || !ev[0].At.Equal(at(1015)) || len(l.State.ScaleUpEvents) != 0 {
		t.Errorf("after the hold: scale-down events %+v, up %+v; want one of 2 at 1015 (the bounded hold), none up", ev, l.State.ScaleUpEvents)
	}
	// 1030: the default scaleDown period (15 s) has dropped the 1015 event.
	if d, _, _ := decideOnce(&l, p2, Reading{Obs: queueObs(2, 8), CurrentKnown: true}, at(1030)); d.Desired != 2 {
		t.Fatalf("1030: desired %d, want 2\n%s", d.Desired, stepsText(d))
	}
	if ev := l.State.ScaleDownEvents; len(ev) != 0 || len(l.State.ScaleUpEvents) != 0 {
		t.Errorf("1030: scale-down events %+v, up %+v; want none (the 1015 one past its period, no change at 1030)", ev, l.State.ScaleUpEvents)
	}
}
