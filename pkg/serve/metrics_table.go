package serve

import (
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gaugeSet is the per-target gauges of Metrics (desired, current,
// recommended, decision reason, last decision time and the observed
// signals) as one prometheus.Collector over a compact table: a scrape
// builds their series from it, all of a target's series sharing one
// target="<name>" label pair. For 1,000 targets this holds about 0.5 MB
// where client_golang's GaugeVecs held about 4 MB (a stateful series with
// its own protobuf label pairs, ~10 per target), most of serve's live heap;
// a scrape costs about the same (BenchmarkScrape1000Targets). The
// exposition is the same (TestMetricsRecord).
type gaugeSet struct {
	desired, current, recommended, reason, lastDecision *prometheus.Desc
	signals                                             []*prometheus.Desc // by signalSeries index

	mu      sync.Mutex
	targets map[string]*targetGauges
}

// targetGauges are one target's values; NaN is no series.
type targetGauges struct {
	label                          *dto.LabelPair // target="<name>"
	desired, current, lastDecision float64
	signals                        [7]float64     // by signalSeries index
	reason                         *dto.LabelPair // reason="<reason>"; nil: no series
	recommended                    []metricValue
}

type metricValue struct {
	metric *dto.LabelPair // metric="<name>"
	value  float64
}

func labelPair(name, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: &name, Value: &value}
}

// gaugeMetric is one series at a scrape. labels are sorted by name and
// shared with the table (read-only, as client_golang's own vectors share
// theirs).
type gaugeMetric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
}

func (m *gaugeMetric) Desc() *prometheus.Desc { return m.desc }

func (m *gaugeMetric) Write(out *dto.Metric) error {
	v := m.value
	out.Label = m.labels
	out.Gauge = &dto.Gauge{Value: &v}
	return nil
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
		tg = &targetGauges{label: labelPair("target", t), desired: nan, current: nan, lastDecision: nan}
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
		if mv.metric.GetValue() == metric {
			if ok {
				tg.recommended[i].value = v
			} else {
				tg.recommended = append(tg.recommended[:i], tg.recommended[i+1:]...)
			}
			return
		}
	}
	if ok {
		tg.recommended = append(tg.recommended, metricValue{labelPair("metric", metric), v})
	}
}

// Describe implements prometheus.Collector.
func (g *gaugeSet) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append([]*prometheus.Desc{g.desired, g.current, g.recommended, g.reason, g.lastDecision}, g.signals...) {
		ch <- d
	}
}

// Collect implements prometheus.Collector. The series are built in one
// slice under the lock and sent after it.
func (g *gaugeSet) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	n := 0
	for _, tg := range g.targets {
		n += 5 + len(tg.signals) + len(tg.recommended)
	}
	ms := make([]gaugeMetric, 0, n)
	put := func(d *prometheus.Desc, v float64, labels []*dto.LabelPair) {
		if !math.IsNaN(v) {
			ms = append(ms, gaugeMetric{desc: d, labels: labels, value: v})
		}
	}
	for _, tg := range g.targets {
		// "metric" and "reason" sort before "target".
		target := []*dto.LabelPair{tg.label}
		put(g.desired, tg.desired, target)
		put(g.current, tg.current, target)
		put(g.lastDecision, tg.lastDecision, target)
		for i, v := range tg.signals {
			put(g.signals[i], v, target)
		}
		if tg.reason != nil {
			put(g.reason, 1, []*dto.LabelPair{tg.reason, tg.label})
		}
		for _, mv := range tg.recommended {
			put(g.recommended, mv.value, []*dto.LabelPair{mv.metric, tg.label})
		}
	}
	g.mu.Unlock()
	for i := range ms {
		ch <- &ms[i]
	}
}
