package serve

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/infscale/infscale/pkg/config"
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
// tightened to 1 ms, which most requests miss (the week's TTFT histogram
// has no request faster than its first bucket, 0.1 s), the live misses
// since the switch exceed max_miss and the candidate is reverted, with a
// second audit line.
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

	// Revert: the SLO tightened to 1 ms; 50 minutes after the switch
	// (within every: no re-tune) the live misses are read.
	if err := loop.SetConfig(context.Background(), tuneTestConfig(t, srv.URL, "adopt", "1ms")); err != nil {
		t.Fatal(err)
	}
	now = now.Add(39 * time.Minute)
	tn.Step(ctx)
	if state, _ := tuneState(tn, "chat"); state != TuneStateReverted || !strings.Contains(audit.String(), `"event":"reverted"`) {
		t.Errorf("after live misses over budget: state %q, audit:\n%s", state, audit.String())
	}
	now = now.Add(time.Minute)
	loop.Cycle(ctx)
	recs = loop.Recent()["chat"]
	if raw := recs[len(recs)-1].Raw; len(raw) != 1 || raw[0].Signal.String() != "queue" {
		t.Errorf("reverted: raw %+v, want the configured queue metric again", raw)
	}
}
