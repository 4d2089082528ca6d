package serve

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fakeElector struct {
	leader  atomic.Bool
	running atomic.Bool
	ended   chan struct{}
}

func (f *fakeElector) Run(ctx context.Context) error {
	f.running.Store(true)
	<-ctx.Done()
	f.running.Store(false)
	close(f.ended)
	return nil
}

func (f *fakeElector) IsLeader() bool { return f.leader.Load() }

// TestLeaderGauge: infscale_leader is 1 without an elector (the only
// instance writes), then follows the elector's IsLeader at each scrape;
// the elector runs until stop, which waits for its Run to return.
func TestLeaderGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "test")
	want := func(v string) {
		t.Helper()
		exp := "# HELP infscale_leader 1 while this instance may write (apply, pod-deletion-cost): it holds the Lease, or runs without --leader-elect; else 0.\n# TYPE infscale_leader gauge\ninfscale_leader " + v + "\n"
		if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), "infscale_leader"); err != nil {
			t.Error(err)
		}
	}
	want("1")
	e := &fakeElector{ended: make(chan struct{})}
	stop := startElector(e, m, nil)
	want("0")
	e.leader.Store(true)
	want("1")
	e.leader.Store(false)
	want("0")
	stop()
	select {
	case <-e.ended:
	default:
		t.Fatal("stop returned before the elector's Run did")
	}
	stop() // a second stop does nothing
}

// TestDesiredOnlyFromLeader: with an elector, infscale_desired_replicas
// (what KEDA and the HPA act on) is exported only at the scrapes where
// this replica holds the Lease: absent on a replica that does not, and
// gone at the first scrape after the holder loses it; the other series
// (here infscale_current_replicas) stay. Without an elector it is always
// exported.
func TestDesiredOnlyFromLeader(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "test")
	m.Record(Snapshot{Target: "chat", Decided: true, Valid: true, Desired: 4, Current: 2})
	desired := func() int {
		t.Helper()
		n, err := testutil.GatherAndCount(gatherer(m, reg), "infscale_desired_replicas")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	current := func() int {
		t.Helper()
		n, err := testutil.GatherAndCount(gatherer(m, reg), "infscale_current_replicas")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if desired() != 1 {
		t.Fatal("no elector: want infscale_desired_replicas exported")
	}
	e := &fakeElector{ended: make(chan struct{})}
	stop := startElector(e, m, nil)
	defer stop()
	if n := desired(); n != 0 {
		t.Errorf("not the leader: %d infscale_desired_replicas series, want none", n)
	}
	if current() != 1 {
		t.Error("not the leader: infscale_current_replicas gone too; only the decision should be")
	}
	e.leader.Store(true)
	if n := desired(); n != 1 {
		t.Errorf("leader: %d infscale_desired_replicas series, want 1", n)
	}
	e.leader.Store(false) // the Lease lost (stolen, or not renewed in time)
	if n := desired(); n != 0 {
		t.Errorf("Lease lost: %d infscale_desired_replicas series at the next scrape, want none", n)
	}
}
