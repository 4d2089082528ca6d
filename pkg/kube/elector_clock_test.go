package kube

import (
	"log/slog"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/clocktest"
)

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
	clk = clocktest.WallMoved(t, t0.Add(time.Second), 10*time.Minute)
	if e.IsLeader() || !e.LeaderUntil().IsZero() {
		t.Errorf("resumed after a 10 min suspend: leader until %v, want not leader (zero)", e.LeaderUntil())
	}
	clk = clocktest.WallMoved(t, t0.Add(time.Second), -5*time.Minute)
	if !e.IsLeader() {
		t.Error("after a step back of 5 min, 1 s after its renewal: not leader, want leader")
	}
	clk = t0.Add(11 * time.Second)
	if e.IsLeader() {
		t.Error("11 s after its renewal: leader, want not (renew deadline 10 s)")
	}
}
