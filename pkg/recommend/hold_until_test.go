package recommend

import (
	"strings"
	"testing"
	"time"
)

// TestHoldSaysUntilWhen: a hold step says how long the replica it explains
// stays held (T* − the age of its release), as the stabilisation step says
// when its holder leaves the window. running:10, B = 90 s, no scale-down
// window, the first decision at 1:
//
//	t=0    10 running -> 1; t=15 30 -> 3; t=30 10 -> 1: a dip from 3, no
//	       history, T* = 0: released at once
//	t=70   30 -> 3: the dip recorded, 40 s (wanted 2 and 3 back)
//	t=85   10 -> 1: T*(2) = T*(3) = 40 s (cost 40 against 90): hold 3,
//	       replica 3 40 − 0 = 40 s more
//	t=100  20 -> 2: replica 2 wanted back after 15 s (recorded); replica 3's
//	       release stays open from 85 s: 15 s old, 40 − 15 = 25 s more
//	t=115  10 -> 1: replica 3 (released at 85) 30 s old: 10 s more
//	t=130  10 -> 1: replica 3 released (45 s >= 40 s); replica 2 released at
//	       115, 15 s old, T*(2) = 40 s (dips of 40 and 15 s: cost 55 against
//	       180): 25 s more, output 2
//
// Inherited (B = 182 s, first decision at 4, 40 running): 10 running at 55 s
// asks for 1, a dip from 4 opens; replica 4 inherited, T* = B = 182 s; at
// 110 s its release is 55 s old: 182 − 55 = 127 s = 2m7s more.
func TestHoldSaysUntilWhen(t *testing.T) {
	p, obs := holdPolicy(t, 90*time.Second, nil), runObs
	var st State
	for _, tc := range []struct {
		at      int64
		running float64
		desired int
		reason  Reason
		until   string
	}{
		{0, 10, 1, ReasonTolerance, ""},
		{15, 30, 3, ReasonMetric, ""},
		{30, 10, 1, ReasonMetric, ""},
		{70, 30, 3, ReasonMetric, ""},
		{85, 10, 3, ReasonHold, "; replica 3 held 40s more (until its release is 40 s old)"},
		{100, 20, 3, ReasonHold, "; replica 3 held 25s more (until its release is 40 s old)"},
		{115, 10, 3, ReasonHold, "; replica 3 held 10s more (until its release is 40 s old)"},
		{130, 10, 2, ReasonHold, "; replica 2 held 25s more (until its release is 40 s old)"},
	} {
		d := Decide(p, obs(max(st.LastDesired, 1), tc.running), &st, at(tc.at))
		expect(t, d, tc.desired, tc.reason)
		if tc.until == "" {
			continue
		}
		if s, ok := stepWith(d, ReasonHold, tc.desired); !ok || !strings.HasSuffix(s.Text, tc.until) {
			t.Errorf("t=%d: want a hold step ending %q\n%s", tc.at, tc.until, stepsText(d))
		}
	}

	p = holdPolicy(t, 182*time.Second, nil)
	var si State
	expect(t, Decide(p, obs(4, 40), &si, at(0)), 4, ReasonTolerance)
	expect(t, Decide(p, obs(4, 10), &si, at(55)), 4, ReasonHold)
	d := Decide(p, obs(4, 10), &si, at(110))
	expect(t, d, 4, ReasonHold)
	want := "dip from 4 open 55 s < 182 s: hold 3 of the 3 replicas it released (1 + 3 = 4); replica 4 held 2m7s more (until its release is 182 s old)"
	if s, ok := stepWith(d, ReasonHold, 4); !ok || !strings.HasSuffix(s.Text, want) {
		t.Errorf("inherited: want a hold step ending %q\n%s", want, stepsText(d))
	}
}
