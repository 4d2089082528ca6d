package serve

import (
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/infscale/infscale/pkg/recommend"
)

// seriesTable is the per-target series of Metrics, as one
// prometheus.Collector over a compact table: the gauges desired, current,
// recommended, decision reason, last decision time and the observed
// signals, and the counters decisions, scale changes, reversals and query
// errors. A scrape builds the series from it, all of a target's series
// sharing one target="<name>" label pair. For 1,000 targets this holds
// about 1 MB where client_golang's vectors held about 6.5 MB (a stateful
// series with its own protobuf label pairs, ~14 per target), the largest
// part of serve's live heap; a scrape is faster too
// (BenchmarkScrape1000Targets). The exposition is the same, counters'
// created timestamps included (TestMetricsRecord).
type seriesTable struct {
	desired, current, recommended, reason, lastDecision, stuck *prometheus.Desc
	signals                                                    []*prometheus.Desc // by signalSeries index
	decisions, changes, reversals, queryErrors, dedup          *prometheus.Desc
	applies, applyErrors                                       *prometheus.Desc

	mu      sync.Mutex
	targets map[string]*targetSeries
	// pairs are the metric=, reason= and direction= label pairs, one
	// each, shared by every target's series (read-only; a scrape shares
	// them as it shares a target's own pair).
	pairs map[[2]string]*dto.LabelPair
}

// pair returns the shared label pair name="value". The caller holds g.mu.
func (g *seriesTable) pair(name, value string) *dto.LabelPair {
	k := [2]string{name, value}
	lp, ok := g.pairs[k]
	if !ok {
		lp = labelPair(name, value)
		g.pairs[k] = lp
	}
	return lp
}

// targetSeries are one target's values; NaN is no series.
type targetSeries struct {
	label                          *dto.LabelPair // target="<name>"
	desired, current, lastDecision float64
	stuck                          float64        // NaN: unknown, no series
	signals                        [14]float64    // by signalSeries index
	reason                         *dto.LabelPair // reason="<reason>"; nil: no series
	recommended                    []metricValue

	decisions, queryErrors []labeledCount // by reason
	applyErrors            []labeledCount // by reason
	up, down, reversals    count
	applies                count                 // spec.replicas writes
	dedup                  count                 // deduplicated series
	lastChange             recommend.ScaleChange // for reversals
	hasChange              bool
}

type metricValue struct {
	metric *dto.LabelPair // metric="<name>"
	value  float64
}

// count is a counter series: created is its creation time (Unix ns) as
// client_golang records it; 0 is no series.
type count struct {
	value   float64
	created int64
}

func (c *count) add(v float64) {
	if c.created == 0 {
		c.created = time.Now().UnixNano()
	}
	c.value += v
}

type labeledCount struct {
	label *dto.LabelPair
	count
}

// addLabeled adds v to the series of label name=value in *cs, creating it.
// The caller holds g.mu.
func (g *seriesTable) addLabeled(cs *[]labeledCount, name, value string, v float64) {
	for i := range *cs {
		if (*cs)[i].label.GetValue() == value {
			(*cs)[i].add(v)
			return
		}
	}
	*cs = append(*cs, labeledCount{label: g.pair(name, value)})
	(*cs)[len(*cs)-1].add(v)
}

var (
	directionUp   = labelPair("direction", "up")
	directionDown = labelPair("direction", "down")
)

func labelPair(name, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: &name, Value: &value}
}

// tableMetric is one series at a scrape: a gauge, or a counter when
// created != 0. labels are sorted by name and shared with the table
// (read-only, as client_golang's own vectors share theirs). Write points
// the written metric at the gauge (or the counter) and the value held
// here, so that a scrape of 140,000 series (10,000 targets) makes no
// object per series of its own beside client_golang's dto.Metric: the
// series of a scrape are one slice, their counters another.
type tableMetric struct {
	desc    *prometheus.Desc
	labels  []*dto.LabelPair
	value   float64
	gauge   dto.Gauge
	counter *tableCounter // nil: a gauge
}

// tableCounter is a counter series' part of a tableMetric.
type tableCounter struct {
	counter dto.Counter
	created timestamppb.Timestamp
}

func (m *tableMetric) Desc() *prometheus.Desc { return m.desc }

func (m *tableMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	if c := m.counter; c != nil {
		c.counter.Value, c.counter.CreatedTimestamp = &m.value, &c.created
		out.Counter = &c.counter
		return nil
	}
	m.gauge.Value = &m.value
	out.Gauge = &m.gauge
	return nil
}

func newSeriesTable() *seriesTable {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
	}
	g := &seriesTable{
		desired:      d("desired_replicas", "Replicas infscale recommends for the target (the contract with KEDA / the HPA); holds its last value when signals are unknown; never NaN.", "target"),
		current:      d("current_replicas", "Replicas read at the last decision: the scale subresource's spec.replicas (scaleTargetRef), else the replicas: query, else the pods reporting (embedded: pages that answered).", "target"),
		recommended:  d("recommended_replicas", "Raw recommendation of one metric (before tolerance, stabilisation, rate limits and bounds); absent when the metric's signal is unknown.", "target", "metric"),
		reason:       d("decision_reason", "1 for the reason of the target's last decision (metric, tolerance, stabilized, rate-limited, min, max, ...); only the current reason has a series.", "target", "reason"),
		stuck:        d("stuck_replicas", "Replicas read as stuck engines at the last cycle: requests wait but none runs or no token is processed (embedded mode: two consecutive scrapes over at least 15s; Prometheus mode: 2m; docs/design.md case C18). They do not vote (left out of the totals, counted as missing pods). Absent when unknown.", "target"),
		lastDecision: d("last_decision_timestamp_seconds", "Unix time of the target's last successful decision (some signal known); alert when it falls behind.", "target"),
		decisions:    d("decisions_total", "Decisions made, by the reason that decided them.", "target", "reason"),
		changes:      d("scale_changes_total", "Changes of the desired replicas, by direction (up, down).", "target", "direction"),
		reversals:    d("scale_reversals_total", "Changes of the desired replicas opposite to the previous change made less than 5m before (the HPA's default scale-down window, whatever the target's): thrash.", "target"),
		queryErrors:  d("query_errors_total", "Failed or empty signal reads, by reason (timeout, unavailable, bad_response, empty, nan, ...).", "target", "reason"),
		dedup:        d("deduplicated_series_total", "Series folded as copies of a pod's own series (two scrape jobs on one pod, an HA pair without deduplication), summed over cycles; Prometheus mode.", "target"),
		applies:      d("replica_writes_total", "Writes of the workload's spec.replicas through its scale subresource (apply: true), one per changed decision.", "target"),
		applyErrors:  d("apply_errors_total", "Decisions of an apply: true target not written, by reason: scaled_by_hpa, scaled_by_scaledobject (refused: another controller scales the workload), forbidden, not_found, conflict, timeout, unavailable.", "target", "reason"),
		targets:      map[string]*targetSeries{},
		pairs:        map[[2]string]*dto.LabelPair{},
	}
	for _, s := range signalSeries {
		g.signals = append(g.signals, d(s.name, s.help, "target"))
	}
	return g
}

// target returns t's values, creating them (no series) if needed. The
// caller holds g.mu.
func (g *seriesTable) target(t string) *targetSeries {
	tg, ok := g.targets[t]
	if !ok {
		nan := math.NaN()
		tg = &targetSeries{label: labelPair("target", t), desired: nan, current: nan, lastDecision: nan, stuck: nan}
		for i := range tg.signals {
			tg.signals[i] = nan
		}
		g.targets[t] = tg
	}
	return tg
}

// setRecommended sets (ok) or removes (!ok) metric's raw recommendation.
// The caller holds g.mu.
func (g *seriesTable) setRecommended(tg *targetSeries, metric string, v float64, ok bool) {
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
		tg.recommended = append(tg.recommended, metricValue{g.pair("metric", metric), v})
	}
}

// Describe implements prometheus.Collector.
func (g *seriesTable) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append([]*prometheus.Desc{g.desired, g.current, g.recommended, g.reason, g.lastDecision, g.stuck,
		g.decisions, g.changes, g.reversals, g.queryErrors, g.dedup, g.applies, g.applyErrors}, g.signals...) {
		ch <- d
	}
}

// Collect implements prometheus.Collector. The series are built in one
// slice under the lock (their counters and label pairs in two more, sized
// by a first pass) and sent after it.
func (g *seriesTable) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	n, nc, np := 0, 0, 0
	g.series(func(_ *prometheus.Desc, _ float64, created int64, first, _ *dto.LabelPair) {
		n++
		if created != 0 {
			nc++
		}
		if first != nil {
			np += 2
		}
	})
	ms := make([]tableMetric, 0, n)
	counters := make([]tableCounter, 0, nc)
	pairs := make([]*dto.LabelPair, 0, np)
	var last *dto.LabelPair
	var targetOnly []*dto.LabelPair // shared by a target's series without another label
	g.series(func(d *prometheus.Desc, v float64, created int64, first, target *dto.LabelPair) {
		labels := targetOnly
		switch {
		case first != nil:
			pairs = append(pairs, first, target)
			labels = pairs[len(pairs)-2 : len(pairs) : len(pairs)]
		case target != last:
			targetOnly, last = []*dto.LabelPair{target}, target
			labels = targetOnly
		}
		var c *tableCounter
		if created != 0 {
			counters = append(counters, tableCounter{created: timestamppb.Timestamp{Seconds: created / 1e9, Nanos: int32(created % 1e9)}})
			c = &counters[len(counters)-1]
		}
		ms = append(ms, tableMetric{desc: d, labels: labels, value: v, counter: c})
	})
	g.mu.Unlock()
	for i := range ms {
		ch <- &ms[i]
	}
}

// series calls f for every series of the table in the order a scrape
// sends them: a gauge (created 0) or a counter created at created (Unix
// ns), labelled first (nil: no other label) and target. Labels sort by
// name: "direction", "metric" and "reason" before "target". The caller
// holds g.mu.
func (g *seriesTable) series(f func(d *prometheus.Desc, v float64, created int64, first, target *dto.LabelPair)) {
	for _, tg := range g.targets {
		gauge := func(d *prometheus.Desc, v float64, first *dto.LabelPair) {
			if !math.IsNaN(v) {
				f(d, v, 0, first, tg.label)
			}
		}
		gauge(g.desired, tg.desired, nil)
		gauge(g.current, tg.current, nil)
		gauge(g.lastDecision, tg.lastDecision, nil)
		gauge(g.stuck, tg.stuck, nil)
		for i, v := range tg.signals {
			gauge(g.signals[i], v, nil)
		}
		if tg.reason != nil {
			gauge(g.reason, 1, tg.reason)
		}
		for _, mv := range tg.recommended {
			gauge(g.recommended, mv.value, mv.metric)
		}
		counter := func(d *prometheus.Desc, c count, first *dto.LabelPair) {
			if c.created != 0 {
				f(d, c.value, c.created, first, tg.label)
			}
		}
		for _, c := range tg.decisions {
			counter(g.decisions, c.count, c.label)
		}
		for _, c := range tg.queryErrors {
			counter(g.queryErrors, c.count, c.label)
		}
		for _, c := range tg.applyErrors {
			counter(g.applyErrors, c.count, c.label)
		}
		counter(g.applies, tg.applies, nil)
		counter(g.changes, tg.up, directionUp)
		counter(g.changes, tg.down, directionDown)
		counter(g.reversals, tg.reversals, nil)
		counter(g.dedup, tg.dedup, nil)
	}
}
