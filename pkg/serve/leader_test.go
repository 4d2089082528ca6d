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
