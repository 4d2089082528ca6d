package serve

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// gatherer is everything /metrics serves: reg's families (the Registerer
// given to NewMetrics) and m's table.
func gatherer(m *Metrics, reg prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.Gatherers{reg, m.table}
}

// signalMap is the exporter's view of the observed signals.
func signalMap(s Signals) map[string]float64 {
	m := map[string]float64{}
	signalMapInto(m, s)
	return m
}

// tuneState is target name's tuning state (TuneState*, "" none yet) and
// its candidate policy string.
func tuneState(tn *Tuning, name string) (state, policy string) {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	if s := tn.targets[name]; s != nil {
		return s.state, s.infoPolicy
	}
	return "", ""
}

// Step does what Tuning.Run's two loops do once: it tunes every
// in-process target whose last run is tune.every old or that has none,
// one after the other, reads the tune.dir results, then checks the
// adopted candidates' live misses, and waits for the look-backs it
// started (lookBack).
func (tn *Tuning) Step(ctx context.Context) {
	tn.stepRuns(ctx)
	tn.stepFast(ctx)
	tn.lookingBack.Wait()
}
