package kube

import (
	"log/slog"
	"testing"
	"time"
	"unsafe"
)

// wallMoved is at with its wall clock moved by d and its monotonic reading
// kept: what time.Now returns after a suspend of d (CLOCK_MONOTONIC stops,
// the wall clock is set on resume) or a step of the clock by d. The test
// writes time.Time's fields (wall: hasMonotonic bit, 33 bits of seconds
// since 1885, 30 bits of nanoseconds).
func wallMoved(t *testing.T, at time.Time, d time.Duration) time.Time {
	t.Helper()
	p := (*struct {
		wall uint64
		ext  int64
		loc  *time.Location
	})(unsafe.Pointer(&at))
	if p.wall&(1<<63) == 0 {
		t.Fatal("wallMoved: no monotonic reading")
	}
	ns := int64(p.wall<<1>>31)*1e9 + int64(p.wall&(1<<30-1)) + int64(d)
	p.wall = 1<<63 | uint64(ns/1e9)<<30 | uint64(ns%1e9)
	return at
}

// TestElectorSuspendedHolderStopsWriting: the holder renewed the Lease at
// t0 (defaults: renew deadline 10 s, lease 15 s); its machine is then
// suspended 10 min. On resume its monotonic clock reads t0+1 s, its wall
// clock t0+10 min 1 s. The other replicas' clocks ran: the Lease expired
// 15 s after t0 for them, and one holds it now. IsLeader read the
// monotonic 1 s, under the 10 s deadline: true, so the first cycle after
// resume wrote beside the new holder. The wall clock moved 10 min beyond
// the monotonic one since the renewal: not leader until a renewal (which
// finds the Lease taken). A step back (NTP, -5 min) changes nothing: the
// monotonic 1 s is under the deadline; the monotonic 11 s is past it.
func TestElectorSuspendedHolderStopsWriting(t *testing.T) {
	t0 := time.Now()
	clk := t0
	e := &Elector{cfg: LeaseConfig{Name: "infscale", Namespace: "default", Identity: "a"}.withDefaults(), log: slog.New(slog.DiscardHandler),
		now: func() time.Time { return clk }, leading: true, renewed: t0}
	clk = t0.Add(time.Second)
	if !e.IsLeader() {
		t.Fatal("1 s after its renewal: not leader, want leader")
	}
	clk = wallMoved(t, t0.Add(time.Second), 10*time.Minute)
	if e.IsLeader() || !e.LeaderUntil().IsZero() {
		t.Errorf("resumed after a 10 min suspend: leader until %v, want not leader (zero)", e.LeaderUntil())
	}
	clk = wallMoved(t, t0.Add(time.Second), -5*time.Minute)
	if !e.IsLeader() {
		t.Error("after a step back of 5 min, 1 s after its renewal: not leader, want leader")
	}
	clk = t0.Add(11 * time.Second)
	if e.IsLeader() {
		t.Error("11 s after its renewal: leader, want not (renew deadline 10 s)")
	}
}
