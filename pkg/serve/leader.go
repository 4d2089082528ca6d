package serve

import (
	"context"
	"log/slog"
	"sync"

	"github.com/infscale/infscale/internal/crashlog"
	"github.com/prometheus/client_golang/prometheus"
)

// Elector elects the one writer among serve's replicas (kube.Elector: a
// coordination.k8s.io Lease). Every replica decides (its windows stay warm
// for a takeover), but only the one whose IsLeader is true acts: it writes
// (spec.replicas, pod-deletion-cost) and exports infscale_desired_replicas,
// so that KEDA or the HPA never follows a replica that does not lead (one
// whose reads fail would hold a stale value that max() keeps).
type Elector interface {
	// Run campaigns until ctx ends, then releases the Lease.
	Run(ctx context.Context) error
	// IsLeader reports whether this instance may write now.
	IsLeader() bool
}

// leaderGauge is infscale_leader, read at each scrape: 1 while this
// instance may write (it holds the Lease, or runs without leader
// election), else 0.
func (m *Metrics) leaderGauge() prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "leader",
		Help: "1 while this instance may write (apply, pod-deletion-cost): it holds the Lease, or runs without --leader-elect; else 0."},
		func() float64 {
			if f := m.isLeader.Load(); f != nil && !(*f)() {
				return 0
			}
			return 1
		})
}

// SetLeader makes infscale_leader follow isLeader (nil: always 1), and
// exports infscale_desired_replicas only while isLeader is true, checked
// at each scrape: a replica that loses the Lease stops exporting it at
// its next scrape.
func (m *Metrics) SetLeader(isLeader func() bool) {
	m.table.mu.Lock()
	m.table.exportDesired = isLeader
	m.table.mu.Unlock()
	if isLeader == nil {
		m.isLeader.Store(nil)
		return
	}
	m.isLeader.Store(&isLeader)
}

// startElector runs e (nil: nothing) on its own context, not serve's: the
// Lease is released by the returned stop, which the caller calls after the
// loop (the writers) stopped. stop waits for the release; calling it again
// does nothing.
func startElector(e Elector, m *Metrics, log *slog.Logger) (stop func()) {
	if e == nil {
		return func() {}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m.SetLeader(e.IsLeader)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer crashlog.Handle(log)
		if err := e.Run(ctx); err != nil {
			log.Error("leader election stopped; this instance does not write", "err", err)
		}
	}()
	return sync.OnceFunc(func() { cancel(); <-done })
}
