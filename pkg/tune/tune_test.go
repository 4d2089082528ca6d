package tune

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
)

// TestChoose: the rule takes the cheapest row that holds everywhere, not
// the cheapest in sample.
func TestChoose(t *testing.T) {
	f := func(miss, rm float64) *Figures { return &Figures{MissPct: miss, ReplicaMinutes: rm} }
	rows := []Row{
		{Policy: "cheap", InSample: f(0, 10), OutOfSample: f(0.5, 3)},                                   // fails out of sample
		{Policy: "stressed", InSample: f(0, 12), OutOfSample: f(0, 4), Stress: []Figures{{MissPct: 2}}}, // fails x2
		{Policy: "robust", InSample: f(0.05, 15), OutOfSample: f(0.1, 5), Stress: []Figures{{MissPct: 0.1}}},
		{Policy: "dear", InSample: f(0, 30), OutOfSample: f(0, 9), Stress: []Figures{{MissPct: 0}}},
	}
	if i, ok := Choose(rows, 0.1); !ok || rows[i].Policy != "robust" {
		t.Errorf("chose %d (ok %v), want robust", i, ok)
	}
	// At a zero budget none of the first three holds (robust misses 0.05%
	// in sample): the lowest worst miss wins, robust's 0.1% over cheap's
	// 0.5% and stressed's 2%.
	if i, ok := Choose(rows[:3], 0); ok || rows[i].Policy != "robust" {
		t.Errorf("no row holds: chose %d (ok %v), want robust (worst 0.1%%)", i, ok)
	}
}

// TestBlockLoads: the winner's serve block is a target pkg/config loads,
// and it decides with the policy the replay ran.
func TestBlockLoads(t *testing.T) {
	c := cand("queue", 23, 0, 1, 91, 120)
	block := c.Block(Serve{}, 8)
	f, err := config.Parse([]byte(block), "tune.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, block)
	}
	if f.Prometheus.URL != "http://prometheus:9090" || f.Targets[0].Name != "chat" || *f.Targets[0].Max != 8 || !strings.Contains(block, "# fill in: your Prometheus base URL") {
		t.Errorf("placeholders: %+v\n%s", f.Targets[0], block)
	}
	// A history's own Prometheus, server, selector (a quote inside) and
	// replicas query, as given.
	s := Serve{Name: "chat", PrometheusURL: "http://127.0.0.1:9090", Server: "sglang", Selector: `{namespace="llm",team="o'brien"}`, Replicas: `sum(kube_deployment_spec_replicas{deployment="chat"})`}
	block = c.Block(s, 8)
	g, err := config.Parse([]byte(block), "tune.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, block)
	}
	if g.Prometheus.URL != s.PrometheusURL || g.Targets[0].Selector != s.Selector || g.Targets[0].Server.String() != "sglang" || g.Targets[0].Replicas != s.Replicas || strings.Contains(block, "fill in") {
		t.Errorf("loaded %+v %+v\n%s", g.Prometheus, g.Targets[0], block)
	}
	// From a serve config: its other prometheus: keys are named, not copied.
	s.From = "prod.yaml"
	block = c.Block(s, 8)
	if _, err := config.Parse([]byte(block), "tune.yaml"); err != nil || !strings.Contains(block, "  # auth, TLS and timeout: copy them from the prometheus: section of prod.yaml\n") {
		t.Errorf("%v\n%s", err, block)
	}
	got, err := f.Targets[0].Policy()
	if err != nil {
		t.Fatal(err)
	}
	p, err := replay.ParsePolicy(c.Policy())
	if err != nil {
		t.Fatal(err)
	}
	want := p.Recommend
	if len(got.Metrics) != 1 || got.Metrics[0] != want.Metrics[0] || got.Lookahead != 91*time.Second ||
		*got.Behavior.ScaleDown.StabilizationWindowSeconds != 120 || *want.Behavior.ScaleDown.StabilizationWindowSeconds != 120 {
		t.Errorf("loaded %+v, want the metric %+v, lookahead 91s, scale-down window 120 s", got, want.Metrics)
	}
}

// TestWeekHoldsOutOfSample: tuned on the first 5 days of a synthetic week
// (a daily cycle of 1 to 8 req/s on a replica of 8 batch slots, so the
// fleet moves between 1 and 3 or more replicas), the winner's misses on the
// last 2 days stay within the 0.1% budget, and the report shows in-sample
// and out-of-sample figures.
func TestWeekHoldsOutOfSample(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes on 5 days of traffic")
	}
	rc := replica.DefaultConfig()
	rc.MaxNumSeqs = 8
	m, err := replica.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	week, err := trace.ParseContext(context.Background(), "synthetic:diurnal,trough=1,peak=8,duration=7d", trace.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := replay.Config{Model: m}
	rep, err := Run(context.Background(), trace.WindowContext(context.Background(), week, 0, 5*86400), Config{Replay: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Holds || rep.InSample.MissPct > 0.1 || rep.OutOfSample.MissPct > 0.1 || rep.InSample.Requests == 0 || rep.OutOfSample.Requests == 0 {
		t.Errorf("winner %s: holds %v, in %+v, out %+v; want both within 0.1%%", rep.Policy, rep.Holds, rep.InSample, rep.OutOfSample)
	}
	pol, err := replay.ParsePolicy(rep.Policy)
	if err != nil {
		t.Fatal(err)
	}
	last, err := replay.Run(context.Background(), trace.WindowContext(context.Background(), week, 5*86400, 7*86400), pol, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if last.MissPct() > 0.1 || last.Peak < 2 {
		t.Errorf("%s on the last 2 days: %.3f%% misses, peak %d; want within 0.1%% with more than one replica at the peak", rep.Policy, last.MissPct(), last.Peak)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b, "week"); err != nil {
		t.Fatal(err)
	}
	t.Log(b.String())
	for _, s := range []string{"in miss %", "out miss %", "winner: " + rep.Policy, "frontier", "stabilizationWindowSeconds"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, b.String())
		}
	}
}

// TestDemandBlockLoads: a demand winner's serve block carries the latency
// guards and the replica, loads as printed, and decides with the policy
// the replay ran: demand at 0.85 of the capacity pkg/config derives from
// that replica (the reference replica's own), ttft at 2 s and queuewait at
// 0.4 s over the replay's 60 s quantile window, and recommended's rules for
// a 91 s cold start: the hold's break-even two cold starts (182 s) and the
// ramp bound at the quantile 91 / (91 + 60) = 0.6026, z = 0.2602
// (docs/recommend.md's worked example).
func TestDemandBlockLoads(t *testing.T) {
	c := cand("demand", 0.85, 2, 1, 137, 60)
	c.recommendedRules(91)
	if got, want := c.Policy(), "demand:0.85,lookahead=137,downwindow=60,hold=182,rampbound=0.2602,ttft:2,queuewait:0.4"; got != want {
		t.Errorf("policy %q, want %q", got, want)
	}
	for _, s := range []Serve{{}, {Replica: "{gpu: h100-sxm, model: llama-3-8b, tp: 1}", ReplicaNote: "a note"}} {
		block := c.Block(s, 8)
		f, err := config.Parse([]byte(block), "tune.yaml")
		if err != nil {
			t.Fatalf("%v\n%s", err, block)
		}
		got, err := f.Targets[0].Policy()
		if err != nil {
			t.Fatal(err)
		}
		m, err := replica.New(replica.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		want := []recommend.Metric{{Signal: recommend.SignalDemand, Target: 0.85}, {Signal: recommend.SignalTTFT, Target: 2}, {Signal: recommend.SignalQueueWait, Target: 0.4}}
		if len(got.Metrics) != 3 || got.Capacity == nil || *got.Capacity != *recommend.CapacityFrom(m) || got.Lookahead != 137*time.Second {
			t.Fatalf("loaded %+v\n%s", got, block)
		}
		for i, w := range want {
			if g := got.Metrics[i]; g.Signal != w.Signal || g.Target != w.Target {
				t.Errorf("metric %d: %+v, want %+v", i, g, w)
			}
		}
		if got.Hold == nil || got.Hold.BreakEven != 182*time.Second || got.RampBound != 0.2602 {
			t.Errorf("hold %+v ramp bound %v, want a 182s break-even and 0.2602\n%s", got.Hold, got.RampBound, block)
		}
		if time.Duration(f.Targets[0].Metrics[1].Window) != time.Minute || time.Duration(f.Targets[0].Metrics[2].Window) != time.Minute {
			t.Errorf("quantile windows %v %v, want the replay's 1m\n%s", f.Targets[0].Metrics[1].Window, f.Targets[0].Metrics[2].Window, block)
		}
		if (s.Replica == "") != strings.Contains(block, "# fill in: your GPU and model") || !strings.Contains(block, s.ReplicaNote) {
			t.Errorf("replica line:\n%s", block)
		}
	}
}

// TestNeighboursRound: refined demand targets are geometric means rounded
// to 0.05: between 0.8 and 0.9 sqrt(0.72) = 0.8485 -> 0.85, below 0.7
// sqrt(0.35 x 0.7) = 0.495 -> 0.5; the guard rides along.
func TestNeighboursRound(t *testing.T) {
	sp := Space{Metrics: []MetricSpace{{Name: "demand", Targets: []float64{0.7, 0.8, 0.9}, Round: 0.05, Guards: true}}}
	var ts []float64
	for _, c := range neighbours(cand("demand", 0.8, 2, 1, 91, 120), sp, 91) {
		if c.Guard != 2 {
			t.Errorf("%+v lost the guard", c)
		}
		if c.Target != 0.8 {
			ts = append(ts, c.Target)
		}
	}
	if len(ts) != 2 || ts[0] != 0.75 || ts[1] != 0.85 {
		t.Errorf("targets around 0.8: %v, want [0.75 0.85]", ts)
	}
	for _, c := range neighbours(cand("demand", 0.7, 2, 1, 0, 120), sp, 91) {
		if c.Target != 0.7 && c.Target != 0.5 && c.Target != 0.75 {
			t.Errorf("around 0.7: %v, want 0.5 or 0.75", c.Target)
		}
	}
}

// cand is a candidate of DefaultSpace's dims: min, lookahead and
// downwindow (seconds).
func cand(metric string, target, guard float64, min, lookahead, downwindow float64) Candidate {
	c := Candidate{Metric: metric, Target: target, Guard: guard}
	for i, v := range []float64{min, lookahead, downwindow} {
		c.Options = append(c.Options, DefaultSpace.Dims[i].option(v))
	}
	return c
}

// TestBudgetZeroAndHundred: a budget of 0 is no miss at all, not the
// default (defaults once read 0 as unset and tuned to 0.1%); nil is the
// default 0.1; 100 is accepted and 100.5 refused before any replay.
func TestBudgetZeroAndHundred(t *testing.T) {
	zero, hundred, over := 0.0, 100.0, 100.5
	if got := (Config{MaxMissPct: &zero}).defaults().Budget(); got != 0 {
		t.Errorf("budget 0 after defaults = %g, want 0", got)
	}
	if got := (Config{}).defaults().Budget(); got != 0.1 {
		t.Errorf("no budget after defaults = %g, want 0.1", got)
	}
	if got := (Config{MaxMissPct: &hundred}).Budget(); got != 100 {
		t.Errorf("budget 100 = %g", got)
	}
	src, err := trace.ParseContext(context.Background(), "synthetic:poisson,rate=1,duration=600", trace.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), src, Config{MaxMissPct: &over})
	if err == nil || !strings.Contains(err.Error(), "miss budget 100.5%: want a percentage from 0 to 100") {
		t.Errorf("budget 100.5: %v", err)
	}
}

// TestBlockServerPlaceholder: the placeholder server's comment lists every
// server serve's config takes (pkg/modelserver's table), and each of them
// loads in its place.
func TestBlockServerPlaceholder(t *testing.T) {
	block := cand("queue", 23, 0, 1, 91, 120).Block(Serve{}, 8)
	want := "  server: vllm  # fill in: the model server: " + strings.Join(modelserver.Names(), ", ") + "\n"
	if !strings.Contains(block, want) {
		t.Fatalf("block lacks %q:\n%s", want, block)
	}
	for _, name := range modelserver.Names() {
		b := strings.Replace(block, "server: vllm", "server: "+name, 1)
		if _, err := config.Parse([]byte(b), "tune.yaml"); err != nil {
			t.Errorf("server: %s: %v", name, err)
		}
	}
}
