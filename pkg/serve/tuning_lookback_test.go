package serve

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/tune"
)

// TestTuningRevertReadBack: serve without --state-dir reads back from
// Prometheus what it (or another serve replica) last exported for a
// target before taking its first result in adopt mode. The history, as
// Prometheus scraped serve every 15 s from T: queue:8 adopted for 20
// minutes, reverted for 30 (live misses over budget), then adopted again
// for 20 (a reload that changed the terms forgot the revert). A serve
// started 5 minutes into the revert with the tune.dir result queue:8
// (holds) keeps it reverted, switched when the revert began (T+20m); it
// adopted it again before. One started during the second adoption adopts
// it; one started more than 24 h after the last sample, or with no
// history at all, adopts it as before.
func TestTuningRevertReadBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on backfilled series")
	}
	T := time.Now().Add(-30 * time.Hour).Truncate(time.Hour)
	var om strings.Builder
	om.WriteString("# TYPE infscale_tuned_policy_info gauge\n")
	for _, run := range []struct {
		state    string
		from, to time.Duration
	}{{"adopted", 0, 20 * time.Minute}, {"reverted", 20 * time.Minute, 50 * time.Minute}, {"adopted", 50 * time.Minute, 70 * time.Minute}} {
		for at := run.from; at < run.to; at += 15 * time.Second {
			fmt.Fprintf(&om, "infscale_tuned_policy_info{target=\"chat\",policy=\"queue:8\",state=%q,pod=\"infscale-0\"} 1 %d\n", run.state, T.Add(at).Unix())
		}
	}
	om.WriteString("# EOF\n")
	prom := promtest.Start(t, promtest.Options{DataDir: promtest.Backfill(t, om.String()), Flags: []string{"--storage.tsdb.retention.time=30d"}})
	api, err := promql.NewClient(promql.ClientConfig{URL: prom.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		now       time.Time
		state     string
		switched  time.Time
		readsBack bool
	}{
		{"5 minutes into the revert", T.Add(25 * time.Minute), TuneStateReverted, T.Add(20 * time.Minute), true},
		{"during the second adoption", T.Add(65 * time.Minute), TuneStateAdopted, time.Time{}, false},
		{"a day after the last sample", T.Add(70*time.Minute + 25*time.Hour), TuneStateAdopted, time.Time{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			now := c.now
			tn, _, log := tuningAt(t, tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt}", dir)), func() time.Time { return now }, api)
			cand := tune.Candidate{Metric: "queue", Target: 8}
			if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: now, Policy: cand.Policy(), Candidate: cand, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
				t.Fatal(err)
			}
			tn.Step(context.Background())
			if s, p := tuneState(tn, "chat"); s != c.state || p != "queue:8" {
				t.Errorf("state %q %q, want %s queue:8; log:\n%s", s, p, c.state, log.String())
			}
			tn.mu.Lock()
			switched := tn.targets["chat"].switched
			tn.mu.Unlock()
			if c.readsBack && !switched.Equal(c.switched) {
				t.Errorf("switched %v, want %v (the revert's first sample)", switched, c.switched)
			}
			if said := strings.Contains(log.String(), "tuned policy stays reverted"); said != c.readsBack {
				t.Errorf("log says the revert was read back: %v, want %v; log:\n%s", said, c.readsBack, log.String())
			}
		})
	}
}

// rangeAPI answers every range query with m.
type rangeAPI struct{ m model.Matrix }

func (a rangeAPI) Instant(context.Context, string, time.Time) (model.Vector, []string, error) {
	return nil, nil, nil
}

func (a rangeAPI) Range(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, []string, error) {
	return a.m, nil, nil
}

// TestLastRevertedCountsOnlyServesSamples: serve exports 1 for a state;
// a NaN or 0 sample (another writer's) is none. The reverted series'
// samples at 60 and 75 s are NaN and 0, so its last is at 45 s, before
// the adopted series' at 60 s: adopted is the latest state, nothing is
// reverted. With the adopted series gone, the revert is read from its run
// of 1s: 15 to 45 s.
func TestLastRevertedCountsOnlyServesSamples(t *testing.T) {
	at := func(s int64) model.Time { return model.TimeFromUnix(1000 + s) }
	reverted := &model.SampleStream{Metric: model.Metric{"policy": "queue:8", "state": "reverted"}, Values: []model.SamplePair{
		{Timestamp: at(15), Value: 1}, {Timestamp: at(30), Value: 1}, {Timestamp: at(45), Value: 1},
		{Timestamp: at(60), Value: model.SampleValue(math.NaN())}, {Timestamp: at(75), Value: 0}}}
	adopted := &model.SampleStream{Metric: model.Metric{"policy": "queue:8", "state": "adopted"}, Values: []model.SamplePair{{Timestamp: at(60), Value: 1}}}
	now := time.Unix(1100, 0)
	p, _, _, err := lastReverted(context.Background(), rangeAPI{model.Matrix{reverted, adopted}}, "chat", nil, now, 15*time.Second)
	if err != nil || p != "" {
		t.Errorf("lastReverted = %q, %v; want none (adopted at 60 s is the latest state)", p, err)
	}
	reverted.Values = append(reverted.Values[:3:3], model.SamplePair{Timestamp: at(60), Value: model.SampleValue(math.NaN())})
	p, since, _, err := lastReverted(context.Background(), rangeAPI{model.Matrix{reverted}}, "chat", nil, now, 15*time.Second)
	if err != nil || p != "queue:8" || !since.Equal(at(15).Time()) {
		t.Errorf("lastReverted = %q, %v, %v; want queue:8 since %v", p, since, err, at(15).Time())
	}
}

// TestTuningRevertReadBackOtherTerms: the revert serve reads back after a
// restart (without --state-dir) is kept only under the terms it was made
// under, as a reload forgets a revert when it changes them: the chart
// restarts serve on a config change, so after a revert at max_miss 0.001
// a change to 0.01 (the remedy for a budget too tight) restored the revert
// under the new budget, and the policy stayed reverted however often the
// tuner chose it. Serve exports the terms beside the state
// (infscale_tuned_policy_info's terms label, tune.Terms); a revert under
// the target's terms now, or from a serve that did not export them, is
// kept.
func TestTuningRevertReadBackOtherTerms(t *testing.T) {
	at := func(s int64) model.Time { return model.TimeFromUnix(1000 + s) }
	now := time.Unix(1100, 0)
	old := tuneTarget(t, `{every: 1h, dir: /nonexistent, mode: adopt, max_miss: 0.001}`)
	for _, c := range []struct {
		name, terms, state string
	}{
		{"made under max_miss 0.001", tune.Terms(&old.Targets[0], 15*time.Second), TuneStateAdopted},
		{"made under the terms now", "", TuneStateReverted}, // filled in below
		{"from a serve without terms", "-", TuneStateReverted},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt, max_miss: 0.01}", dir))
			m := model.Metric{"policy": "queue:8", "state": "reverted"}
			switch c.terms {
			case "":
				m["terms"] = model.LabelValue(tune.Terms(&cfg.Targets[0], 15*time.Second))
			case "-":
			default:
				m["terms"] = model.LabelValue(c.terms)
			}
			api := rangeAPI{model.Matrix{{Metric: m, Values: []model.SamplePair{{Timestamp: at(15), Value: 1}, {Timestamp: at(30), Value: 1}}}}}
			tn, _, log := tuningAt(t, cfg, func() time.Time { return now }, api)
			cand := tune.Candidate{Metric: "queue", Target: 8}
			if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: now, Policy: cand.Policy(), Candidate: cand, Outcome: tune.Outcome{Holds: true, MaxMissPct: 1}}); err != nil {
				t.Fatal(err)
			}
			tn.Step(context.Background())
			if s, p := tuneState(tn, "chat"); s != c.state || p != "queue:8" {
				t.Errorf("state %q %q, want %s queue:8; log:\n%s", s, p, c.state, log.String())
			}
		})
	}
}

// promAPI answers the TTFT histogram's increase with ttft (le -> count),
// and a range query of infscale_tuned_policy_info or of
// infscale_tuned_policy_reverted with info or reverted.
type promAPI struct {
	ttft           map[string]float64
	info, reverted model.Matrix
}

func (a promAPI) Instant(_ context.Context, q string, ts time.Time) (model.Vector, []string, error) {
	if !strings.Contains(q, "time_to_first_token_seconds_bucket") {
		return nil, nil, nil
	}
	var v model.Vector
	for le, n := range a.ttft {
		v = append(v, &model.Sample{Metric: model.Metric{"le": model.LabelValue(le)}, Value: model.SampleValue(n), Timestamp: model.TimeFromUnixNano(ts.UnixNano())})
	}
	return v, nil, nil
}

func (a promAPI) Range(_ context.Context, q string, _, _ time.Time, _ time.Duration) (model.Matrix, []string, error) {
	switch {
	case strings.Contains(q, "infscale_tuned_policy_reverted"):
		return a.reverted, nil, nil
	case strings.Contains(q, "infscale_tuned_policy_info"):
		return a.info, nil, nil
	}
	return nil, nil, nil
}

// TestTuningRevertReadBackBesideLaterCandidate: a revert made while a
// later result of another policy is the target's candidate (waiting in
// shadow for every to pass since the switch) left
// infscale_tuned_policy_info on that candidate, so a restarted serve read
// no revert back and adopted the reverted policy again when a result chose
// it, to miss again. serve exports the policy it keeps reverted on its own
// (infscale_tuned_policy_reverted{target,policy,terms}, 1), and reads it
// back: queue:8, adopted at T and reverted at T+40m for its live misses
// (all 1,000 requests above 2.5 s) while queue:16 (tuned at T+30m) waits
// in shadow, stays reverted after a restart when a result chooses it.
func TestTuningRevertReadBackBesideLaterCandidate(t *testing.T) {
	dir := t.TempDir()
	f, err := config.Parse([]byte(fmt.Sprintf(`prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 8
  tune: {every: 1h, dir: %q, mode: adopt, slo_ttft: 2500ms}
`, dir)), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	T := time.Date(2026, 1, 11, 10, 0, 0, 0, time.UTC)
	now := T
	result := func(target float64, at time.Time) {
		t.Helper()
		c := tune.Candidate{Metric: "queue", Target: target}
		if err := tune.WriteResult(dir, tune.TargetResult{Target: "chat", At: at, Policy: c.Policy(), Candidate: c, Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
			t.Fatal(err)
		}
	}
	serve := func(api promql.API) (*Tuning, *prometheus.Registry, *bytes.Buffer) {
		return tuningAt(t, f, func() time.Time { return now }, api)
	}
	tn, reg, log := serve(promAPI{ttft: map[string]float64{"1": 0, "2.5": 0, "+Inf": 1000}})
	result(8, T)
	tn.Step(context.Background())
	if s, p := tuneState(tn, "chat"); s != TuneStateAdopted || p != "queue:8" {
		t.Fatalf("at T: %s %s, want queue:8 adopted; log:\n%s", s, p, log)
	}
	now = T.Add(30 * time.Minute)
	result(16, now)
	tn.Step(context.Background())
	now = T.Add(40 * time.Minute)
	tn.Step(context.Background())
	if s, p := tuneState(tn, "chat"); s != TuneStateShadow || p != "queue:16" || !strings.Contains(log.String(), "tuned policy reverted") {
		t.Fatalf("at T+40m: %s %s, want queue:16 in shadow and queue:8 reverted; log:\n%s", s, p, log)
	}
	// What Prometheus scraped of the first serve, from T+40m to T+45m.
	var info, reverted model.Matrix
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	run := func(lp []*dto.LabelPair) *model.SampleStream {
		m := model.Metric{}
		for _, p := range lp {
			if p.GetName() != "target" {
				m[model.LabelName(p.GetName())] = model.LabelValue(p.GetValue())
			}
		}
		ss := &model.SampleStream{Metric: m}
		for at := now; !at.After(T.Add(45 * time.Minute)); at = at.Add(15 * time.Second) {
			ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(at.UnixNano()), Value: 1})
		}
		return ss
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "infscale_tuned_policy_info":
				info = append(info, run(m.GetLabel()))
			case "infscale_tuned_policy_reverted":
				reverted = append(reverted, run(m.GetLabel()))
			}
		}
	}
	if len(reverted) != 1 || reverted[0].Metric["policy"] != "queue:8" || reverted[0].Metric["terms"] != model.LabelValue(tune.Terms(&f.Targets[0], 15*time.Second)) {
		t.Fatalf("infscale_tuned_policy_reverted %v, want queue:8 under the target's terms", reverted)
	}
	// A restart at T+46m; the CronJob's next result chooses queue:8 again.
	now = T.Add(46 * time.Minute)
	result(8, now)
	tn, _, log = serve(promAPI{info: info, reverted: reverted})
	tn.Step(context.Background())
	if s, p := tuneState(tn, "chat"); s != TuneStateReverted || p != "queue:8" {
		t.Errorf("after the restart: %s %s, want queue:8 reverted; log:\n%s", s, p, log)
	}
}
