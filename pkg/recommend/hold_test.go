package recommend

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestHoldThreshold works docs/recommend.md's example by hand: break-even
// 180 s; dips from 3 down to 1 that returned to 3 after 40, 50 and 60 s,
// and one that did not (recorded at the 1,800 s horizon). Each released
// replicas 2 and 3; for either:
//
//	T = 0:  180 + 180 + 180 + 0        = 540
//	T = 40: 40 + 220 + 220 + 40        = 520
//	T = 50: 40 + 50 + 230 + 50         = 370
//	T = 60: 40 + 50 + 60 + 60          = 210   <- T* = 60
//
// A dip from 3 to 2 that returned after 10 s released replica 3 only:
// T*(3) over the five dips is 60 s (cost 220 against 720: the new dip
// costs 10 held through, 10 + 180 released), T*(2) stays 60 over four.
// Replica 1 was released by none: T* = 0.
func TestHoldThreshold(t *testing.T) {
	h := &Hold{BreakEven: 180 * time.Second}
	dips := []Dip{{At: at(0), Seconds: 40, Returned: true, Back: 3, From: 3, Floor: 1},
		{At: at(100), Seconds: 50, Returned: true, Back: 3, From: 3, Floor: 1},
		{At: at(200), Seconds: 60, Returned: true, Back: 3, From: 3, Floor: 1}, {At: at(300), Seconds: 1800, From: 3, Floor: 1}}
	for _, k := range []int{2, 3} {
		T, cT, c0, n, nb := h.threshold(dips, k)
		if T != 60 || cT != 210 || c0 != 540 || n != 4 || nb != 3 {
			t.Errorf("replica %d: threshold %g (cost %g, at once %g, %d released, %d back), want 60 (210, 540, 4, 3)", k, T, cT, c0, n, nb)
		}
	}
	dips = append(dips, Dip{At: at(2200), Seconds: 10, Returned: true, Back: 3, From: 3, Floor: 2})
	if T, cT, c0, n, _ := h.threshold(dips, 3); T != 60 || cT != 220 || c0 != 720 || n != 5 {
		t.Errorf("replica 3 with the shallow dip: threshold %g (cost %g, at once %g, %d released), want 60 (220, 720, 5)", T, cT, c0, n)
	}
	if T, _, c0, n, _ := h.threshold(dips, 2); T != 60 || c0 != 540 || n != 4 {
		t.Errorf("replica 2 with the shallow dip: threshold %g (at once %g, %d released), want 60 (540, 4): the shallow dip kept it", T, c0, n)
	}
	if T, _, _, n, _ := h.threshold(dips, 1); T != 0 || n != 0 {
		t.Errorf("replica 1: threshold %g over %d dips, want 0 over none", T, n)
	}
	// Dips that come back only after 400 s: releasing at once (cost 180
	// each) beats holding through one (400 + 180 for the other).
	T, _, _, _, _ := h.threshold([]Dip{{At: at(0), Seconds: 400, Returned: true, Back: 2, From: 2, Floor: 1}, {At: at(900), Seconds: 450, Returned: true, Back: 2, From: 2, Floor: 1}}, 2)
	if T != 0 {
		t.Errorf("threshold over 400 and 450 s dips: %g, want 0 (release: 360 < 400 + 180)", T)
	}
	// A dip that returned below the replica did not want it again: for
	// replica 3 a dip from 3 that came back to 2 after 40 s costs T held.
	T, cT, _, _, _ := h.threshold([]Dip{{At: at(0), Seconds: 40, Returned: true, Back: 2, From: 3, Floor: 1}}, 3)
	if T != 0 || cT != 0 {
		t.Errorf("threshold over a dip back to 2 only, replica 3: %g (cost %g), want 0 (0): release", T, cT)
	}
	if T, _, _, _, _ := h.threshold(nil, 1); T != 0 {
		t.Errorf("no history: %g, want 0 (the HPA's behavior)", T)
	}
}

// TestHoldDecide runs the rule through Decide: running:10 with no
// scale-down window and a 90 s break-even. Each 15 s decision:
//
//	t=0    30 running on 1 -> 3
//	t=15   5 running  -> 1: a dip from 3 opens; no history: T* = 0, release
//	t=30   30         -> 3: the dip returned after 15 s (recorded)
//	t=45   5          -> dip from 3; history {15 s returned}: cost(0) = 90,
//	                     cost(15) = 15: T* = 15; open 0 s < 15: hold 3
//	t=60   5          -> open 15 s >= 15: release to 1
func TestHoldDecide(t *testing.T) {
	p, obs := holdPolicy(t, 90*time.Second, nil), runObs
	var st State
	expect(t, Decide(p, obs(1, 30), &st, at(0)), 3, ReasonMetric)
	expect(t, Decide(p, obs(3, 5), &st, at(15)), 1, ReasonMetric)
	expect(t, Decide(p, obs(1, 30), &st, at(30)), 3, ReasonMetric)
	if len(st.Dips) != 1 || st.Dips[0].Seconds != 15 || !st.Dips[0].Returned {
		t.Fatalf("dips %+v, want one returned after 15 s", st.Dips)
	}
	if T, _, _, _, _ := p.Hold.threshold(st.Dips, 3); T != 15 {
		t.Errorf("threshold T* = %g s after the returned dip, want 15", T)
	}
	d := Decide(p, obs(3, 5), &st, at(45))
	expect(t, d, 3, ReasonHold)
	// The metric asks 1; the hold keeps 3.
	if _, ok := stepWith(d, ReasonHold, 3); !ok || d.Raw[0].Replicas != 1 {
		t.Errorf("raw %+v; want the metric's 1 held at 3:\n%s", d.Raw[0], stepsText(d))
	}
	expect(t, Decide(p, obs(3, 5), &st, at(60)), 1, ReasonMetric)
	if err := st.Validate(); err != nil {
		t.Errorf("state: %v", err)
	}
}

// TestHoldBackAtMostFrom: a dip returns at most to the replicas it held
// at its start; more is new demand. running:10, hold B = 90 s, no
// scale-down window: 20 running -> 2; 5 -> 1 (a dip from 2, no history:
// released); 70 -> 7, limited to max(1 + 4, 1 × 2) = 5: the dip returned
// after 15 s, Back min(7, 2) = 2 (not 7). Then 5 running again: a dip
// from 5: no dip released replicas 3-5 (T* = 0); the first released
// replica 2 and wanted it back, T*(2) = 15 s (cost 15 against 90
// releasing at once), open 0 s: hold 1 + 1 = 2, not the 5 the ramp's
// answer left.
func TestHoldBackAtMostFrom(t *testing.T) {
	p, obs := holdPolicy(t, 90*time.Second, nil), runObs
	var st State
	expect(t, Decide(p, obs(1, 20), &st, at(0)), 2, ReasonMetric)
	expect(t, Decide(p, obs(2, 5), &st, at(15)), 1, ReasonMetric)
	expect(t, Decide(p, obs(1, 70), &st, at(30)), 5, ReasonScaleUpLimit)
	if len(st.Dips) != 1 || st.Dips[0].Back != 2 {
		t.Fatalf("dips %+v, want one returned with Back 2 (its From)", st.Dips)
	}
	expect(t, Decide(p, obs(5, 5), &st, at(45)), 2, ReasonHold)
}

// TestHoldTrendCap: demand:0.5 on testCapacity (0.15625 replica-s per
// request), lookahead 30 s, break-even 60 s (memory 600 s). 8 req/s for
// 90 s, silence, then a busy period returns: 2, 4, 6 req/s at 210, 225,
// 240 s. At 240 s the slope over (-30, 2), (-15, 4), (0, 6) is 2/15 =
// 0.1333 req/s per s, its standard error sqrt(4/30)/sqrt(450) = 0.0172
// (4 × 0.0172 = 0.069 < 0.1333: counted). Uncapped: (6 + 0.1333 × 30) ×
// 0.15625 / 0.5 = 3.125 -> 4. The rate 6 is below the recent peak 8 and
// the projection 10 above it, so the trend is capped at (8 - 6)/30:
// 8 × 0.15625 / 0.5 = 2.5 -> 3.
func TestHoldTrendCap(t *testing.T) {
	run := func(hold *Hold) (Decision, State) {
		p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 10,
			Lookahead: 30 * time.Second, Capacity: testCapacity, Hold: hold})
		var st State
		var d Decision
		for s := int64(0); s <= 240; s += 15 {
			rate := 0.0
			switch {
			case s <= 90:
				rate = 8
			case s >= 210:
				rate = float64(s-195) / 15 * 2
			}
			d = Decide(p, demandObs(2, rate), &st, at(s))
		}
		return d, st
	}
	if d, _ := run(nil); d.Raw[0].Replicas != 4 {
		t.Errorf("without the hold: %d replicas, want 4\n%s", d.Raw[0].Replicas, stepsText(d))
	}
	d, st := run(&Hold{BreakEven: 60 * time.Second})
	// The peak the trend was capped at: the highest rate recorded before 240 s.
	peak := 0.0
	for _, s := range st.RatePeaks {
		if s.At.Before(at(240)) {
			peak = max(peak, s.Demand)
		}
	}
	if d.Raw[0].Replicas != 3 || peak != 8 {
		t.Errorf("with the hold: %d replicas under a recent peak of %g req/s, want 3 capped at the peak 8\n%s", d.Raw[0].Replicas, peak, stepsText(d))
	}
}

// TestHoldTrendCapNoise: as TestHoldTrendCap with a recent peak of 5.9
// req/s: the rate 6 at 240 s is above it by 0.1, less than its Poisson
// noise sqrt(6/30) = 0.447 at the ramp bound's z = 1, so it has not
// passed the peak: no trend, 6 × 0.15625 / 0.5 = 1.875 -> 2. At z = 0
// (no ramp bound) a rate above the peak is a new ramp: (6 + 0.1333 × 30)
// × 0.3125 = 3.125 -> 4.
func TestHoldTrendCapNoise(t *testing.T) {
	run := func(z float64) Decision {
		p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}}, Min: 1, Max: 10,
			Lookahead: 30 * time.Second, Capacity: testCapacity, Hold: &Hold{BreakEven: 60 * time.Second}, RampBound: z})
		var st State
		var d Decision
		for s := int64(0); s <= 240; s += 15 {
			rate := 0.0
			switch {
			case s <= 90:
				rate = 5.9
			case s >= 210:
				rate = float64(s-195) / 15 * 2
			}
			d = Decide(p, demandObs(2, rate), &st, at(s))
		}
		return d
	}
	if d := run(1); d.Raw[0].Replicas != 2 || !strings.Contains(stepsText(d), "capped at the recent peak 5.9 req/s") {
		t.Errorf("z = 1: %d replicas, want 2, capped at the peak 5.9\n%s", d.Raw[0].Replicas, stepsText(d))
	}
	if d := run(0); d.Raw[0].Replicas != 4 {
		t.Errorf("z = 0: %d replicas, want 4 (a new ramp)\n%s", d.Raw[0].Replicas, stepsText(d))
	}
}

// TestLatencyCap: demand:0.5 and ttft:2 on testCapacity (batch
// min(10, 10000/150) = 10), lookahead 30 s, 2 replicas both running a full
// batch (20), 4 req/s of 100/50 tokens, 8 waiting, TTFT p95 6 s. ttft
// alone asks ceil(6/2 × 2) = 6. The capacity: 4 × 0.15625 = 0.625 busy;
// the queue 8 × 0.15625 = 1.25 replica-s cleared within the 2 s target
// is 0.625 more, below the ceil(20/10) = 2 replicas holding it:
// (0.625 + 0.625) / 0.5 = 2.5 -> at most 3. Demand asks ceil(1.25) = 2;
// the largest is 3.
//
// A backlog stuck on the replica that held it: 8 replicas, 12 running (at
// most floor(12/10) = 1 full batch: one replica holds the queue), 800
// waiting, TTFT p95 60 s. ttft alone asks ceil(60/2 × 8) = 240; the queue
// within the target would allow (0.625 + 800 × 0.15625 / 2) / 0.5 =
// 126.25, the max; the holder bounds it to (0.625 + min(62.5, 1)) / 0.5 =
// 3.25 -> 4. The queue sits on 1 of the 8 ready replicas, which the
// others cannot take: not held at the current 8, the decision is 4.
func TestLatencyCap(t *testing.T) {
	p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}, {Signal: SignalTTFT, Target: 2}}, Min: 1, Max: 10,
		Lookahead: 30 * time.Second, Capacity: testCapacity})
	o := demandObs(2, 4)
	o.Running, o.Waiting, o.TTFT = 20, 8, 6
	d := Decide(p, o, nil, at(0))
	expect(t, d, 3, ReasonGuard)
	// ttft's plain 6 capped by the capacity at 3; demand's 2.
	if r, s := d.Raw[1], d.Steps[1]; r.Signal != SignalTTFT || r.Replicas != 6 || r.Desired != 3 || s.Reason != ReasonGuard || s.Value != 3 || d.Raw[0].Desired != 2 {
		t.Errorf("raw %+v, step %+v: want ttft's 6 capped at 3 (demand 2)\n%s", d.Raw, s, stepsText(d))
	}
	// The runaway guard off (decide --no-guard, guard: {off: true}) leaves
	// the bound by capacity: the same 3, reason guard (docs/recommend.md,
	// Reasons).
	off := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}, {Signal: SignalTTFT, Target: 2}}, Min: 1, Max: 10,
		Lookahead: 30 * time.Second, Capacity: testCapacity, Guard: &Guard{Off: true}})
	expect(t, Decide(off, o, nil, at(0)), 3, ReasonGuard)
	// Without the demand signal (no utilisation to size by) ttft is not capped.
	p2 := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalTTFT, Target: 2}}, Min: 1, Max: 10, Lookahead: 30 * time.Second, Capacity: testCapacity})
	expect(t, Decide(p2, o, nil, at(0)), 6, ReasonMetric)
	// Running unknown: who holds the queue is unknown, no bound.
	o.Running = nan
	expect(t, Decide(p, o, nil, at(0)), 6, ReasonMetric)
	// The stuck backlog: held at current.
	s := demandObs(8, 4)
	s.Running, s.Waiting, s.TTFT = 12, 800, 60
	d = Decide(p, s, nil, at(0))
	if d.Desired != 4 || !strings.Contains(stepsText(d), "the queue on 1 of the 8 ready replicas: at most 4") {
		t.Errorf("stuck backlog: desired %d, want 4 (the cap, not the current 8)\n%s", d.Desired, stepsText(d))
	}
	// The same queue over every ready replica (80 running: 8 full batches)
	// is theirs: (0.625 + min(62.5, 8)) / 0.5 = 17.25, ttft capped at 18,
	// the max 10.
	s.Running = 80
	if d = Decide(p, s, nil, at(0)); d.Desired != 10 {
		t.Errorf("queue on all 8: desired %d, want 10 (ttft capped at 18, the max 10)\n%s", d.Desired, stepsText(d))
	}
	// Counted by the source (Observation.Queued) the holders are what it
	// says, whatever the batches: the 80 running with the queue on 2
	// replicas (prefills, not full batches, hold it) allow (0.625 +
	// min(62.5, 2)) / 0.5 = 5.25 -> 6, the queue on 2 of the 8: 6.
	s.Queued = 2
	if d = Decide(p, s, nil, at(0)); d.Desired != 6 || !strings.Contains(stepsText(d), "2 replicas holding the queue: replicas with a request waiting") {
		t.Errorf("2 counted holders: desired %d, want 6\n%s", d.Desired, stepsText(d))
	}
	// A queue behind batches far from full (5 running on 2 replicas,
	// batch 10: floor(5/10) = 0) sits on a replica all the same: 1 holder,
	// (0.625 + min(8 × 0.15625 / 2, 1)) / 0.5 = 2.5 -> 3, and the step says
	// why it is 1, not the 0 that 5 / 10 rounded down reads.
	q := demandObs(2, 4)
	q.Running, q.Waiting, q.TTFT = 5, 8, 6
	d = Decide(p, q, nil, at(0))
	if want := "1 replica holding the queue: running 5 / batch 10, rounded down, at least 1)) / utilisation 0.5 = ceil(2.5) = 3, the queue on 1 of the 2 ready replicas: at most 3"; d.Desired != 3 || !strings.Contains(stepsText(d), want) {
		t.Errorf("5 running, 8 waiting: desired %d, want 3 and a step saying %q\n%s", d.Desired, want, stepsText(d))
	}
	// And a queue on every replica with batches far from full (12 running:
	// floor(12/10) = 1 by the estimate) is all 8's: (0.625 + min(62.5, 8))
	// / 0.5 = 17.25, the max 10.
	s.Running, s.Queued = 12, 8
	if d = Decide(p, s, nil, at(0)); d.Desired != 10 {
		t.Errorf("8 counted holders: desired %d, want 10\n%s", d.Desired, stepsText(d))
	}
}

// TestLatencyCapStarting: TestLatencyCap's policy with 8 replicas asked
// for, 1 ready and 7 starting; the one ready holds the whole queue (12
// running: floor(12/10) = 1 full batch; 800 waiting), TTFT p95 60 s, 4
// req/s now, 6 req/s 15 s ago and 10 req/s 45 s ago (outside the 30 s
// lookahead). ttft alone asks ceil(60/2 × 8) = 240. The queue stays on
// the ready replica; the starting ones will take arrivals only, at most
// the lookahead's highest rate, 6 req/s: (6 × 0.15625 + min(800 ×
// 0.15625 / 2, 1)) / 0.5 = (0.9375 + 1) / 0.5 = 3.875 -> 4, at least the
// 1 ready: 4, not the 8 asked (demand asks ceil(4 × 0.15625 / 0.5) = 2;
// the arrival samples reach back 45 s: no trend), which the scale-down
// window then holds as any recommendation. With nothing waiting (a
// latency from the prefill itself) the guard holds the 8; so it does while
// the arrivals rise: 2, 3, 4 req/s at -30, -15, 0 s fit a slope of 30 /
// 450 = 0.0667 req/s per s, above the policy's ramp bound (0) times its
// standard error sqrt(3/30) / sqrt(450) = 0.0149.
func TestLatencyCapStarting(t *testing.T) {
	p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}, {Signal: SignalTTFT, Target: 2}}, Min: 1, Max: 10,
		Lookahead: 30 * time.Second, Capacity: testCapacity})
	o := demandObs(8, 4)
	o.Reporting, o.Unready = 1, 7
	o.Running, o.Waiting, o.TTFT = 12, 800, 60
	st := func() *State {
		return &State{Arrivals: []DemandSample{{At: at(-45), Demand: 10}, {At: at(-15), Demand: 6}}}
	}
	d := Decide(p, o, st(), at(0))
	want := "(0.9375 busy at the lookahead's highest rate 6 req/s + min(800 waiting"
	if d.Raw[1].Desired != 4 || d.Raw[0].Desired != 2 || !strings.Contains(stepsText(d), want) || !strings.Contains(stepsText(d), "= ceil(3.875) = 4, at least the 1 ready (7 starting take arrivals only): at most 4") {
		t.Errorf("ttft %d (demand %d), want 4 (demand 2) and steps with %q\n%s", d.Raw[1].Desired, d.Raw[0].Desired, want, stepsText(d))
	}
	rising := &State{Arrivals: []DemandSample{{At: at(-30), Demand: 2}, {At: at(-15), Demand: 3}}}
	if d = Decide(p, o, rising, at(0)); d.Raw[1].Desired != 8 || !strings.Contains(stepsText(d), "current 8 (7 starting, asked for arrivals still rising): at most 8") {
		t.Errorf("arrivals rising: ttft %d, want the 8 asked for, the step saying why\n%s", d.Raw[1].Desired, stepsText(d))
	}
	o.Waiting, o.Running = 0, 10
	if d = Decide(p, o, st(), at(0)); d.Raw[1].Desired != 8 {
		t.Errorf("nothing waiting: ttft %d, want the 8 asked for\n%s", d.Raw[1].Desired, stepsText(d))
	}
}

// TestHoldPerReplica: each replica is its own rental. running:10, hold B
// = 90 s, no scale-down window, scale-up by up to 10 pods a period:
//
//	t=0   80 running on 8 -> 8 (ratio 1: the tolerance keeps 8)
//	t=15  70 -> 7: a dip from 8 (floor 7), no history: released
//	t=30  80 -> 8: it returned after 15 s; it released replica 8 only
//	t=45  10 -> 1: a dip from 8 to 1. Replica 8: cost(0) = 90, cost(15)
//	      = 15, T*(8) = 15 s > 0 s open: held. Replicas 2-7: no dip
//	      released them, T* = 0: released. 1 + 1 = 2, not the 8 a
//	      threshold for the whole fleet held.
//	t=60  10 -> open 15 s >= 15: release to 1
//
// The state has decided before (its first decision was not at this fleet:
// no inherited replicas, TestHoldInherited).
func TestHoldPerReplica(t *testing.T) {
	p := holdPolicy(t, 90*time.Second, func(p *Policy) { p.Behavior.ScaleUp = rules(int32(0), "Max", pods(10, 15)) })
	obs := runObs
	st := State{LastDesired: 8, LastAt: at(-15)}
	expect(t, Decide(p, obs(8, 80), &st, at(0)), 8, ReasonTolerance)
	expect(t, Decide(p, obs(8, 70), &st, at(15)), 7, ReasonMetric)
	expect(t, Decide(p, obs(7, 80), &st, at(30)), 8, ReasonMetric)
	if len(st.Dips) != 1 || st.Dips[0].From != 8 || st.Dips[0].Floor != 7 || st.Dips[0].Back != 8 {
		t.Fatalf("dips %+v, want one from 8 to 7, back to 8", st.Dips)
	}
	d := Decide(p, obs(8, 10), &st, at(45))
	expect(t, d, 2, ReasonHold)
	if !strings.Contains(stepsText(d), "hold 1 of the 7 replicas it released (1 + 1 = 2)") {
		t.Errorf("steps:\n%s", stepsText(d))
	}
	expect(t, Decide(p, obs(2, 10), &st, at(60)), 1, ReasonMetric)
}

// TestHoldInherited: the fleet a state's first decision finds is held for
// the break-even until a dip has released it (ski-rental with no history).
// running:10, B = 90 s, no scale-down window, scale-up by up to 10 pods a
// period, the first decision at 8 replicas:
//
//	t=0    80 running on 8 -> 8; Inherited = 8
//	t=15   10 -> 1: a dip from 8 opens; replicas 2-8 were inherited and no
//	       dip released them: T* = B = 90 s > 0 s open: hold 8
//	t=90   10 -> open 75 s < 90: hold 8
//	t=105  10 -> open 90 s >= 90: release to 1
//	t=120  80 on 1 -> 8 (scale-up 1 + 10 pods >= 8): the dip returns
//	       after 105 s, Back 8, recorded
//	t=135  10 -> 1: replicas 2-8 were released once and wanted back after
//	       105 s: cost(0) = 0 + 90 = 90 < cost(105) = 105, T* = 0:
//	       released at once, as with any history
func TestHoldInherited(t *testing.T) {
	p := holdPolicy(t, 90*time.Second, func(p *Policy) { p.Behavior.ScaleUp = rules(int32(0), "Max", pods(10, 15)) })
	obs := runObs
	var st State
	expect(t, Decide(p, obs(8, 80), &st, at(0)), 8, ReasonTolerance)
	if st.Inherited != 8 {
		t.Fatalf("inherited %d, want the first decision's 8", st.Inherited)
	}
	d := Decide(p, obs(8, 10), &st, at(15))
	expect(t, d, 8, ReasonHold)
	if !strings.Contains(stepsText(d), "none released replica 8, one of the 8 the first decision found (no history prices it); break-even 1m30s, its threshold T* = the break-even 90 s; dip from 8 open 0 s < 90 s") {
		t.Errorf("steps:\n%s", stepsText(d))
	}
	expect(t, Decide(p, obs(8, 10), &st, at(90)), 8, ReasonHold)
	expect(t, Decide(p, obs(8, 10), &st, at(105)), 1, ReasonMetric)
	expect(t, Decide(p, obs(1, 80), &st, at(120)), 8, ReasonMetric)
	if len(st.Dips) != 1 || st.Dips[0].Seconds != 105 || st.Dips[0].Back != 8 {
		t.Fatalf("dips %+v, want one of 105 s, back to 8", st.Dips)
	}
	expect(t, Decide(p, obs(8, 10), &st, at(135)), 1, ReasonMetric)
	if err := st.Validate(); err != nil {
		t.Errorf("state: %v", err)
	}
	if err := (&State{Inherited: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "inherited: -1 must be in 0..") {
		t.Errorf("a negative inherited count: %v, want an inherited error", err)
	}
}

// TestHoldInheritedPartialReturn: a return below the dip's start wants
// back the replicas it reaches and leaves the others released. running:10,
// B = 90 s, no scale-down window:
//
//	t=0   30 running on 3 -> 3: the first decision, 3 inherited
//	t=15   5 running      -> 1: a dip from 3 (floor 1); inherited, T* = B: hold 3
//	t=30  20 running      -> 2: replica 2 is wanted back after 15 s (recorded:
//	      15 s, From 2, Floor 1); replica 3's release stays open from 15 s.
//	      No recorded dip released replica 3, one of the inherited 3:
//	      T* = 90 s > 15 s open, hold 3
//	t=45  30 running      -> 3: replica 3 is wanted back after 30 s (recorded:
//	      30 s, From 3, Floor 2)
//
// Read as one return at 30 s wanting back only replica 2, replica 3 would
// be priced as not wanted (T* = 0) and released.
func TestHoldInheritedPartialReturn(t *testing.T) {
	p, obs := holdPolicy(t, 90*time.Second, nil), runObs
	var st State
	expect(t, Decide(p, obs(3, 30), &st, at(0)), 3, ReasonTolerance)
	expect(t, Decide(p, obs(3, 5), &st, at(15)), 3, ReasonHold)
	d := Decide(p, obs(3, 20), &st, at(30))
	expect(t, d, 3, ReasonHold)
	if !strings.Contains(stepsText(d), "1 dips recorded, none released replica 3, one of the 3 the first decision found (no history prices it); break-even 1m30s, its threshold T* = the break-even 90 s; dip from 3 open 15 s < 90 s: hold 1 of the 1 replicas it released (2 + 1 = 3)") {
		t.Errorf("steps:\n%s", stepsText(d))
	}
	expect(t, Decide(p, obs(3, 30), &st, at(45)), 3, ReasonTolerance)
	want := []Dip{{At: at(15), Seconds: 15, Returned: true, Back: 2, From: 2, Floor: 1},
		{At: at(15), Seconds: 30, Returned: true, Back: 3, From: 3, Floor: 2}}
	if len(st.Dips) != 2 || st.Dips[0] != want[0] || st.Dips[1] != want[1] || st.OpenDip != nil {
		t.Fatalf("dips %+v (open %+v), want %+v and none open", st.Dips, st.OpenDip, want)
	}
	if err := st.Validate(); err != nil {
		t.Errorf("state: %v", err)
	}
}

// TestHoldMissedReturn: a release the returning traffic missed on is not
// priced in replica time. running:10 with a ttft:2 guard, no scale-down
// window, break-even 90 s. Each 15 s decision:
//
//	t=0    30 running on 1 -> 3
//	t=15   5 running       -> 1: a dip from 3 opens; no history: release
//	t=120  30 running      -> 3: the dip returned after 105 s
//	t=135  TTFT 5 s > 2 s, within the watch (a 90 s lookahead) after the
//	       return: the dip is marked Missed
//
// In replica time alone the dip says release at once: cost(0) = 90 (the
// break-even) < cost(105) = 105 held through. Missed, T* is its length:
// at t=150 a new dip from 3 opens (5 running) and at t=240 (open 90 s <
// 105) the hold still keeps 3; at t=255 (105 s) it releases to 1.
func TestHoldMissedReturn(t *testing.T) {
	p, obs := missedReturnPolicy(t)
	var st State
	Decide(p, obs(1, 30, 0.1), &st, at(0))
	expect(t, Decide(p, obs(3, 5, 0.1), &st, at(15)), 1, ReasonMetric)
	Decide(p, obs(1, 30, 0.1), &st, at(120))
	if len(st.Dips) != 1 || st.Dips[0].Seconds != 105 || st.Dips[0].Missed {
		t.Fatalf("dips %+v, want one returned after 105 s, not yet missed", st.Dips)
	}
	if T, _, _, _, _ := p.Hold.threshold(st.Dips, 3); T != 0 {
		t.Errorf("before the misses T* = %g, want 0 (release: 90 < 105)", T)
	}
	Decide(p, obs(3, 30, 5), &st, at(135))
	if !st.Dips[0].Missed {
		t.Fatalf("dips %+v, want the return's TTFT of 5 s to mark it missed", st.Dips)
	}
	if T, _, _, _, _ := p.Hold.threshold(st.Dips, 3); T != 105 {
		t.Errorf("after the misses T* = %g, want 105", T)
	}
	Decide(p, obs(3, 5, 0.1), &st, at(150))
	expect(t, Decide(p, obs(3, 5, 0.1), &st, at(240)), 3, ReasonHold)
	expect(t, Decide(p, obs(3, 5, 0.1), &st, at(255)), 1, ReasonMetric)
	if err := st.Validate(); err != nil {
		t.Errorf("state: %v", err)
	}
}

// TestHoldRuns: the hold counts the replicas whose T*(k) is above the age
// of k's release in the open dip (from its first low below k) run by run (T* changes only at the dips' Floor, From and
// Back); the count is the one replica-by-replica counting gives, on random
// histories, and a dip from 2,000,000,000 is a few runs, not two billion
// thresholds.
func TestHoldRuns(t *testing.T) {
	h := &Hold{BreakEven: 100 * time.Second}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		var st State
		for i := range 1 + rng.IntN(8) {
			from := 2 + rng.IntN(20)
			floor := rng.IntN(from)
			d := Dip{At: at(int64(i * 1000)), Seconds: float64(10 + rng.IntN(400)), From: from, Floor: floor}
			if rng.IntN(3) > 0 {
				d.Returned, d.Back = true, floor+1+rng.IntN(from-floor)
			}
			st.Dips = append(st.Dips, d)
		}
		from, out := 2+rng.IntN(25), 0
		out = rng.IntN(from)
		open := at(20000)
		age := float64(rng.IntN(450))
		st.OpenDip = &OpenDip{At: open, From: from, Floor: out}
		// Lows at random: each below the one before, down to out, within
		// the dip's age; replica k ages from the first low below it.
		since := func(int) float64 { return age }
		if n := rng.IntN(4); n > 0 && from-out > 1 {
			fl, t := out+1+rng.IntN(from-out-1), 0.0
			var lows []DipLow
			for len(lows) < n && fl > out {
				lows = append(lows, DipLow{At: open.Add(time.Duration(t) * time.Second), Floor: fl})
				t += float64(rng.IntN(1 + int(age-t)))
				fl = out + rng.IntN(fl-out)
			}
			lows = append(lows, DipLow{At: open.Add(time.Duration(t) * time.Second), Floor: out})
			st.OpenDip.Lows = lows
			since = func(k int) float64 {
				for _, l := range lows {
					if l.Floor < k {
						return age - l.At.Sub(open).Seconds()
					}
				}
				return age
			}
		}
		want := out
		for k := from; k > out; k-- {
			if T, _, _, _, _ := h.threshold(st.Dips, k); since(k) < T {
				want++
			}
		}
		// rec = out and base = from keep the open dip open.
		got, _ := h.apply(&st, out, from, out, open.Add(time.Duration(age)*time.Second), 0, false, true)
		if got != want {
			t.Fatalf("trial %d: held %d, replica by replica %d (dips %+v, open from %d to %d, age %g, lows %+v)", trial, got, want, st.Dips, from, out, age, st.OpenDip.Lows)
		}
	}
	st := State{Dips: []Dip{{At: at(0), Seconds: 50, Returned: true, Back: 2_000_000_000, From: 2_000_000_000, Floor: 1}},
		OpenDip: &OpenDip{At: at(1000), From: 2_000_000_000, Floor: 1}}
	if got, _ := h.apply(&st, 1, 2_000_000_000, 1, at(1010), 0, false, true); got != 2_000_000_000 {
		t.Errorf("a dip from 2e9 open 10 s under T* = 50 s: held %d, want all 2000000000", got)
	}
}

// TestHoldLowsAndWatch works docs/recommend.md's example ("A dip's lows
// and a return a replica at a time") by hand. running:10, hold B = 120 s,
// no scale-down window:
//
//	t=0    30 running on 1 -> 3
//	t=15   15 running      -> 2: a dip from 3 opens (low 2 at 15); no history: release
//	t=30   15, t=45 15     -> 2
//	t=60   5 running       -> 1: a new low, 1 at 60 (replica 2 released from here)
//	t=75   20 running      -> 2: replica 2 is wanted back, 15 s after its release at
//	       60 (recorded: 15 s, From 2, Floor 1); replica 3 stays released
//	t=90   30 running      -> 3: replica 3 is wanted back, 75 s after its release
//	       at 15 (recorded: 75 s, From 3, Floor 2)
//
// T*(3) over its dip (back after 75 s): cost(0) = 120 against cost(75) =
// 75, T* = 75. T*(2) over its own (15 s): 15. Then a dip from 3 to 2 at
// 105 and to 1 at 120: replica 3 is held until 105 + 75 = 180, replica 2
// until 120 + 15 = 135:
//
//	t=105  -> 3 (both held)   t=120 -> 3   t=135 -> 2 (replica 2 released)
//	t=150, t=165 -> 2         t=180 -> 1
//
// One dip from 3 to 1 read at its first rise (2 at 75 s) would have said
// replica 3 was not wanted back: T*(3) = 0, released at 105.
func TestHoldLowsAndWatch(t *testing.T) {
	p, obs := holdPolicy(t, 120*time.Second, nil), runObs
	var st State
	expect(t, Decide(p, obs(1, 30), &st, at(0)), 3, ReasonMetric)
	expect(t, Decide(p, obs(3, 15), &st, at(15)), 2, ReasonMetric)
	expect(t, Decide(p, obs(2, 15), &st, at(30)), 2, ReasonMetric)
	expect(t, Decide(p, obs(2, 15), &st, at(45)), 2, ReasonMetric)
	expect(t, Decide(p, obs(2, 5), &st, at(60)), 1, ReasonMetric)
	if d := st.OpenDip; d == nil || len(d.Lows) != 2 || !d.Lows[1].At.Equal(at(60)) || d.Lows[1].Floor != 1 || d.Floor != 1 {
		t.Fatalf("open dip %+v, want lows 2 at 15 and 1 at 60", st.OpenDip)
	}
	if err := st.Validate(); err != nil {
		t.Errorf("state with an open dip's lows: %v", err)
	}
	expect(t, Decide(p, obs(1, 20), &st, at(75)), 2, ReasonMetric)
	want := []Dip{{At: at(60), Seconds: 15, Returned: true, Back: 2, From: 2, Floor: 1},
		{At: at(15), Seconds: 75, Returned: true, Back: 3, From: 3, Floor: 2}}
	if d := st.OpenDip; len(st.Dips) != 1 || st.Dips[0] != want[0] || d == nil || d.From != 3 || d.Floor != 2 || !d.At.Equal(at(15)) || len(d.Lows) != 1 || d.Lows[0] != (DipLow{At: at(15), Floor: 2}) {
		t.Fatalf("dips %+v, open %+v; want %+v and replica 3's release open from 15 s", st.Dips, st.OpenDip, want[0])
	}
	expect(t, Decide(p, obs(2, 30), &st, at(90)), 3, ReasonMetric)
	if len(st.Dips) != 2 || st.Dips[0] != want[0] || st.Dips[1] != want[1] || st.OpenDip != nil {
		t.Fatalf("dips %+v (open %+v), want %+v", st.Dips, st.OpenDip, want)
	}
	for _, c := range []struct {
		k int
		T float64
	}{{3, 75}, {2, 15}} {
		if T, _, _, _, _ := p.Hold.threshold(st.Dips, c.k); T != c.T {
			t.Errorf("T*(%d) = %g, want %g", c.k, T, c.T)
		}
	}
	expect(t, Decide(p, obs(3, 15), &st, at(105)), 3, ReasonHold)
	expect(t, Decide(p, obs(3, 5), &st, at(120)), 3, ReasonHold)
	expect(t, Decide(p, obs(3, 5), &st, at(135)), 2, ReasonHold)
	expect(t, Decide(p, obs(2, 5), &st, at(150)), 2, ReasonHold)
	expect(t, Decide(p, obs(2, 5), &st, at(165)), 2, ReasonHold)
	expect(t, Decide(p, obs(2, 5), &st, at(180)), 1, ReasonMetric)
	if err := st.Validate(); err != nil {
		t.Errorf("state: %v", err)
	}
	bad := State{LastAt: at(200), OpenDip: &OpenDip{At: at(100), From: 3, Floor: 1, Lows: []DipLow{{At: at(100), Floor: 1}, {At: at(110), Floor: 2}}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "open_dip.lows[1].floor") {
		t.Errorf("a low above the one before: %v, want an open_dip.lows[1].floor error", err)
	}
}

// holdPolicy is the hold tests' policy: running:10 on 1..10 replicas, no
// scale-down window (all at once each 15 s) and the hold at breakEven;
// edit adjusts it before it is validated.
func holdPolicy(t *testing.T, breakEven time.Duration, edit func(*Policy)) *Policy {
	t.Helper()
	p := &Policy{Metrics: []Metric{{Signal: SignalRunning, Target: 10}}, Min: 1, Max: 10, Hold: &Hold{BreakEven: breakEven}}
	p.Behavior.ScaleDown = rules(int32(0), "Max", percent(100, 15))
	if edit != nil {
		edit(p)
	}
	mustValidate(t, p)
	return p
}

// runObs observes cur replicas and running requests (nothing else known).
func runObs(cur int, running float64) Observation {
	return Observation{Current: cur, Running: running, Waiting: nan, Held: nan, KV: nan, CPU: nan, TTFT: nan}
}

// TestHoldMissedPartialReturn: replicas a return did not reach stay
// released until the recommendation reaches them, and a miss then marks
// them. running:10, B = 90 s, lookahead (the return's watch) 90 s: a dip
// from 4 to 1 at 15 s rises to 2 at 120 s (a trickle before the traffic):
// replica 2 is wanted back after 105 s, replicas 3 and 4 stay released.
// At 165 s, 40 running on 2 replicas with a TTFT of 5 s against 2 s ask
// for 4 or more: replicas 3-4 are wanted back after 150 s, and missed;
// the read is within the watch of the return at 120 s, which is missed
// too. cost_4(0) = 90 < cost_4(150) = 150, but a missed return holds at
// least its length: T*(4) = 150; T*(2) = 105 likewise.
func TestHoldMissedPartialReturn(t *testing.T) {
	p, obs := missedReturnPolicy(t)
	var st State
	expect(t, Decide(p, obs(1, 40, 0.1), &st, at(0)), 4, ReasonMetric)
	expect(t, Decide(p, obs(4, 5, 0.1), &st, at(15)), 1, ReasonMetric)
	Decide(p, obs(1, 15, 0.1), &st, at(120))
	Decide(p, obs(2, 20, 0.1), &st, at(135))
	first := Dip{At: at(15), Seconds: 105, Returned: true, Back: 2, From: 2, Floor: 1}
	if len(st.Dips) != 1 || st.Dips[0] != first || st.OpenDip == nil || st.OpenDip.Floor != 2 || st.OpenDip.From != 4 {
		t.Fatalf("dips %+v, open %+v; want %+v and replicas 3-4 released from 15 s", st.Dips, st.OpenDip, first)
	}
	Decide(p, obs(2, 40, 5), &st, at(165))
	first.Missed = true
	want := []Dip{first, {At: at(15), Seconds: 150, Returned: true, Back: 4, From: 4, Floor: 2, Missed: true}}
	if len(st.Dips) != 2 || st.Dips[0] != want[0] || st.Dips[1] != want[1] || st.OpenDip != nil {
		t.Fatalf("dips %+v (open %+v), want %+v", st.Dips, st.OpenDip, want)
	}
	for _, c := range []struct {
		k int
		T float64
	}{{4, 150}, {3, 150}, {2, 105}} {
		if T, _, _, _, _ := p.Hold.threshold(st.Dips, c.k); T != c.T {
			t.Errorf("T*(%d) = %g, want %g", c.k, T, c.T)
		}
	}
	// A read above the target after the watch (90 s from the return at
	// 165 s) is not this return's: Missed stays as it is.
	st.Dips[0].Missed, st.Dips[1].Missed = false, false
	Decide(p, obs(4, 80, 5), &st, at(270))
	if st.Dips[0].Missed || st.Dips[1].Missed {
		t.Errorf("dips %+v after the watch, want neither missed", st.Dips)
	}
	if err := st.Validate(); err != nil {
		t.Errorf("state: %v", err)
	}
}

// missedReturnPolicy is the missed-return tests' policy (running:10 and
// ttft:2, B = 90 s, lookahead 90 s, no scale-down window) and their
// observation of the current count, running and TTFT alone.
func missedReturnPolicy(t *testing.T) (*Policy, func(cur int, running, ttft float64) Observation) {
	t.Helper()
	zero := int32(0)
	p := &Policy{Metrics: []Metric{{Signal: SignalRunning, Target: 10}, {Signal: SignalTTFT, Target: 2}}, Min: 1, Max: 10,
		Hold: &Hold{BreakEven: 90 * time.Second}, Lookahead: 90 * time.Second}
	p.Behavior.ScaleDown = rules(zero, "Max", percent(100, 15))
	mustValidate(t, p)
	return p, func(cur int, running, ttft float64) Observation {
		return Observation{Current: cur, Running: running, Waiting: 0, Held: nan, KV: nan, CPU: nan, TTFT: ttft, ArrivalRate: nan, MeanPrompt: nan, MeanOutput: nan, QueueTime: nan}
	}
}

// TestFirstDecisionZeroWindows: the first decision records the current
// count at now (recordInitialRecommendation); a window excludes its start,
// so with both windows 0 s the entry is in neither, and the step must not
// say it is (docs/recommend.md, "The first decision").
func TestFirstDecisionZeroWindows(t *testing.T) {
	p := holdPolicy(t, 90*time.Second, nil) // scaleUp and scaleDown windows 0 s
	var st State
	d := Decide(p, runObs(8, 80), &st, at(0))
	txt := stepsText(d)
	if strings.Contains(txt, "the windows include the current 8") || !strings.Contains(txt, "the current 8, recorded at this first decision as the HPA's recordInitialRecommendation does, is outside both 0s windows (a window excludes its start)") {
		t.Errorf("steps:\n%s", txt)
	}
	p.Behavior.ScaleDown.StabilizationWindowSeconds = ptr(int32(20))
	mustValidate(t, p)
	st = State{}
	if txt := stepsText(Decide(p, runObs(8, 80), &st, at(0))); !strings.Contains(txt, "(the windows include the current 8, recorded at this first decision as the HPA's recordInitialRecommendation does)") {
		t.Errorf("with a 20 s scaleDown window, steps:\n%s", txt)
	}
}

// TestHoldTextLowAge: the step says how long the dip has been open and,
// when the replica it explains was released at a later low, how long ago
// that was: "dip from 8 open 0 s" read as a dip that had just opened.
// running:10, B = 182 s, 8 inherited replicas (the docs' 8 -> 1 -> 3 -> 5
// -> 8 climb, then again):
//
//	t=15..60   1, 3, 5, 8: replicas 2-3 back after 15 s, 4-5 after 30 s,
//	           6-8 after 45 s (all released at 15)
//	t=75..120  1: a dip from 8 opens at 75
//	t=135      3: replicas 2-3 back after 60 s; 4-8 stay released
//	t=150      1: a new low, replicas 2-3 released again at 150
//
// T*(3) over (15 s, 60 s): cost(0) = 364, cost(15) = 15 + 15 + 182 = 212,
// cost(60) = 15 + 60 = 75: 60 s; replica 3's release is 0 s old: held,
// and replica 2 with it (the same dips); 4-5 (T* 30 s) and 6-8 (45 s)
// were released at 75, 75 s ago: 1 + 2 = 3.
func TestHoldTextLowAge(t *testing.T) {
	p := holdPolicy(t, 182*time.Second, nil)
	var st State
	cur := 8
	var d Decision
	for i, running := range []float64{80, 10, 30, 50, 80, 10, 10, 10, 10, 30, 10} {
		d = Decide(p, runObs(cur, running), &st, at(int64(15*i)))
		cur = d.Desired
	}
	expect(t, d, 3, ReasonHold)
	if want := "dip from 8 open 75 s, replica 3 released 0 s ago < 60 s: hold 2 of the 7 replicas it released (1 + 2 = 3)"; !strings.Contains(stepsText(d), want) {
		t.Errorf("steps:\n%s\nwant %q", stepsText(d), want)
	}
}

// TestLatencyCapBelowTarget: a latency guard below its target, outside the
// tolerance, is bounded by the capacity too, so a quantile that reads
// high for want of buckets does not hold the fleet. vLLM's queue-time
// histogram starts at le=0.3: any waits all under 0.3 s read p95 = 0.3 ×
// 0.95 = 0.285 s. On 3 replicas at 0.4 req/s (testCapacity: 0.15625
// replica-s a request, 0.0625 busy): demand:0.5 asks ceil(0.0625 / 0.5) =
// 1; ttft 0.3 s / 2 s = 0.15 × 3 = 0.45, 1; queuewait 0.285 / 0.4 =
// 0.7125, outside [0.9, 1.1], × 3 = 2.1375, 3: the current count, held
// whatever the load. Capped: (0.0625 + min(0 waiting, 0)) / 0.5 = 0.125,
// at least 1: the decision is 1. On 4 the same ratio asks ceil(2.85) = 3,
// capped to 1. At 0.38 s (0.95, within the tolerance) the latency is at
// its target and keeps 3; without the demand signal the HPA's rule holds
// 3 (docs/recommend.md, "Latency guards sized by capacity").
func TestLatencyCapBelowTarget(t *testing.T) {
	p := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalDemand, Target: 0.5}, {Signal: SignalTTFT, Target: 2}, {Signal: SignalQueueWait, Target: 0.4}},
		Min: 1, Max: 10, Lookahead: 30 * time.Second, Capacity: testCapacity})
	obs := func(cur int, qt float64) Observation {
		o := demandObs(cur, 0.4)
		o.Running, o.Waiting, o.TTFT, o.QueueTime = 1, 0, 0.3, qt
		return o
	}
	d := Decide(p, obs(3, 0.285), nil, at(0))
	if r := d.Raw[2]; d.Desired != 1 || r.Signal != SignalQueueWait || r.Replicas != 3 || r.Desired != 1 ||
		!strings.Contains(stepsText(d), "below its target the latency does not size a scale-down: at most 1") {
		t.Errorf("3 replicas, queuewait 0.285 s: desired %d (queuewait %+v), want 1 (its 3 capped at 1)\n%s", d.Desired, r, stepsText(d))
	}
	if d = Decide(p, obs(4, 0.285), nil, at(0)); d.Desired != 1 || d.Raw[2].Replicas != 3 || d.Raw[2].Desired != 1 {
		t.Errorf("4 replicas: desired %d (queuewait %+v), want 1", d.Desired, d.Raw[2])
	}
	// 25 running (2 full batches of testCapacity's 10) and none waiting:
	// no replica holds a queue, and the text says so rather than "0
	// replicas holding the queue: running 25 / batch 10, rounded down"
	// (2).
	o := obs(3, 0.285)
	o.Running = 25
	if d = Decide(p, o, nil, at(0)); d.Raw[2].Desired != 1 || !strings.Contains(stepsText(d), "0 replicas holding the queue: none waiting)) / utilisation 0.5") {
		t.Errorf("25 running, none waiting: queuewait %+v\n%s\nwant its 3 capped at 1, the holders said as none waiting", d.Raw[2], stepsText(d))
	}
	if d = Decide(p, obs(3, 0.38), nil, at(0)); d.Desired != 3 || d.Raw[2].Desired != 3 {
		t.Errorf("queuewait 0.38 s (0.95, within the tolerance): desired %d, want 3 kept\n%s", d.Desired, stepsText(d))
	}
	plain := mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalQueueWait, Target: 0.4}}, Min: 1, Max: 10})
	if d = Decide(plain, obs(3, 0.285), nil, at(0)); d.Desired != 3 {
		t.Errorf("queuewait alone: desired %d, want the HPA's ceil(0.7125 × 3) = 3\n%s", d.Desired, stepsText(d))
	}
}
