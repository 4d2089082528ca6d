package serve

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var t0 = time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)

// TestMetricsRecord exports one decision and compares the exposition with
// values written by hand from the snapshot.
func TestMetricsRecord(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "v0.0.0-test")
	m.Init("chat")
	m.Record(Snapshot{
		Target: "chat", At: t0, Decided: true, Valid: true,
		// queue 60 = running 50 + waiting 10; kv unknown (NaN: no series);
		// cpu 46 % is exported as the ratio 0.46.
		Signals: map[string]float64{"queue": 60, "running": 50, "waiting": 10, "kv": math.NaN(), "cpu": 46},
		Desired: 3, Previous: 1, HadPrevious: true, Current: 1, Reason: "DesiredWithinRange",
		Raw: map[string]int{"queue": 3}, AllMetrics: []string{"queue", "kv"},
	})
	want := `
# HELP infscale_desired_replicas Replicas infscale recommends for the target (the contract with KEDA / the HPA); holds its last value when signals are unknown; never NaN.
# TYPE infscale_desired_replicas gauge
infscale_desired_replicas{target="chat"} 3
# HELP infscale_recommended_replicas Raw recommendation of one metric (the HPA's missing-replicas rule applied; before tolerance, the guards, lookahead, stabilisation, rate limits and bounds); absent when the metric's signal is unknown.
# TYPE infscale_recommended_replicas gauge
infscale_recommended_replicas{metric="queue",target="chat"} 3
# HELP infscale_queue_requests Requests running + waiting (+ held) summed over the target's replicas, as last observed; absent when unknown.
# TYPE infscale_queue_requests gauge
infscale_queue_requests{target="chat"} 60
# HELP infscale_cpu_utilization_ratio Pod CPU as a fraction of the CPU request averaged over reporting replicas (1 = 100%); absent when unknown.
# TYPE infscale_cpu_utilization_ratio gauge
infscale_cpu_utilization_ratio{target="chat"} 0.46
# HELP infscale_scale_changes_total Changes of the desired replicas, by direction (up, down).
# TYPE infscale_scale_changes_total counter
infscale_scale_changes_total{direction="down",target="chat"} 0
infscale_scale_changes_total{direction="up",target="chat"} 1
# HELP infscale_decision_reason 1 for the reason of the target's last decision (DesiredWithinRange, tolerance, ScaleDownStabilized, ScaleUpLimit, TooManyReplicas, ...: docs/recommend.md#reasons); only the current reason has a series.
# TYPE infscale_decision_reason gauge
infscale_decision_reason{reason="DesiredWithinRange",target="chat"} 1
# HELP infscale_last_decision_timestamp_seconds Unix time of the target's last successful decision (some signal known); alert when it falls behind.
# TYPE infscale_last_decision_timestamp_seconds gauge
infscale_last_decision_timestamp_seconds{target="chat"} 1.7676072e+09
`
	if err := testutil.GatherAndCompare(gatherer(m, reg), strings.NewReader(want),
		"infscale_desired_replicas", "infscale_recommended_replicas", "infscale_queue_requests", "infscale_cpu_utilization_ratio",
		"infscale_kv_cache_usage_ratio", "infscale_scale_changes_total", "infscale_decision_reason", "infscale_last_decision_timestamp_seconds"); err != nil {
		t.Error(err)
	}

	// Next: the reason changes, desired goes down 3 -> 2 within the default
	// 5 min reversal window of the up change: one reversal; the old
	// reason's series is gone.
	m.Record(Snapshot{Target: "chat", At: t0.Add(time.Minute), Decided: true, Valid: true,
		Signals: map[string]float64{}, Desired: 2, Previous: 3, HadPrevious: true, Current: 3, Reason: "ScaleDownStabilized",
		Raw: map[string]int{}, AllMetrics: []string{"queue"}})
	if got := counterValue(t, m, "scale_reversals_total", "chat", ""); got != 1 {
		t.Errorf("reversals %v, want 1", got)
	}
	if n := tableCount(t, m, "infscale_decision_reason"); n != 1 {
		t.Errorf("%d decision_reason series, want only the current one", n)
	}
	if n := tableCount(t, m, "infscale_queue_requests"); n != 0 {
		t.Errorf("queue unknown must have no series, got %d", n)
	}
	if n := tableCount(t, m, "infscale_recommended_replicas"); n != 0 {
		t.Errorf("raw recommendation of an unknown metric must have no series, got %d", n)
	}
	// A reload removed the ttft metric: its raw series goes with it, the
	// queue metric's stays.
	m.Record(Snapshot{Target: "chat", At: t0.Add(2 * time.Minute), Decided: true, Valid: true,
		Signals: map[string]float64{}, Desired: 2, Previous: 2, HadPrevious: true, Current: 2, Reason: "DesiredWithinRange",
		Raw: map[string]int{"queue": 2, "ttft": 3}, AllMetrics: []string{"queue", "ttft"}})
	m.Record(Snapshot{Target: "chat", At: t0.Add(3 * time.Minute), Decided: true, Valid: true,
		Signals: map[string]float64{}, Desired: 2, Previous: 2, HadPrevious: true, Current: 2, Reason: "DesiredWithinRange",
		Raw: map[string]int{"queue": 2}, AllMetrics: []string{"queue"}})
	if err := testutil.GatherAndCompare(m.table, strings.NewReader(`
# HELP infscale_recommended_replicas Raw recommendation of one metric (the HPA's missing-replicas rule applied; before tolerance, the guards, lookahead, stabilisation, rate limits and bounds); absent when the metric's signal is unknown.
# TYPE infscale_recommended_replicas gauge
infscale_recommended_replicas{metric="queue",target="chat"} 2
`), "infscale_recommended_replicas"); err != nil {
		t.Errorf("after the ttft metric was removed: %v", err)
	}
	m.Forget("chat")
	if n := tableCount(t, m, "infscale_desired_replicas"); n != 0 {
		t.Errorf("forgotten target still has %d desired series", n)
	}
}

// TestMetricsLint runs client_golang's linter (promlint) over every metric.
func TestMetricsLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "test")
	m.Init("chat")
	m.Record(Snapshot{Target: "chat", At: t0, Decided: true, Valid: true, Desired: 1, Current: 1, Reason: "DesiredWithinRange",
		Signals: map[string]float64{"queue": 1, "running": 1, "waiting": 0, "held": 0, "kv": 0.1, "cpu": 30, "ttft": 0.2},
		Raw:     map[string]int{"queue": 1}, AllMetrics: []string{"queue"}, StuckKnown: true})
	m.QueryError("chat", "timeout")
	m.ObserveQuery("scrape", 10*time.Millisecond)
	m.Cycle(time.Millisecond)
	problems, err := testutil.GatherAndLint(gatherer(m, reg))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestMetricsDocumented checks that docs/metrics.md's table, the one
// metric table of the repository (README.md links to it and has none),
// lists every metric the exporter registers, with its type and labels,
// and nothing it does not.
func TestMetricsDocumented(t *testing.T) {
	root := filepath.Join("..", "..")
	row := "| `infscale_desired_replicas` |"
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(readme), row) {
		t.Error("README.md has a metric table: keep the one table in docs/metrics.md and link to it")
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if !strings.Contains(doc, row) {
		t.Fatal("docs/metrics.md has no metric table")
	}
	// documented maps a row's metric to its type and labels cells: the
	// labels are the cell's backticked names outside parentheses (the
	// role of a P/D pool and a label's values are said within them).
	documented := map[string]bool{}
	docType, docLabels := map[string]string{}, map[string]string{}
	paren := regexp.MustCompile(`\([^)]*\)`)
	for _, m := range regexp.MustCompile("(?m)^\\| `(infscale_[a-z_]+)` \\| ([a-z]+) \\|([^|]*)\\|").FindAllStringSubmatch(doc, -1) {
		documented[m[1]] = true
		docType[m[1]] = m[2]
		var labels []string
		for _, l := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(paren.ReplaceAllString(m[3], ""), -1) {
			labels = append(labels, l[1])
		}
		sort.Strings(labels)
		docLabels[m[1]] = strings.Join(labels, ",")
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "test")
	m.Init("x")
	m.Record(Snapshot{Target: "x", At: t0, Interval: 15 * time.Second, Decided: true, Valid: true, Desired: 1, Current: 1, Reason: "DesiredWithinRange",
		Signals: map[string]float64{"queue": 1, "running": 1, "waiting": 0, "held": 0, "kv": 0.1, "cpu": 30, "ttft": 0.2,
			"queue_time": 0.1, "itl": 0.02, "arrival_rate": 2, "prompt_tokens_rate": 400, "generation_tokens_rate": 200, "mean_prompt": 200, "mean_output": 100, "prefix_cache_hit": 0.5},
		Raw: map[string]int{"queue": 1}, AllMetrics: []string{"queue"}, StuckKnown: true})
	m.QueryError("x", "timeout")
	m.Deduplicated("x", 1)
	m.Applied("x")
	m.ApplyError("x", "scaled_by_hpa")
	m.CostError("x", "forbidden")
	m.ObserveQuery("scrape", time.Millisecond)
	m.PrometheusClock(-time.Second)
	m.Cycle(time.Millisecond)
	tn := NewTuning(reg) // serve's self-tuning series (tuning.go)
	tn.candidate.WithLabelValues("x").Set(1)
	tn.info.WithLabelValues("x", "queue:8", TuneStateShadow, "0123456789abcdef").Set(1)
	tn.revertedVec.WithLabelValues("x", "queue:4", "0123456789abcdef").Set(1)
	tn.errorsVec.WithLabelValues("x").Inc()
	tn.lastOK.WithLabelValues("x").Set(0)
	mfs, err := gatherer(m, reg).Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, mf := range mfs {
		exported[mf.GetName()] = true
		if !documented[mf.GetName()] {
			t.Errorf("%s is exported but not in the metric table", mf.GetName())
			continue
		}
		if typ := strings.ToLower(mf.GetType().String()); typ != docType[mf.GetName()] {
			t.Errorf("%s is a %s, the metric table says %s", mf.GetName(), typ, docType[mf.GetName()])
		}
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		sort.Strings(labels)
		if got := strings.Join(labels, ","); got != docLabels[mf.GetName()] {
			t.Errorf("%s has labels [%s], the metric table says [%s]", mf.GetName(), got, docLabels[mf.GetName()])
		}
	}
	for name := range documented {
		if !exported[name] {
			t.Errorf("%s is documented but not exported", name)
		}
	}
}

// tableCount is the number of series of family name in m's table.
func tableCount(t *testing.T, m *Metrics, name string) int {
	t.Helper()
	n, err := testutil.GatherAndCount(m.table, name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// counterValue is the value of counter infscale_<family> for target and
// its second label's value (direction or reason; "" for none), read from
// the exposition; 0 when the series is absent.
func counterValue(t *testing.T, m *Metrics, family, target, label string) float64 {
	t.Helper()
	mfs, err := m.table.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != Namespace+"_"+family {
			continue
		}
		for _, s := range mf.GetMetric() {
			var tgt, other string
			for _, l := range s.GetLabel() {
				if l.GetName() == "target" {
					tgt = l.GetValue()
				} else {
					other = l.GetValue()
				}
			}
			if tgt == target && other == label {
				if s.GetCounter().GetCreatedTimestamp() == nil {
					t.Errorf("%s{target=%q} has no created timestamp", family, target)
				}
				return s.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// The counters of a target: Init creates the zero changes and reversals;
// two decisions (reasons metric, then metric again) and two query errors
// (empty, empty) count 2 and 2; Forget removes every series of the target.
// Counters carry a created timestamp, as client_golang's own do.
func TestMetricsCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "v0.0.0-test")
	m.Init("chat")
	for range 2 {
		m.Record(Snapshot{Target: "chat", At: t0, Decided: true, Valid: true, Desired: 1, Current: 1, Reason: "DesiredWithinRange"})
		m.QueryError("chat", "empty")
	}
	want := `
# HELP infscale_decisions_total Decisions made, by the reason that decided them.
# TYPE infscale_decisions_total counter
infscale_decisions_total{reason="DesiredWithinRange",target="chat"} 2
# HELP infscale_query_errors_total Failed or empty signal reads, by reason (timeout, unavailable, bad_response, empty, nan, ...).
# TYPE infscale_query_errors_total counter
infscale_query_errors_total{reason="empty",target="chat"} 2
# HELP infscale_scale_reversals_total Changes of the desired replicas opposite to the previous change made less than 5m before (the HPA's default scale-down window, whatever the target's): thrash.
# TYPE infscale_scale_reversals_total counter
infscale_scale_reversals_total{target="chat"} 0
`
	if err := testutil.GatherAndCompare(gatherer(m, reg), strings.NewReader(want),
		"infscale_decisions_total", "infscale_query_errors_total", "infscale_scale_reversals_total"); err != nil {
		t.Error(err)
	}
	if got := counterValue(t, m, "scale_changes_total", "chat", "down"); got != 0 {
		t.Errorf("changes down %v, want 0", got)
	}
	m.Forget("chat")
	if n, err := testutil.GatherAndCount(gatherer(m, reg), "infscale_decisions_total", "infscale_query_errors_total",
		"infscale_scale_changes_total", "infscale_scale_reversals_total"); err != nil || n != 0 {
		t.Errorf("%d series after Forget (%v), want 0", n, err)
	}
}
