package serve

import (
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/infscale/infscale/pkg/recommend"
)

// seriesTable is Metrics' per-target series as a compact table sharing one
// target="<name>" label pair per target: about 1 MB for 1,000 targets where
// client_golang's vectors held 6.5 MB. It is not a prometheus.Collector
// (a Registry's Gather costs about 30 MiB and 0.4 s of CPU at 10,000
// targets): /metrics writes it family by family (writeFamilies), Gather
// gives tests the same families, and the exposition is client_golang's,
// created timestamps included (TestMetricsExpositionSame).
type seriesTable struct {
	desired, current, recommended, reason, lastDecision, stuck *tableFamily
	interval                                                   *tableFamily
	signals                                                    []*tableFamily // by signalSeries index
	decisions, changes, reversals, queryErrors, dedup          *tableFamily
	applies, applyErrors, costErrors                           *tableFamily
	// families are all of the above in name order (their idx).
	families []*tableFamily

	mu      sync.Mutex
	targets map[string]*targetSeries
	// sorted are targets' values in name order, nil when a target came
	// or went since the last scrape (sorted again then).
	sorted []*targetSeries
	// pairs are the metric=, reason= and direction= label pairs, one
	// each, shared by every target's series (read-only; a scrape shares
	// them as it shares a target's own pair).
	pairs map[[2]string]*dto.LabelPair
	// exportDesired, when set, says whether infscale_desired_replicas is
	// exported at this scrape: only the Lease holder's is (Metrics.SetLeader),
	// so a replica that does not write exports nothing KEDA or the HPA acts
	// on. Nil: always (no election). hideDesired is its answer for the
	// scrape in progress (snapshot's two passes agree).
	exportDesired func() bool
	hideDesired   bool
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

// tableFamily is one metric family of the table: its name, help and
// type, the labels of its series (target last), and its place in name
// order.
type tableFamily struct {
	name, help string
	typ        dto.MetricType // GAUGE or COUNTER
	labels     []string
	idx        int
}

// targetSeries are one target's values; NaN is no series.
type targetSeries struct {
	name                           string         // the target's key (Loop: target.key)
	label                          *dto.LabelPair // target="<name>"
	role                           *dto.LabelPair // role="<role>" of a P/D target's pool; nil: none
	desired, current, lastDecision float64
	interval                       float64 // the decision period, seconds; NaN: none yet
	// pending is a desired value recorded but not yet exported
	// (Snapshot.DeferDesired: a scale-down whose pod deletion costs are
	// written first); NaN: none.
	pending     float64
	stuck       float64        // NaN: unknown, no series
	signals     [15]float64    // by signalSeries index
	reason      *dto.LabelPair // reason="<reason>"; nil: no series
	recommended []metricValue

	decisions, queryErrors []labeledCount // by reason
	applyErrors            []labeledCount // by reason
	costErrors             []labeledCount // by reason
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

func newSeriesTable() *seriesTable {
	fam := func(typ dto.MetricType) func(name, help string, labels ...string) *tableFamily {
		return func(name, help string, labels ...string) *tableFamily {
			return &tableFamily{name: prometheus.BuildFQName(Namespace, "", name), help: help, typ: typ, labels: labels}
		}
	}
	d, c := fam(dto.MetricType_GAUGE), fam(dto.MetricType_COUNTER)
	g := &seriesTable{
		desired:      d("desired_replicas", "Replicas infscale recommends for the target (the contract with KEDA / the HPA); holds its last value when signals are unknown; never NaN.", "target"),
		current:      d("current_replicas", "Replicas read at the last decision: the scale subresource's spec.replicas (scaleTargetRef), else the replicas: query, else the pods reporting (embedded: pages that answered).", "target"),
		recommended:  d("recommended_replicas", "Raw recommendation of one metric (the HPA's missing-replicas rule applied; before tolerance, the guards, lookahead, stabilisation, rate limits and bounds); absent when the metric's signal is unknown.", "target", "metric"),
		reason:       d("decision_reason", "1 for the reason of the target's last decision (DesiredWithinRange, tolerance, ScaleDownStabilized, ScaleUpLimit, TooManyReplicas, ...: docs/recommend.md#reasons); only the current reason has a series.", "target", "reason"),
		stuck:        d("stuck_replicas", "Replicas read as stuck engines at the last cycle: requests wait but none runs or no token is processed (embedded mode: two consecutive scrapes over at least 15s; Prometheus mode: 2m; docs/design.md case C18). They do not vote (left out of the totals, counted as missing pods). Absent when unknown.", "target"),
		lastDecision: d("last_decision_timestamp_seconds", "Unix time of the target's last successful decision (some signal known); alert when it falls behind.", "target"),
		interval:     d("decision_interval_seconds", "The period the target is decided at (pollingInterval), from its first cycle: InfscaleDecisionsStale's threshold is a multiple of it.", "target"),
		decisions:    c("decisions_total", "Decisions made, by the reason that decided them.", "target", "reason"),
		changes:      c("scale_changes_total", "Changes of the desired replicas, by direction (up, down).", "target", "direction"),
		reversals:    c("scale_reversals_total", "Changes of the desired replicas opposite to the previous change made less than 5m before (the HPA's default scale-down window, whatever the target's): thrash.", "target"),
		queryErrors:  c("query_errors_total", "Failed or empty signal reads, by reason (timeout, unavailable, bad_response, empty, nan, ...).", "target", "reason"),
		dedup:        c("deduplicated_series_total", "Series folded as copies of a pod's own series (two scrape jobs on one pod, an HA pair without deduplication), summed over cycles; Prometheus mode.", "target"),
		applies:      c("replica_writes_total", "Writes of the workload's spec.replicas through its scale subresource (apply: true), one per changed decision.", "target"),
		applyErrors:  c("apply_errors_total", "Decisions of an apply: true target not written, by reason: scaled_by_hpa, scaled_by_scaledobject (refused: another controller scales the workload), forbidden, not_found, no_scale (the kind has no scale subresource), conflict, timeout, unavailable, bad_data (the scale answered a negative count: not written over).", "target", "reason"),
		costErrors:   c("deletion_cost_errors_total", "Scale-downs of a pod_deletion_cost target whose pod-deletion-cost patches did not all land, by the first failure's reason: forbidden (RBAC patch on pods missing, or an admission webhook refusing), unauthorized, timeout, unavailable, ...", "target", "reason"),
		targets:      map[string]*targetSeries{},
		pairs:        map[[2]string]*dto.LabelPair{},
	}
	for _, s := range signalSeries {
		g.signals = append(g.signals, d(s.name, s.help, "target"))
	}
	g.families = append([]*tableFamily{g.desired, g.current, g.recommended, g.reason, g.lastDecision, g.interval, g.stuck,
		g.decisions, g.changes, g.reversals, g.queryErrors, g.dedup, g.applies, g.applyErrors, g.costErrors}, g.signals...)
	slices.SortFunc(g.families, func(a, b *tableFamily) int { return strings.Compare(a.name, b.name) })
	for i, f := range g.families {
		f.idx = i
	}
	return g
}

// roleSep separates a P/D target's name and role in its series key,
// name@role (a name has no '@': config's name rule).
const roleSep = "@"

// target returns t's values (t a target's name, or name@role: series
// labelled role="<role>" too), creating them (no series) if needed. The
// caller holds g.mu.
func (g *seriesTable) target(t string) *targetSeries {
	tg, ok := g.targets[t]
	if !ok {
		nan := math.NaN()
		name, role, pd := strings.Cut(t, roleSep)
		tg = &targetSeries{name: t, label: labelPair("target", name), desired: nan, pending: nan, current: nan, lastDecision: nan, interval: nan, stuck: nan}
		if pd {
			tg.role = labelPair("role", role)
		}
		for i := range tg.signals {
			tg.signals[i] = nan
		}
		g.targets[t] = tg
		g.sorted = nil
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

// forget removes target t's series. The caller holds g.mu.
func (g *seriesTable) forget(t string) {
	if _, ok := g.targets[t]; ok {
		delete(g.targets, t)
		g.sorted = nil
	}
}

// descs returns a prometheus.Collector that describes the table's
// families and collects nothing: registered on a Registry, it claims their
// names (a metric of the same name there fails to register) while
// metricsHandler writes the series.
func (g *seriesTable) descs() prometheus.Collector { return tableDescs{g} }

type tableDescs struct{ g *seriesTable }

func (d tableDescs) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range d.g.families {
		ch <- prometheus.NewDesc(f.name, f.help, f.labels, nil)
	}
}

func (tableDescs) Collect(chan<- prometheus.Metric) {}

// Gather implements prometheus.Gatherer: the table's families in name
// order, each family's series by target name, as /metrics writes them
// (for tests and tools, joined to a Registry's with prometheus.Gatherers).
func (g *seriesTable) Gather() ([]*dto.MetricFamily, error) {
	var out []*dto.MetricFamily
	err := g.writeFamilies(func(mf *dto.MetricFamily) error {
		out = append(out, mf)
		return nil
	}, false)
	return out, err
}

// writeFamilies calls emit with each family that has series, in name
// order, its series by target name, and returns emit's first error. The
// values are copied under the lock first (about 32 bytes a series, one
// slice), so a slow reader does not hold up the decisions and a scrape
// sees every target's series as one Record left them. With reuse, every
// family is built in the same buffers, valid only during its emit (one
// family's objects live at a time, not a scrape's 140,000 at 10,000
// targets).
func (g *seriesTable) writeFamilies(emit func(*dto.MetricFamily) error, reuse bool) error {
	rows, off := g.snapshot()
	var b familyBuf
	if reuse {
		most := 0
		for i := 1; i < len(off); i++ {
			most = max(most, off[i]-off[i-1])
		}
		b.size(most, 0, true) // the largest family, once: not grown family by family
	}
	for _, f := range g.families {
		rs := rows[off[f.idx]:off[f.idx+1]]
		if len(rs) == 0 {
			continue
		}
		if !reuse {
			b = familyBuf{}
		}
		if err := emit(b.family(f, rs)); err != nil {
			return err
		}
	}
	return nil
}

// row is one series of a scrape's snapshot: labelled first (nil: no
// other label) and its target's pairs (target, and role for a P/D pool); created is a counter's creation time (Unix
// ns), 0 for a gauge.
type row struct {
	first   *dto.LabelPair
	tg      *targetSeries // its label and role pairs (set when it was made, read-only)
	value   float64
	created int64
}

// snapshot copies every series of the table, grouped by family in name
// order and within a family by target name: family i's series are
// rows[off[i]:off[i+1]].
func (g *seriesTable) snapshot() (rows []row, off []int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sorted == nil {
		g.sorted = make([]*targetSeries, 0, len(g.targets))
		for _, tg := range g.targets {
			g.sorted = append(g.sorted, tg)
		}
		slices.SortFunc(g.sorted, func(a, b *targetSeries) int { return strings.Compare(a.name, b.name) })
	}
	g.hideDesired = g.exportDesired != nil && !g.exportDesired()
	off = make([]int, len(g.families)+1)
	g.series(func(f *tableFamily, _ float64, _ int64, _ *dto.LabelPair, _ *targetSeries) { off[f.idx+1]++ })
	for i := 1; i < len(off); i++ {
		off[i] += off[i-1]
	}
	rows = make([]row, off[len(off)-1])
	next := slices.Clone(off[:len(off)-1])
	g.series(func(f *tableFamily, v float64, created int64, first *dto.LabelPair, tg *targetSeries) {
		rows[next[f.idx]] = row{first: first, tg: tg, value: v, created: created}
		next[f.idx]++
	})
	var tmp []row
	for _, f := range g.families {
		if len(f.labels) == 2 {
			tmp = byFirst(rows[off[f.idx]:off[f.idx+1]], tmp)
		}
	}
	return rows, off
}

// byFirst orders a family's rows by their first label's value, keeping
// the target order within each value (a stable counting sort over the
// few shared pairs: metric, reason or direction), so that a family's
// series sort by label values in label name order, as a Registry's do. tmp
// is scratch space, returned grown.
func byFirst(rs, tmp []row) []row {
	var firsts []*dto.LabelPair
	count := map[*dto.LabelPair]int{}
	for i := range rs {
		if _, ok := count[rs[i].first]; !ok {
			firsts = append(firsts, rs[i].first)
		}
		count[rs[i].first]++
	}
	if len(firsts) < 2 {
		return tmp
	}
	slices.SortFunc(firsts, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetValue(), b.GetValue()) })
	at := 0
	for _, p := range firsts {
		at, count[p] = at+count[p], at
	}
	tmp = append(tmp[:0], rs...)
	for _, r := range tmp {
		rs[count[r.first]] = r
		count[r.first]++
	}
	return tmp
}

// familyBuf holds the protobuf objects of one family's series, grown to
// the largest family and reused by the next.
type familyBuf struct {
	metrics  []dto.Metric
	ptrs     []*dto.Metric
	labels   []*dto.LabelPair
	gauges   []dto.Gauge
	counters []dto.Counter
	created  []timestamppb.Timestamp
}

// size makes b hold n series, roles of them with a role label, gauges or
// (counter) counters.
func (b *familyBuf) size(n, roles int, counter bool) {
	b.metrics, b.ptrs, b.labels = grow(b.metrics, n), grow(b.ptrs, n), grow(b.labels, 2*n+roles)
	if counter {
		b.counters, b.created = grow(b.counters, n), grow(b.created, n)
	}
	b.gauges = grow(b.gauges, n)
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// family builds family f of rows rs in b. The series point at rs's
// values and share the table's label pairs (read-only).
func (b *familyBuf) family(f *tableFamily, rs []row) *dto.MetricFamily {
	n := len(rs)
	counter := f.typ == dto.MetricType_COUNTER
	roles := 0
	for i := range rs {
		if rs[i].tg.role != nil {
			roles++
		}
	}
	b.size(n, roles, counter)
	at := 0
	for i := range rs {
		r, m := &rs[i], &b.metrics[i]
		k := 2
		if r.tg.role != nil {
			k = 3
		}
		l := b.labels[at : at : at+k] // in label name order: metric, reason or direction; role; target
		at += k
		if r.first != nil {
			l = append(l, r.first)
		}
		if r.tg.role != nil {
			l = append(l, r.tg.role)
		}
		m.Label = append(l, r.tg.label)
		if counter {
			ts, c := &b.created[i], &b.counters[i]
			ts.Seconds, ts.Nanos = r.created/1e9, int32(r.created%1e9)
			c.Value, c.CreatedTimestamp = &r.value, ts
			m.Counter, m.Gauge = c, nil
		} else {
			b.gauges[i].Value = &r.value
			m.Gauge, m.Counter = &b.gauges[i], nil
		}
		b.ptrs[i] = m
	}
	return &dto.MetricFamily{Name: &f.name, Help: &f.help, Type: &f.typ, Metric: b.ptrs}
}

// series calls f for every series of the table, target by target in name
// order: a gauge (created 0) or a counter created at created (Unix ns) of
// family fam, labelled first (nil: no other label) and tg's role and
// target. The caller holds g.mu and has sorted g.sorted.
func (g *seriesTable) series(f func(fam *tableFamily, v float64, created int64, first *dto.LabelPair, tg *targetSeries)) {
	for _, tg := range g.sorted {
		gauge := func(fam *tableFamily, v float64, first *dto.LabelPair) {
			if !math.IsNaN(v) {
				f(fam, v, 0, first, tg)
			}
		}
		if !g.hideDesired {
			gauge(g.desired, tg.desired, nil)
		}
		gauge(g.current, tg.current, nil)
		gauge(g.lastDecision, tg.lastDecision, nil)
		gauge(g.interval, tg.interval, nil)
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
		counter := func(fam *tableFamily, c count, first *dto.LabelPair) {
			if c.created != 0 {
				f(fam, c.value, c.created, first, tg)
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
		for _, c := range tg.costErrors {
			counter(g.costErrors, c.count, c.label)
		}
		counter(g.applies, tg.applies, nil)
		counter(g.changes, tg.up, directionUp)
		counter(g.changes, tg.down, directionDown)
		counter(g.reversals, tg.reversals, nil)
		counter(g.dedup, tg.dedup, nil)
	}
}
