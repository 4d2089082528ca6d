package tune

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
)

// TestZeroSpaceNoFloorRound: a scale-to-zero target's search keeps every
// candidate at min 0, floor rounds included. On on-off traffic with
// silent gaps of 5 minutes on average (Pareto, some far longer) and a
// 60 s cooldown, a fleet at zero wakes a 91 s cold start after each
// burst's first request, which waits past a 2 s SLO: no candidate at
// min 0 holds a budget of no miss, so the floor round ran and raised min
// to a warm replica (the finalists' floor 1 or more), a candidate a
// target at zero cannot take. With the floor fixed no row is above 0.
func TestZeroSpaceNoFloorRound(t *testing.T) {
	src, err := trace.ParseContext(context.Background(), "synthetic:onoff,gap=300s,duration=2h", trace.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := replica.New(replica.DefaultConfig()) // the reference: H100, Llama-3-8B, 91 s cold start
	if err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	sp := Space{
		Metrics: []MetricSpace{{Name: "queue", Targets: []float64{0.5}, Integer: true, PerBatch: true}},
		Dims:    DefaultSpace.Dims,
	}.scaleToZero(time.Minute)
	rep, err := Run(context.Background(), src, Config{Replay: replay.Config{Model: m, SLOTTFT: 2}, MaxMissPct: &zero, Space: sp, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rows {
		if v, _ := r.Candidate.Option("min"); v != 0 {
			t.Errorf("row %s: min %v, want 0 (the target scales to zero)", r.Candidate.Policy(), v)
		}
		if v, _ := r.Candidate.Option("cooldown"); v != 60 {
			t.Errorf("row %s: cooldown %v, want 60", r.Candidate.Policy(), v)
		}
	}
	if _, holds := Choose(rep.Finalists, zero); holds {
		t.Errorf("a candidate at zero holds a budget of no miss over 300 s gaps: %s", rep.Policy)
	}
}

// TestZeroSpaceLongCooldown: serve's config takes a cooldownPeriod up to
// 2147483647 s (KEDA's int32), replay's cooldown= at most a year
// (31536000 s). Every run of such a target failed, `search space: ...
// option cooldown=2.147483647e+09: want seconds 0..3.1536e+07`; a
// cooldown longer than the history (90 days at most) replays as a year's.
func TestZeroSpaceLongCooldown(t *testing.T) {
	sp := DefaultSpace.scaleToZero(2147483647 * time.Second)
	for _, opts := range grid(sp.Dims, 91) {
		c := Candidate{Metric: "queue", Target: 16, Options: opts}
		if v, _ := c.Option("cooldown"); v != 365*86400 {
			t.Errorf("%s: cooldown %v, want 31536000 (a year)", c.Policy(), v)
		}
		if _, err := c.replayPolicy(); err != nil {
			t.Errorf("%s: %v", c.Policy(), err)
		}
	}
}

// TestAdaptKeepsZero: the candidate decides with the target's own zero:
// block (docs/tune.md: zero stays the target's), not the cooldown= it
// was replayed with, which is rounded up to whole seconds and capped at
// a year: a cooldownPeriod of 500ms ran at 1s and one of 2147483647 s
// at a year once adopted.
func TestAdaptKeepsZero(t *testing.T) {
	for _, cooldown := range []time.Duration{500 * time.Millisecond, 2147483647 * time.Second, 2 * time.Minute} {
		live := recommend.Policy{Metrics: []recommend.Metric{{Signal: recommend.SignalQueue, Target: 24}}, Min: 0, Max: 8, Zero: &recommend.Zero{Cooldown: cooldown}}
		sp := DefaultSpace.scaleToZero(cooldown)
		c := Candidate{Metric: "queue", Target: 16, Options: grid(sp.Dims, 91)[0]}
		p, err := c.Adapt(live)
		if err != nil {
			t.Fatalf("%v: %v", cooldown, err)
		}
		if p.Min != 0 || p.Zero == nil || p.Zero.Cooldown != cooldown {
			t.Errorf("%v: min %d, zero %+v; want min 0 and the target's cooldown %v", cooldown, p.Min, p.Zero, cooldown)
		}
	}
}

// TestZeroBlock: tune --config FILE --target NAME on a target that scales
// to zero prints a serve block that still does: min 0 and the target's
// own zero: block (its held query and cooldownPeriod, as given: 500ms is
// replayed as cooldown=1), which serve's config loads as printed. Before,
// the history was tuned at floors of 1 to 3 and the block printed
// minReplicaCount 1 with no zero: block, turning the target always-on
// (where tune --shard on the same target tunes it at zero).
func TestZeroBlock(t *testing.T) {
	held := `sum(infscale_activator_held_requests{service="activator-chat"})`
	z := &config.Zero{Cooldown: model.Duration(500 * time.Millisecond), Held: held}
	sp := DefaultSpace.scaleToZero(time.Duration(z.Cooldown))
	c := Candidate{Metric: "queue", Target: 16, Options: grid(sp.Dims, 91)[0]}
	block := c.Block(Serve{Name: "chat", PrometheusURL: "http://prometheus:9090", Server: "vllm", Selector: `{namespace="llm"}`, Zero: z}, 8)
	f, err := config.Parse([]byte(block), "block.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, block)
	}
	tg := f.Targets[0]
	if tg.Min == nil || *tg.Min != 0 || tg.Zero == nil || tg.Zero.Held != held || time.Duration(tg.Zero.Cooldown) != 500*time.Millisecond {
		t.Errorf("block:\n%s\nwant minReplicaCount 0 and zero: {held: %s, cooldownPeriod: 500ms}", block, held)
	}
}

// TestZeroSpaceCooldownExact: serve goes to zero after the target's
// cooldownPeriod at millisecond precision (zero.cooldownPeriod: 1500ms,
// decided each pollingInterval), so the replay must too. Before, it was
// rounded up to whole seconds: at pollingInterval 1500ms a cooldown of
// 1500ms (one decision idle) was replayed as 2 s (two decisions), and on
// the reference trace queue:24,min=0 missed 0.2% where serve's 1.5 s
// misses 2.3%; a result tuned at 1200ms (replayed as 2 s) matched a
// target reloaded to 1800ms.
func TestZeroSpaceCooldownExact(t *testing.T) {
	for _, cooldown := range []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond, 1001 * time.Millisecond, 120 * time.Second} {
		sp := DefaultSpace.scaleToZero(cooldown)
		c := Candidate{Metric: "queue", Target: 16, Options: grid(sp.Dims, 91)[0]}
		if v, _ := c.Option("cooldown"); v != float64(cooldown.Milliseconds())/1000 {
			t.Errorf("%v: cooldown=%v, want %v", cooldown, v, float64(cooldown.Milliseconds())/1000)
		}
		p, err := c.Recommend()
		if err != nil {
			t.Fatal(err)
		}
		if p.Zero == nil || (p.Zero.Cooldown-cooldown).Abs() > time.Nanosecond {
			t.Errorf("%v: replayed with zero %+v, want cooldown %v", cooldown, p.Zero, cooldown)
		}
	}
	// A result tuned at 1200ms is from another configuration once the
	// target's cooldownPeriod is 1800ms.
	c := Candidate{Metric: "queue", Target: 16, Options: grid(DefaultSpace.scaleToZero(1200*time.Millisecond).Dims, 91)[0]}
	r := TargetResult{Outcome: Outcome{MaxMissPct: 0.1}, SLOTTFT: 2, Period: 1.5, Candidate: c}
	f, err := config.Parse([]byte(`prometheus: {url: "http://prometheus:9090"}
pollingInterval: 1500ms
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  minReplicaCount: 0
  maxReplicaCount: 8
  zero: {held: 'sum(held)', cooldownPeriod: 1800ms}
  replica: {gpu: h100-sxm, model: llama-3-8b}
  tune: {max_miss: 0.001}
`), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := "tuned with scale to zero, cooldownPeriod 1.2s (the target's is 1s800ms): from another configuration of target chat"
	if err := r.Matches(&f.Targets[0], 1500*time.Millisecond); fmt.Sprint(err) != want {
		t.Errorf("tuned at 1200ms, target at 1800ms: %v, want %q", err, want)
	}
}
