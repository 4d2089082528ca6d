package recommend

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// TestDeciderHeldZeroAt: State.HeldZeroAt is the time of the first
// decision of a stay at zero that read current 0 (read) and held 0, kept
// while the decisions after it read the pool at zero or not at all with
// held not above 0, cleared by a current read above 0 or held above 0. No decision value depends on it.
// Cooldown 120 s, queue 4 a replica, min 0 (TestLoopNoDataHeldIsActivity's
// policy).
func TestDeciderHeldZeroAt(t *testing.T) {
	p := queuePolicy(4)
	p.Min, p.Zero = 0, &Zero{Cooldown: 120 * time.Second}
	mustValidate(t, p)
	read := func(cur int, known bool, load, held float64) Reading {
		return Reading{Obs: Observation{Current: cur, Running: load, Waiting: load, Held: held, KV: math.NaN(), CPU: math.NaN(), TTFT: math.NaN()}, CurrentKnown: known}
	}
	nan := math.NaN()
	var l Decider
	for _, c := range []struct {
		s      int64
		r      Reading
		want   int64 // HeldZeroAt, s; 0: none
		why    string
		desire int
	}{
		// 1 replica idle, held 0: not at zero, none. Desired 1 (the
		// cooldown of 120 s runs from this first idle read).
		{2000, read(1, true, 0, 0), 0, "current 1", 1},
		// 2130: idle 130 s >= 120 s: to zero (idle-to-zero); current 1 read: none.
		{2130, read(1, true, 0, 0), 0, "current 1 read, going to zero", 0},
		// 2145: at zero, held known 0: set at 2145.
		{2145, read(0, true, 0, 0), 2145, "current 0, held 0", 0},
		// 2160: at zero, held 0 again: kept, 2145.
		{2160, read(0, true, 0, 0), 2145, "current 0, held 0 again", 0},
		// 2175: at zero, held unknown (the queue series gone): kept; the
		// decision holds the last desired 0 (no data).
		{2175, read(0, true, nan, nan), 2145, "held unknown at zero", 0},
		// 2190: current not read, held unknown: kept.
		{2190, read(0, false, nan, nan), 2145, "current not read", 0},
		// 2205: at zero, 3 held: activate 1 (ceil(3/4)); cleared.
		{2205, read(0, true, 0, 3), 0, "held 3", 1},
		// 2220: still at zero, held 0 (the request gone before a replica
		// came): no replica to keep, 0; set at 2220. 2235: 1 replica
		// read, idle 30 s since 2205 < 120 s: kept (cooldown); cleared.
		{2220, read(0, true, 0, 0), 2220, "current 0, held 0", 0},
		{2235, read(1, true, 0, 0), 0, "current 1", 1},
	} {
		var d Decision
		if ok, _ := l.Decide(&d, p, c.r, at(c.s)); !ok {
			t.Fatalf("t=%d: not decided", c.s)
		}
		want := time.Time{}
		if c.want != 0 {
			want = at(c.want)
		}
		if !l.State.HeldZeroAt.Equal(want) || d.Desired != c.desire {
			t.Errorf("t=%d (%s): held_zero_at %v desired %d (%s), want %v, desired %d", c.s, c.why, l.State.HeldZeroAt, d.Desired, d.Reason, want, c.desire)
		}
	}
}

// TestStateHeldZeroAtJSON: held_zero_at is omitted when zero (state files
// of targets without it are as before), kept through JSON, refused after
// last_at (it is set at a decision), and a history field (without last_at
// the state is refused).
func TestStateHeldZeroAtJSON(t *testing.T) {
	b, err := json.Marshal(State{})
	if err != nil || strings.Contains(string(b), "held_zero_at") {
		t.Errorf("zero State: %s (%v), want no held_zero_at", b, err)
	}
	st := State{LastAt: at(2160), HeldZeroAt: at(2145)}
	b, _ = json.Marshal(st)
	var back State
	if err := json.Unmarshal(b, &back); err != nil || !back.HeldZeroAt.Equal(at(2145)) || back.Validate() != nil {
		t.Errorf("round trip %s: %v (%v, %v), want %v and valid", b, back.HeldZeroAt, err, back.Validate(), at(2145))
	}
	st.HeldZeroAt = at(2175)
	if err := st.Validate(); err == nil || !strings.Contains(err.Error(), "held_zero_at") || !strings.Contains(err.Error(), "after last_at") {
		t.Errorf("held_zero_at after last_at: %v, want an error naming held_zero_at", err)
	}
	st = State{HeldZeroAt: at(2145)}
	if err := st.Validate(); err == nil || !strings.Contains(err.Error(), "last_at: missing") || !strings.Contains(err.Error(), "held_zero_at") {
		t.Errorf("held_zero_at without last_at: %v, want last_at missing, naming held_zero_at", err)
	}
}
