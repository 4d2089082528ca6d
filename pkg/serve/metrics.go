package serve

import (
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/recommend"
)

// Namespace prefixes every exported metric.
const Namespace = "infscale"

// SignalNames are the observed signals exported as infscale_<name>, in
// docs/metrics.md order, with their series names.
var signalSeries = []struct{ key, name, help string }{
	{"queue", "queue_requests", "Requests running + waiting (+ held) summed over the target's replicas, as last observed; absent when unknown."},
	{"waiting", "waiting_requests", "Requests waiting in the servers' queues summed over replicas, as last observed; absent when unknown."},
	{"running", "running_requests", "Requests being decoded summed over replicas, as last observed; absent when unknown."},
	{"held", "held_requests", "Requests held in front of the servers (activator, gateway), as last observed; absent when unknown or not configured."},
	{"kv", "kv_cache_usage_ratio", "KV-cache usage averaged over reporting replicas (each replica's max over engines), 0..1; absent when unknown."},
	{"ttft", "ttft_seconds", "Observed time-to-first-token quantile of the target's ttft metric, in seconds; absent when unknown (no request finished in the window)."},
	{"cpu", "cpu_utilization_ratio", "Pod CPU as a fraction of the CPU request averaged over reporting replicas (1 = 100%); absent when unknown."},
	{"queue_time", "queue_time_seconds", "Observed queue-time quantile (time a request waited before it was first scheduled) of the target's queuewait metric, in seconds; absent when unknown."},
	{"itl", "inter_token_latency_seconds", "Observed inter-token-latency median, in seconds: of a target with a demand metric in Prometheus mode, of every target in embedded mode; absent when unknown."},
	{"arrival_rate", "arrival_rate_requests_per_second", "Requests finished successfully per second over the target's replicas (the demand metric's arrival rate); absent when unknown (no baseline or before the first finished request)."},
	{"prompt_tokens_rate", "prompt_tokens_per_second", "Prompt tokens prefilled per second over the target's replicas; absent when unknown."},
	{"generation_tokens_rate", "generation_tokens_per_second", "Tokens generated per second over the target's replicas; absent when unknown."},
	{"mean_prompt", "mean_prompt_tokens", "Mean prompt length of recently finished requests (prompt tokens rate / arrival rate), in tokens; absent when unknown or no request finished."},
	{"mean_output", "mean_output_tokens", "Mean output length of recently finished requests (generation tokens rate / arrival rate), in tokens; absent when unknown or no request finished."},
	{"prefix_cache_hit", "prefix_cache_hit_ratio", "Fraction of prompt tokens found in the servers' prefix cache over the demand window (hit over query token rates), 0..1, which the demand metric does not charge as prefill; absent when unknown (no such counters, no prompt in the window)."},
}

// Metrics is serve's exporter (no globals): the per-target series are its
// table, which Handler's /metrics writes after the registry passed to
// NewMetrics (the cycle, query and build metrics, and the table's names
// claimed, so that no other metric takes them); Gatherer gives both.
// Signals that are unknown have no series (absent, never NaN);
// infscale_desired_replicas is never NaN and, once a target has had its
// first decision, always present and holding its last value.
type Metrics struct {
	// table holds every per-target series (metrics_table.go).
	table         *seriesTable
	queryDuration *prometheus.HistogramVec
	cycles        prometheus.Counter
	cycleDuration prometheus.Gauge
	configReloads *prometheus.CounterVec
	// configOK backs infscale_config_last_reload_successful.
	configOK  prometheus.Gauge
	buildInfo *prometheus.GaugeVec
	// promClock backs infscale_prometheus_clock_offset_seconds: no
	// labels, no series until Prometheus's clock is known.
	promClock *prometheus.GaugeVec
	// isLeader backs infscale_leader (leader.go); nil: always 1.
	isLeader atomic.Pointer[func() bool]
}

// NewMetrics creates the exporter's metrics and registers them on reg
// (the table's families by name only: see Metrics). version is the build's version string for infscale_build_info.
func NewMetrics(reg prometheus.Registerer, version string) *Metrics {
	g := func(name, help string, labels ...string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	m := &Metrics{
		table: newSeriesTable(),
		queryDuration: func() *prometheus.HistogramVec {
			v := prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Namespace: Namespace, Name: "query_duration_seconds",
				Help:    "Time of one read, by source: prometheus, one batched evaluation of every target per cycle; scrape, one target's scrapes.",
				Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
			}, []string{"source"})
			reg.MustRegister(v)
			return v
		}(),
		cycles: func() prometheus.Counter {
			v := prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "cycles_total", Help: "Decision cycles run (one per interval, all targets)."})
			reg.MustRegister(v)
			return v
		}(),
		cycleDuration: func() prometheus.Gauge {
			v := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "cycle_duration_seconds", Help: "Wall time of the last decision cycle over all targets, in seconds."})
			reg.MustRegister(v)
			return v
		}(),
		configReloads: func() *prometheus.CounterVec {
			v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "config_reloads_total",
				Help: "Configuration reloads (SIGHUP) by result: success, or failure (the file refused, too large to parse within its limits included; the running configuration kept)."}, []string{"result"})
			v.WithLabelValues("success")
			v.WithLabelValues("failure")
			reg.MustRegister(v)
			return v
		}(),
		configOK: func() prometheus.Gauge {
			v := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "config_last_reload_successful",
				Help: "1 when the last configuration load (the start's, or the last reload's) was applied, 0 when the last reload was refused and an older configuration runs (as prometheus_config_last_reload_successful)."})
			v.Set(1) // serve starts only on a valid configuration
			reg.MustRegister(v)
			return v
		}(),
		buildInfo: g("build_info", "Always 1; labels carry the build's version and Go version.", "version", "goversion"),
		promClock: g("prometheus_clock_offset_seconds", "How far Prometheus's clock is ahead of serve's (negative: behind), from the Date header of its last answer, to about a second; absent until Prometheus has answered (Prometheus mode only). Serve ahead by over 2 s (and at most 5 min) evaluates at Prometheus's now; serve behind reads data that much older."),
	}
	reg.MustRegister(m.table.descs())
	reg.MustRegister(m.leaderGauge())
	m.buildInfo.WithLabelValues(version, runtime.Version()).Set(1)
	return m
}

// Snapshot is what one cycle exports for one target.
type Snapshot struct {
	// Target is the target's name, or a P/D pool's name@role (series
	// labelled target and role).
	Target string
	At     time.Time
	// Interval is the decision period the target is decided at
	// (infscale_decision_interval_seconds); 0 leaves the series as it was.
	Interval time.Duration
	// Signals by key (queue, waiting, running, held, kv, ttft, cpu); NaN or
	// missing = unknown (series removed). cpu is a percentage here and is
	// exported as a ratio.
	Signals map[string]float64
	// Decided is false when no decision could be made (current replicas
	// never known); the desired series is then left as it was.
	Decided bool
	// Valid is true when at least one metric's signal was known (the decision
	// counts as successful for infscale_last_decision_timestamp_seconds).
	Valid   bool
	Desired int
	// Previous is the desired value exported before this one, and HadPrevious
	// whether there was one (for changes and reversals).
	Previous    int
	HadPrevious bool
	// Current is the replicas read this cycle (-1: unknown, no series).
	Current int
	Reason  string
	// Raw is each metric's raw recommendation; metrics whose signal was
	// unknown are absent.
	Raw map[string]int
	// AllMetrics lists every metric of the target, for deleting the raw
	// series of metrics that became unknown, and of those it no longer has.
	AllMetrics []string
	// Stuck is the replicas read as stuck engines, exported as
	// infscale_stuck_replicas when StuckKnown (else the series is removed).
	Stuck      int
	StuckKnown bool
	// DeferDesired records Desired without exporting it: the series keeps
	// its last value until ReleaseDesired. The loop defers a scale-down
	// whose pod deletion costs it writes first, so that KEDA or the HPA
	// never reads the lower count before the costs are set.
	DeferDesired bool
}

// ReleaseDesired exports target's desired value deferred by Record
// (Snapshot.DeferDesired); nothing when none is pending.
func (m *Metrics) ReleaseDesired(target string) {
	g := m.table
	g.mu.Lock()
	defer g.mu.Unlock()
	if tg, ok := g.targets[target]; ok && !math.IsNaN(tg.pending) {
		tg.desired, tg.pending = tg.pending, math.NaN()
	}
}

// Record exports one target's snapshot. Not safe for concurrent calls on the
// same target (the loop serialises per target).
func (m *Metrics) Record(s Snapshot) {
	t := s.Target
	g := m.table
	g.mu.Lock()
	tg := g.target(t)
	for i, sig := range signalSeries {
		v, ok := s.Signals[sig.key]
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			tg.signals[i] = math.NaN() // no series
			continue
		}
		if sig.key == "cpu" {
			v /= 100
		}
		tg.signals[i] = v
	}
	if s.Interval > 0 {
		tg.interval = s.Interval.Seconds()
	}
	tg.stuck = math.NaN()
	if s.StuckKnown {
		tg.stuck = float64(s.Stuck)
	}
	// Unknown this cycle (an outage): no series, as every observed signal;
	// the last count read, kept, read as the replicas running (and held
	// InfscaleConsumerNotActing's comparison with desired true).
	tg.current = math.NaN()
	if s.Current >= 0 {
		tg.current = float64(s.Current)
	}
	if !s.Decided {
		g.mu.Unlock()
		return
	}
	for _, name := range s.AllMetrics {
		r, ok := s.Raw[name]
		g.setRecommended(tg, name, float64(r), ok)
	}
	// A metric the target no longer has (a reload removed it) has no
	// series either.
	tg.recommended = slices.DeleteFunc(tg.recommended, func(mv metricValue) bool {
		return !slices.Contains(s.AllMetrics, mv.metric.GetValue())
	})
	tg.pending = math.NaN()
	if s.DeferDesired {
		tg.pending = float64(s.Desired)
	} else {
		tg.desired = float64(s.Desired)
	}
	if tg.reason.GetValue() != s.Reason || tg.reason == nil {
		tg.reason = g.pair("reason", s.Reason) // the old reason's series goes
	}
	if s.Valid {
		tg.lastDecision = float64(s.At.UnixNano()) / 1e9
	}
	defer g.mu.Unlock()
	g.addLabeled(&tg.decisions, "reason", s.Reason, 1)
	if s.HadPrevious && s.Desired != s.Previous {
		dir, changes := 1, &tg.up
		if s.Desired < s.Previous {
			dir, changes = -1, &tg.down
		}
		changes.add(1)
		next := recommend.ScaleChange{At: s.At, Direction: dir}
		if tg.hasChange && recommend.IsReversal(tg.lastChange, next, recommend.ReversalWindow) {
			tg.reversals.add(1)
		}
		tg.lastChange, tg.hasChange = next, true
	}
}

// QueryError counts one failed or empty read for target.
func (m *Metrics) QueryError(target, reason string) {
	m.table.mu.Lock()
	defer m.table.mu.Unlock()
	m.table.addLabeled(&m.table.target(target).queryErrors, "reason", reason, 1)
}

// ApplyError counts one decision of target not written to its workload
// (infscale_apply_errors_total; reason as kube.Reason).
func (m *Metrics) ApplyError(target, reason string) {
	m.table.mu.Lock()
	defer m.table.mu.Unlock()
	m.table.addLabeled(&m.table.target(target).applyErrors, "reason", reason, 1)
}

// CostError counts one scale-down of target whose pod-deletion-cost
// patches did not all land (infscale_deletion_cost_errors_total; reason
// as kube.Reason of the first failure).
func (m *Metrics) CostError(target, reason string) {
	m.table.mu.Lock()
	defer m.table.mu.Unlock()
	m.table.addLabeled(&m.table.target(target).costErrors, "reason", reason, 1)
}

// Applied counts one write of target's spec.replicas
// (infscale_replica_writes_total).
func (m *Metrics) Applied(target string) {
	m.table.mu.Lock()
	defer m.table.mu.Unlock()
	m.table.target(target).applies.add(1)
}

// Deduplicated counts n series folded as copies of a pod's own for target
// (infscale_deduplicated_series_total).
func (m *Metrics) Deduplicated(target string, n int) {
	m.table.mu.Lock()
	defer m.table.mu.Unlock()
	m.table.target(target).dedup.add(float64(n))
}

// ObserveQuery records how long reading one target took.
func (m *Metrics) ObserveQuery(source string, d time.Duration) {
	m.queryDuration.WithLabelValues(source).Observe(d.Seconds())
}

// PrometheusClock records Prometheus's clock offset from serve's.
func (m *Metrics) PrometheusClock(d time.Duration) {
	m.promClock.WithLabelValues().Set(d.Seconds())
}

// PrometheusClockUnknown removes the offset's series: Prometheus's clock is
// not known (no answer yet, or no Prometheus).
func (m *Metrics) PrometheusClockUnknown() { m.promClock.Reset() }

// Cycle records one finished cycle.
func (m *Metrics) Cycle(d time.Duration) {
	m.cycles.Inc()
	m.cycleDuration.Set(d.Seconds())
}

// Init creates the zero-valued counters of a target so that rate() and
// increase() see them from the start (Prometheus's advice for counters).
func (m *Metrics) Init(target string) {
	m.table.mu.Lock()
	defer m.table.mu.Unlock()
	tg := m.table.target(target)
	tg.up.add(0)
	tg.down.add(0)
	tg.reversals.add(0)
}

// SetInterval sets infscale_decision_interval_seconds to d for every
// target that has the series (a target gets it at its first cycle):
// Run's ticker changed to d, so the next cycle is d away.
func (m *Metrics) SetInterval(d time.Duration) {
	m.table.mu.Lock()
	defer m.table.mu.Unlock()
	for _, tg := range m.table.targets {
		if !math.IsNaN(tg.interval) {
			tg.interval = d.Seconds()
		}
	}
}

// Forget removes every series of a target (after a reload dropped it).
func (m *Metrics) Forget(target string) {
	m.table.mu.Lock()
	defer m.table.mu.Unlock()
	m.table.forget(target)
}

// Restore exports a desired value restored from the state dir before the
// first cycle, so that consumers see no gap across a restart.
func (m *Metrics) Restore(target string, desired int) {
	m.table.mu.Lock()
	defer m.table.mu.Unlock()
	m.table.target(target).desired = float64(desired)
}

// Reloaded counts a configuration reload: ok true for one applied, false
// for one refused (the running configuration kept).
func (m *Metrics) Reloaded(ok bool) {
	result := "success"
	if !ok {
		result = "failure"
	}
	m.configReloads.WithLabelValues(result).Inc()
	if ok {
		m.configOK.Set(1)
	} else {
		m.configOK.Set(0)
	}
}
