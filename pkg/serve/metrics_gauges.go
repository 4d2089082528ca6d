package serve

import (
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// gaugeSet is the per-target gauges of Metrics (desired, current,
// recommended, decision reason, last decision time and the observed
// signals) as one prometheus.Collector over a compact table: a scrape
// builds their series (const metrics) from it. For 1,000 targets this
// holds about 0.3 MB where client_golang's GaugeVecs held about 4 MB (one
// stateful series with protobuf label pairs each, ~10 per target), most of
// serve's live heap. The exposition is the same (TestMetricsRecord).
type gaugeSet struct {
	desired, current, recommended, reason, lastDecision *prometheus.Desc
	signals                                             []*prometheus.Desc // by signalSeries index

	mu      sync.Mutex
	targets map[string]*targetGauges
}

// targetGauges are one target's values; NaN is no series.
type targetGauges struct {
	desired, current, lastDecision float64
	signals                        [7]float64 // by signalSeries index
	reason                         string
	hasReason                      bool
	recommended                    []metricValue
}

type metricValue struct {
	metric string
	value  float64
}

func newGaugeSet() *gaugeSet {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
	}
	g := &gaugeSet{
		desired:      d("desired_replicas", "Replicas infscale recommends for the target (the contract with KEDA / the HPA); holds its last value when signals are unknown; never NaN.", "target"),
		current:      d("current_replicas", "Replicas read at the last decision: the replicas: query, else the pods reporting (embedded: pages that answered).", "target"),
		recommended:  d("recommended_replicas", "Raw recommendation of one metric (before tolerance, stabilisation, rate limits and bounds); absent when the metric's signal is unknown.", "target", "metric"),
		reason:       d("decision_reason", "1 for the reason of the target's last decision (metric, tolerance, stabilized, rate-limited, min, max, ...); only the current reason has a series.", "target", "reason"),
		lastDecision: d("last_decision_timestamp_seconds", "Unix time of the target's last successful decision (some signal known); alert when it falls behind.", "target"),
		targets:      map[string]*targetGauges{},
	}
	for _, s := range signalSeries {
		g.signals = append(g.signals, d(s.name, s.help, "target"))
	}
	return g
}

// target returns t's values, creating them (no series) if needed. The
// caller holds g.mu.
func (g *gaugeSet) target(t string) *targetGauges {
	tg, ok := g.targets[t]
	if !ok {
		nan := math.NaN()
		tg = &targetGauges{desired: nan, current: nan, lastDecision: nan}
		for i := range tg.signals {
			tg.signals[i] = nan
		}
		g.targets[t] = tg
	}
	return tg
}

// setRecommended sets (ok) or removes (!ok) metric's raw recommendation.
func (tg *targetGauges) setRecommended(metric string, v float64, ok bool) {
	for i, mv := range tg.recommended {
		if mv.metric == metric {
			if ok {
				tg.recommended[i].value = v
			} else {
				tg.recommended = append(tg.recommended[:i], tg.recommended[i+1:]...)
			}
			return
		}
	}
	if ok {
		tg.recommended = append(tg.recommended, metricValue{metric, v})
	}
}

// Describe implements prometheus.Collector.
func (g *gaugeSet) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append([]*prometheus.Desc{g.desired, g.current, g.recommended, g.reason, g.lastDecision}, g.signals...) {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (g *gaugeSet) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	defer g.mu.Unlock()
	put := func(d *prometheus.Desc, v float64, labels ...string) {
		if !math.IsNaN(v) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
	}
	for t, tg := range g.targets {
		put(g.desired, tg.desired, t)
		put(g.current, tg.current, t)
		put(g.lastDecision, tg.lastDecision, t)
		for i, v := range tg.signals {
			put(g.signals[i], v, t)
		}
		if tg.hasReason {
			put(g.reason, 1, t, tg.reason)
		}
		for _, mv := range tg.recommended {
			put(g.recommended, mv.value, t, mv.metric)
		}
	}
}
