package recommend

import (
	"strings"
	"testing"
	"time"
)

// TestHoldStepListsItsDips: the hold step lists what each recorded dip
// that released the held replica adds to cost_k(T), so T* recomputes by
// hand. B = 182 s; four dips released replica 8 (from 8): back after
// 245 s; back after 30 s, missed; never back in 1820 s (10 × B); back
// only to 7. cost(T) = (245 if T >= 245 else T + 182) + (30 if T >= 30
// else T + 182) + min(T, 1820) + T:
//
//	cost(0)   = 182 + 182 + 0 + 0         = 364
//	cost(30)  = 212 + 30 + 30 + 30        = 302
//	cost(245) = 245 + 30 + 245 + 245      = 765
//
// T* = 30 (at least the missed dip's 30 s); the new dip from 8 to 7, open
// 0 s < 30 s, holds replica 8 for 30 s.
func TestHoldStepListsItsDips(t *testing.T) {
	p := holdPolicy(t, 182*time.Second, func(p *Policy) { p.Guard = &Guard{Off: true} })
	st := State{LastDesired: 8, LastAt: at(9985), Dips: []Dip{
		{At: at(1000), Seconds: 245, Returned: true, Back: 8, From: 8, Floor: 7},
		{At: at(2000), Seconds: 30, Returned: true, Back: 8, From: 8, Floor: 7, Missed: true},
		{At: at(3000), Seconds: 1820, From: 8, Floor: 7},
		{At: at(6000), Seconds: 50, Returned: true, Back: 7, From: 8, Floor: 6},
	}}
	d := Decide(p, Observation{Current: 8, Running: 70, Waiting: 0, Held: nan, KV: nan, CPU: nan, TTFT: nan}, &st, at(10000))
	expect(t, d, 8, ReasonHold)
	want := "hold: 4 dips recorded, 4 released replica 8 (2 wanted it again: back after 245 s, back after 30 s, missed, never back in 1820 s, back below 8), " +
		"break-even 3m2s; its threshold T* = 30 s (cost over the history 302 s against 364 s releasing at once); dip from 8 open 0 s < 30 s: hold 1 of the 1 replicas it released (7 + 1 = 8)"
	if !strings.Contains(stepsText(d), want) {
		t.Errorf("want a step saying\n  %s\n%s", want, stepsText(d))
	}
}

// TestHoldStepDocExample is docs/recommend.md's worked example of the
// hold: B = 180 s, dips from 3 to 1 back after 40, 50 and 60 s and one
// never back (10 × B = 1800 s): cost(60) = 40 + 50 + 60 + 60 = 210 against
// cost(0) = 3 × 180 = 540; a dip from 3 to 1 open 45 s < 60 s holds 3,
// replica 3 for 15 s more.
func TestHoldStepDocExample(t *testing.T) {
	p := holdPolicy(t, 180*time.Second, func(p *Policy) { p.Guard = &Guard{Off: true} })
	st := State{LastDesired: 3, LastAt: at(9985), Dips: []Dip{
		{At: at(0), Seconds: 40, Returned: true, Back: 3, From: 3, Floor: 1},
		{At: at(100), Seconds: 50, Returned: true, Back: 3, From: 3, Floor: 1},
		{At: at(200), Seconds: 60, Returned: true, Back: 3, From: 3, Floor: 1},
		{At: at(300), Seconds: 1800, From: 3, Floor: 1},
	}, OpenDip: &OpenDip{At: at(9955), From: 3, Floor: 1}}
	d := Decide(p, Observation{Current: 3, Running: 5, Held: nan, KV: nan, CPU: nan, TTFT: nan}, &st, at(10000))
	expect(t, d, 3, ReasonHold)
	want := "hold: 4 dips recorded, 4 released replica 3 (3 wanted it again: back after 40 s, back after 50 s, back after 60 s, never back in 1800 s), " +
		"break-even 3m0s; its threshold T* = 60 s (cost over the history 210 s against 540 s releasing at once); dip from 3 open 45 s < 60 s: " +
		"hold 2 of the 2 replicas it released (1 + 2 = 3); replica 3 held 15s more (until its release is 60 s old)"
	if !strings.Contains(stepsText(d), want) {
		t.Errorf("want a step saying\n  %s\n%s", want, stepsText(d))
	}
}
