package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
	"github.com/infscale/infscale/pkg/tune"
)

// tuneTestConfig is a serve config of the synthetic week's chat
// Deployment with a tune: block.
func tuneTestConfig(t *testing.T, url, mode, slo string) *config.File {
	t.Helper()
	f, err := config.Parse([]byte(fmt.Sprintf(`prometheus:
  url: %s
interval: 15s
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  replicas: 'sum(kube_deployment_spec_replicas{namespace="llm",deployment="chat"})'
  metrics:
  - type: queue
    target: 24
  replica: {gpu: h100-sxm, model: llama-3-8b}
  max: 20
  tune:
    every: 1h
    history: 6h
    max_miss: 0.01
    mode: %s
    slo_ttft: %s
`, url, mode, slo)), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// gauge is the value of the series of name whose labels include want,
// and whether there is one.
func gauge(t *testing.T, g prometheus.Gatherer, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				if !hasLabel(m, k, v) {
					continue next
				}
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

// TestTuningOnPrometheusWeek: serve with a tune: block on a real
// Prometheus holding the synthetic week (pkg/synthweek). Shadow mode:
// the target is tuned on 6 hours of its own history and the candidate's
// decision is exported beside the live one, the live policy untouched.
// Reloaded in adopt mode: the candidate, which holds, decides the target
// from the next cycle (its metrics are the decision's), with one audit
// line; a later step within every switches nothing. With the SLO
// reloaded at 1 ms the candidate, which held at 2 s, is dropped (the
// configured policy decides, no revert line), and tuned again at 1 ms,
// which no request meets (the week's TTFT histogram has no request faster
// than its first bucket, 0.1 s), it is rejected. (Revert on live misses:
// TestTuningRevertOnPrometheus.)
func TestTuningOnPrometheusWeek(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week and tunes on it")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{})
	now := tr.End.Add(-2 * time.Hour)
	clock := func() time.Time { return now }
	ctx := context.Background()

	cfg := tuneTestConfig(t, srv.URL, "shadow", "2s")
	src, err := NewPrometheusSource(cfg.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	var audit bytes.Buffer
	loop := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock, Audit: &audit})
	tn := NewTuning(reg)
	tn.API, tn.Period, tn.Now = src.Evaluator.API, 15*time.Second, clock
	tn.Log = slog.New(slog.NewTextHandler(t.Output(), nil))
	// A smaller space than tune's default keeps the test to a few
	// hundred replays: queue and demand, each with a floor and a hold.
	tn.Options = tune.TargetOptions{Workers: 2, Space: tune.Space{
		Metrics: []tune.MetricSpace{
			{Name: "demand", Targets: []float64{0.6, 0.8}, Round: 0.05, Guards: true},
			{Name: "queue", Targets: []float64{0.25, 0.5}, Integer: true, PerBatch: true},
		},
		Dims: tune.DefaultSpace.Dims,
	}}
	loop.SetTuning(tn)
	if err := loop.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	g := gatherer(loop.metrics, reg)
	loop.Cycle(ctx)
	if _, ok := gauge(t, g, "infscale_candidate_desired_replicas", nil); ok {
		t.Fatal("a candidate before any tuning")
	}
	live, ok := gauge(t, g, "infscale_desired_replicas", map[string]string{"target": "chat"})
	if !ok || live < 1 {
		t.Fatalf("no live decision on the week's data: %v %v", live, ok)
	}

	// Shadow.
	tn.Step(ctx)
	state, policy := tuneState(tn, "chat")
	if state != TuneStateShadow || policy == "" {
		t.Fatalf("after tuning: state %q policy %q, want shadow", state, policy)
	}
	loop.Cycle(ctx)
	cand, ok := gauge(t, g, "infscale_candidate_desired_replicas", map[string]string{"target": "chat"})
	if !ok || cand < 1 || cand > 20 {
		t.Fatalf("candidate desired %v (present %v), want 1..20 (max)", cand, ok)
	}
	if v, ok := gauge(t, g, "infscale_tuned_policy_info", map[string]string{"target": "chat", "policy": policy, "state": "shadow"}); !ok || v != 1 {
		t.Errorf("infscale_tuned_policy_info{policy=%q,state=shadow}: %v %v", policy, v, ok)
	}
	recs := loop.Recent()["chat"]
	if raw := recs[len(recs)-1].Raw; len(raw) != 1 || raw[0].Signal.String() != "queue" {
		t.Errorf("shadow mode changed the live policy: raw %+v, want the configured queue metric alone", raw)
	}
	if strings.Contains(audit.String(), `"tune"`) {
		t.Errorf("shadow mode wrote a tuning event:\n%s", audit.String())
	}
	t.Logf("shadow: candidate %s decides %v, live %v", policy, cand, live)

	// Adopt: the reload adopts the candidate at hand, which holds.
	res := tn.targets["chat"].res
	if !res.Holds {
		t.Fatalf("the candidate %s does not hold (in %+v out %+v stress %+v): nothing to adopt", res.Policy, res.InSample, res.OutOfSample, res.Stress)
	}
	if err := loop.SetConfig(context.Background(), tuneTestConfig(t, srv.URL, "adopt", "2s")); err != nil {
		t.Fatal(err)
	}
	if state, _ := tuneState(tn, "chat"); state != TuneStateAdopted {
		t.Fatalf("after the reload in adopt mode: state %q, want adopted", state)
	}
	now = now.Add(time.Minute)
	loop.Cycle(ctx)
	recs = loop.Recent()["chat"]
	want := map[string]bool{res.Candidate.Metric: true}
	if res.Candidate.Guard > 0 {
		want["ttft"], want["queuewait"] = true, true
	}
	var got []string
	for _, r := range recs[len(recs)-1].Raw {
		got = append(got, r.Signal.String())
	}
	if len(got) != len(want) || !want[got[0]] {
		t.Errorf("adopted: the decision's metrics %v, want the candidate's %v", got, want)
	}
	now = now.Add(10 * time.Minute)
	tn.Step(ctx) // within every: no re-tune, no second switch
	if n := strings.Count(audit.String(), `"event":"adopted"`); n != 1 {
		t.Errorf("%d adopt lines, want 1:\n%s", n, audit.String())
	}
	line := ""
	for _, l := range strings.Split(audit.String(), "\n") {
		if strings.Contains(l, `"tune"`) {
			line = l
		}
	}
	if !strings.Contains(line, `"target":"chat"`) || !strings.Contains(line, `"policy":"`+res.Policy+`"`) || !strings.Contains(line, `"from":"configured"`) {
		t.Errorf("audit line %s", line)
	}
	t.Logf("audit: %s", line)

	// The SLO tightened to 1 ms: the candidate held on a 2 s SLO, so it
	// is dropped at the reload (the configured policy decides again, no
	// revert line: nothing was measured against it); the next Step tunes
	// again at 1 ms, where nothing holds: rejected.
	if err := loop.SetConfig(context.Background(), tuneTestConfig(t, srv.URL, "adopt", "1ms")); err != nil {
		t.Fatal(err)
	}
	if state, _ := tuneState(tn, "chat"); state != "" || strings.Contains(audit.String(), `"event":"reverted"`) {
		t.Errorf("after the SLO changed: state %q, want none (dropped); audit:\n%s", state, audit.String())
	}
	now = now.Add(time.Minute)
	loop.Cycle(ctx)
	recs = loop.Recent()["chat"]
	if raw := recs[len(recs)-1].Raw; len(raw) != 1 || raw[0].Signal.String() != "queue" {
		t.Errorf("dropped: raw %+v, want the configured queue metric again", raw)
	}
	tn.Step(ctx)
	if state, _ := tuneState(tn, "chat"); state != TuneStateRejected {
		t.Errorf("tuned again at a 1 ms SLO: state %q, want rejected", state)
	}
}

// TestTuningRevertOnPrometheus: an adopted candidate whose live TTFT
// misses exceed max_miss is reverted. The result (a tune.dir file, as the
// CronJob writes) was tuned for a 1 ms SLO and a 1% budget at serve's
// 15 s interval and holds; on the synthetic week no request gets its
// first token within 1 ms, and those above its TTFT histogram's first
// bound, 0.1 s (the buckets wholly above the SLO, what the live check
// counts), are about a quarter of them, so 5 minutes after the switch the
// live misses are over 1%: the configured queue metric decides again, state reverted,
// with an audit line; and so it stays after a restart, and when a later
// result chooses it again.
func TestTuningRevertOnPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{})
	now := tr.End.Add(-2 * time.Hour)
	clock := func() time.Time { return now }
	ctx := context.Background()
	dir := t.TempDir()
	cfg := tuneTestConfig(t, srv.URL, "adopt", "1ms")
	cfg.Targets[0].Tune.Dir = dir
	src, err := NewPrometheusSource(cfg.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	var audit bytes.Buffer
	loop := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock, Audit: &audit})
	tn := NewTuning(reg)
	state := t.TempDir()
	tn.API, tn.Period, tn.Now, tn.StateDir = src.Evaluator.API, 15*time.Second, clock, state
	var logs buftest.Buffer // Step's goroutines log too
	tn.Log = slog.New(slog.NewTextHandler(io.MultiWriter(t.Output(), &logs), nil))
	loop.SetTuning(tn)
	if err := loop.SetConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	c := tune.Candidate{Metric: "queue", Target: 8}
	if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: now, SLOTTFT: 0.001, Period: 15, Policy: c.Policy(), Candidate: c,
		Outcome: tune.Outcome{Holds: true, MaxMissPct: 1}}); err != nil {
		t.Fatal(err)
	}
	tn.Step(ctx)
	if state, p := tuneState(tn, "chat"); state != TuneStateAdopted || p != "queue:8" {
		t.Fatalf("state %q %q, want adopted queue:8", state, p)
	}
	now = now.Add(time.Minute)
	loop.Cycle(ctx)
	recs := loop.Recent()["chat"]
	if raw := recs[len(recs)-1].Raw; len(raw) != 1 || raw[0].Signal.String() != "queue" || raw[0].Target != 8 {
		t.Errorf("adopted: raw %+v, want queue at 8", raw)
	}
	now = now.Add(5 * time.Minute)
	tn.Step(ctx)
	if state, _ := tuneState(tn, "chat"); state != TuneStateReverted {
		t.Errorf("after live misses over budget: state %q, want reverted", state)
	}
	// slo_ttft 1 ms lies inside the week's first TTFT bucket (0, 0.1 s]
	// (a layout config cannot know): said once, with the bucket.
	if n := strings.Count(logs.String(), `msg="tune.slo_ttft is inside a bucket of the target's TTFT histogram`); n != 1 || !strings.Contains(logs.String(), `bucket="(0s, 0.1s]"`) {
		t.Errorf("%d straddled-bucket warnings, want one naming (0s, 0.1s]; log:\n%s", n, logs.String())
	}
	// The revert line: interpolated within the first bucket [0, 0.1 s],
	// at most 1 ms / 100 ms = 1% of the requests are under 1 ms, so the
	// live miss ratio is 0.99 to 1.
	var ev struct {
		Target string `json:"target"`
		Tune   struct {
			Event, Policy string
			MaxMissPct    float64 `json:"max_miss_pct"`
			LiveMissRatio float64 `json:"live_miss_ratio"`
			LiveRequests  float64 `json:"live_requests"`
		} `json:"tune"`
	}
	for _, l := range strings.Split(audit.String(), "\n") {
		if strings.Contains(l, `"event":"reverted"`) {
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if e := ev.Tune; ev.Target != "chat" || e.Policy != "queue:8" || e.MaxMissPct != 1 || e.LiveMissRatio < 0.2 || e.LiveMissRatio > 0.3 || e.LiveRequests <= 0 {
		t.Errorf("revert line %+v, want chat's queue:8 at a 1%% budget, a live miss ratio of 0.2 to 0.3; audit:\n%s", ev, audit.String())
	}
	now = now.Add(time.Minute)
	loop.Cycle(ctx)
	recs = loop.Recent()["chat"]
	if raw := recs[len(recs)-1].Raw; len(raw) != 1 || raw[0].Signal.String() != "queue" || raw[0].Target != 24 {
		t.Errorf("reverted: raw %+v, want the configured queue at 24 again", raw)
	}

	// serve restarts (the same --state-dir): the result file is the same,
	// and the reverted candidate stays reverted. It was adopted again at
	// the first Step, to miss the SLO for 5 more minutes.
	now = now.Add(time.Minute)
	var audit2 bytes.Buffer
	reg2 := prometheus.NewRegistry()
	loop2 := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg2, "test"), Interval: 15 * time.Second, Now: clock, Audit: &audit2})
	tn2 := NewTuning(reg2)
	tn2.API, tn2.Period, tn2.Now, tn2.StateDir = src.Evaluator.API, 15*time.Second, clock, state
	loop2.SetTuning(tn2)
	if err := loop2.SetConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	tn2.Step(ctx)
	if state, p := tuneState(tn2, "chat"); state != TuneStateReverted || p != "queue:8" || strings.Contains(audit2.String(), `"event":"adopted"`) {
		t.Errorf("after a restart: state %q %q, want reverted queue:8; audit:\n%s", state, p, audit2.String())
	}
	loop2.Cycle(ctx)
	recs = loop2.Recent()["chat"]
	if raw := recs[len(recs)-1].Raw; len(raw) != 1 || raw[0].Target != 24 {
		t.Errorf("after a restart: raw %+v, want the configured queue at 24", raw)
	}

	// An hour later (every has passed since the revert) the CronJob's
	// next result chooses queue:8 again: it stays reverted, not adopted
	// (it was, to miss the SLO again for 5 minutes, once per every). A
	// result of another policy, queue:16, is adopted.
	now = now.Add(time.Hour)
	next := func(c tune.Candidate) {
		if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: now, SLOTTFT: 0.001, Period: 15, Policy: c.Policy(), Candidate: c,
			Outcome: tune.Outcome{Holds: true, MaxMissPct: 1}}); err != nil {
			t.Fatal(err)
		}
		tn2.Step(ctx)
	}
	next(c)
	if state, p := tuneState(tn2, "chat"); state != TuneStateReverted || p != "queue:8" || strings.Contains(audit2.String(), `"event":"adopted"`) {
		t.Errorf("queue:8 chosen again: state %q %q, want reverted; audit:\n%s", state, p, audit2.String())
	}
	now = now.Add(time.Minute)
	next(tune.Candidate{Metric: "queue", Target: 16})
	if state, p := tuneState(tn2, "chat"); state != TuneStateAdopted || p != "queue:16" {
		t.Errorf("queue:16: state %q %q, want adopted", state, p)
	}
}

// TestTuningRevertKeepsLaterCandidate: queue:8 is adopted at 10:00 (the
// week's end less 2h, called 10:00 here), and the CronJob's next result,
// queue:16, comes at 10:01, within every (1h) of the switch: it waits in
// shadow. At 10:06 queue:8's live misses (slo_ttft 1 ms) revert it. The
// target's last candidate is still queue:16 (its
// infscale_candidate_desired_replicas is queue:16's): the info series
// stays {policy="queue:16", state="shadow"} (it read queue:8 reverted,
// and queue:16 was never adopted without a newer file), and queue:16 is
// adopted once every has passed since the revert, at 11:06, not at 11:05.
func TestTuningRevertKeepsLaterCandidate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{})
	t0 := tr.End.Add(-2 * time.Hour)
	now := t0
	clock := func() time.Time { return now }
	ctx := context.Background()
	dir := t.TempDir()
	cfg := tuneTestConfig(t, srv.URL, "adopt", "1ms")
	cfg.Targets[0].Tune.Dir = dir
	src, err := NewPrometheusSource(cfg.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	var audit bytes.Buffer
	loop := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock, Audit: &audit})
	tn := NewTuning(reg)
	tn.API, tn.Period, tn.Now = src.Evaluator.API, 15*time.Second, clock
	loop.SetTuning(tn)
	if err := loop.SetConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	write := func(target float64) {
		c := tune.Candidate{Metric: "queue", Target: target}
		if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: now, SLOTTFT: 0.001, Period: 15, Policy: c.Policy(), Candidate: c,
			Outcome: tune.Outcome{Holds: true, MaxMissPct: 1}}); err != nil {
			t.Fatal(err)
		}
		tn.Step(ctx)
	}
	write(8)
	now = t0.Add(time.Minute)
	write(16)
	if s, p := tuneState(tn, "chat"); s != TuneStateShadow || p != "queue:16" {
		t.Fatalf("10:01: %q %q, want queue:16 in shadow (within every of the switch)", s, p)
	}
	now = t0.Add(6 * time.Minute)
	tn.Step(ctx)
	if !strings.Contains(audit.String(), `"event":"reverted","policy":"queue:8"`) {
		t.Fatalf("10:06: no revert of queue:8; audit:\n%s", audit.String())
	}
	g := gatherer(loop.metrics, reg)
	if s, p := tuneState(tn, "chat"); s != TuneStateShadow || p != "queue:16" {
		t.Errorf("10:06, after the revert: %q %q, want queue:16 in shadow still", s, p)
	}
	if _, ok := gauge(t, g, "infscale_tuned_policy_info", map[string]string{"policy": "queue:16", "state": "shadow"}); !ok {
		t.Errorf("10:06: no info series for queue:16 in shadow")
	}
	if _, ok := gauge(t, g, "infscale_tuned_policy_info", map[string]string{"policy": "queue:8"}); ok {
		t.Errorf("10:06: an info series for queue:8, which is not the last candidate")
	}
	now = t0.Add(65 * time.Minute)
	tn.Step(ctx)
	if s, _ := tuneState(tn, "chat"); s != TuneStateShadow {
		t.Errorf("11:05: %q, want shadow (every has not passed since the revert at 10:06)", s)
	}
	now = t0.Add(66 * time.Minute)
	tn.Step(ctx)
	if s, p := tuneState(tn, "chat"); s != TuneStateAdopted || p != "queue:16" {
		t.Errorf("11:06: %q %q, want queue:16 adopted", s, p)
	}
	at := t0.Add(66 * time.Minute).UTC().Format(time.RFC3339)
	if !strings.Contains(audit.String(), `"at":"`+at+`","tune":{"event":"adopted","policy":"queue:16","from":"configured"`) {
		t.Errorf("audit %s: want queue:16 adopted from configured at %s", audit.String(), at)
	}
}

// reloadOnFirstRange is an API that runs reload once, at its first range
// query (during a tuning run's history read), then answers as api.
type reloadOnFirstRange struct {
	promql.API
	once   sync.Once
	reload func()
}

func (r *reloadOnFirstRange) Range(ctx context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	r.once.Do(r.reload)
	return r.API.Range(ctx, q, start, end, step)
}

// TestTuningReloadDuringRun: an in-process run starts on slo_ttft 2s,
// and a reload to 1s comes while it reads the history. The run's result,
// judged at 2 s, is not taken (no candidate series, no state; it was
// shadowed until a later reload, its "holds" judged on the old SLO), the
// log says why, and the target is tuned again at the next look, whose
// result records the 1 s SLO.
func TestTuningReloadDuringRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week and tunes on it")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{})
	now := tr.End.Add(-2 * time.Hour)
	clock := func() time.Time { return now }
	ctx := context.Background()
	cfg := tuneTestConfig(t, srv.URL, "shadow", "2s")
	src, err := NewPrometheusSource(cfg.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	loop := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock})
	tn := NewTuning(reg)
	var log buftest.Buffer
	api := &reloadOnFirstRange{API: src.Evaluator.API, reload: func() {
		if err := loop.SetConfig(ctx, tuneTestConfig(t, srv.URL, "shadow", "1s")); err != nil {
			t.Error(err)
		}
	}}
	tn.API, tn.Period, tn.Now, tn.Log = api, 15*time.Second, clock, slog.New(slog.NewTextHandler(&log, nil))
	tn.Options = tune.TargetOptions{Workers: 2, Space: tune.Space{
		Metrics: []tune.MetricSpace{{Name: "queue", Targets: []float64{0.25, 0.5}, Integer: true, PerBatch: true}},
		Dims:    tune.DefaultSpace.Dims,
	}}
	loop.SetTuning(tn)
	if err := loop.SetConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	tn.Step(ctx)
	if s, p := tuneState(tn, "chat"); s != "" || p != "" {
		t.Errorf("after the run across the reload: %q %q, want no candidate", s, p)
	}
	if _, ok := gauge(t, gatherer(loop.metrics, reg), "infscale_tuned_policy_info", nil); ok {
		t.Error("an info series for a result tuned at the old slo_ttft")
	}
	if !strings.Contains(log.String(), "tuning result not used: a reload changed the target's terms during the run") || !strings.Contains(log.String(), "slo_ttft 2s (the target's is 1s)") {
		t.Errorf("log %q: want the result refused, naming slo_ttft 2s against 1s", log.String())
	}
	tn.Step(ctx)
	tn.mu.Lock()
	res := tn.targets["chat"].res
	tn.mu.Unlock()
	if res == nil || res.SLOTTFT != 1 {
		t.Errorf("the next look: result %+v, want one tuned at slo_ttft 1 s", res)
	}
}

// TestTuningLiveMissesOverHistory: the live misses of a candidate adopted
// long ago are read over tune.history (6h here) before now, not since the
// switch: a candidate re-chosen by each later result keeps its adoption
// time, and misses counted over every day since then were diluted until
// none could revert it. queue:8 is adopted 3 days before the week's end,
// and first checked 2 hours before it (slo_ttft 1 ms: every request
// misses, and the live check counts those above the histogram's first
// bound, 0.1 s, about a quarter): reverted, its audit
// line counting from 8 hours before the week's end (now less 6h), not
// from the switch 3 days before it.
func TestTuningLiveMissesOverHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week")
	}
	srv, tr := synthweektest.Serve(t, synthweek.Config{})
	adopted := tr.End.Add(-72 * time.Hour)
	now := adopted
	clock := func() time.Time { return now }
	ctx := context.Background()
	dir := t.TempDir()
	cfg := tuneTestConfig(t, srv.URL, "adopt", "1ms")
	cfg.Targets[0].Tune.Dir = dir
	src, err := NewPrometheusSource(cfg.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	var audit bytes.Buffer
	loop := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: clock, Audit: &audit})
	tn := NewTuning(reg)
	tn.API, tn.Period, tn.Now = src.Evaluator.API, 15*time.Second, clock
	loop.SetTuning(tn)
	if err := loop.SetConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	c := tune.Candidate{Metric: "queue", Target: 8}
	if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: now, SLOTTFT: 0.001, Period: 15, Policy: c.Policy(), Candidate: c,
		Outcome: tune.Outcome{Holds: true, MaxMissPct: 1}}); err != nil {
		t.Fatal(err)
	}
	tn.Step(ctx)
	if state, _ := tuneState(tn, "chat"); state != TuneStateAdopted {
		t.Fatalf("state %q, want adopted", state)
	}
	now = tr.End.Add(-2 * time.Hour)
	tn.Step(ctx)
	if state, _ := tuneState(tn, "chat"); state != TuneStateReverted {
		t.Errorf("state %q, want reverted", state)
	}
	var ev struct {
		Tune struct {
			Event         string
			Since         time.Time `json:"since"`
			LiveMissRatio float64   `json:"live_miss_ratio"`
		} `json:"tune"`
	}
	for _, l := range strings.Split(audit.String(), "\n") {
		if strings.Contains(l, `"event":"reverted"`) {
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := tr.End.Add(-8 * time.Hour); !ev.Tune.Since.Equal(want) || ev.Tune.LiveMissRatio < 0.2 || ev.Tune.LiveMissRatio > 0.3 {
		t.Errorf("revert line since %s, live miss ratio %g; want since %s (6h before the check) and 0.2 to 0.3; audit:\n%s", ev.Tune.Since, ev.Tune.LiveMissRatio, want, audit.String())
	}
}
