package tune

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
)

// TestCappedSpace: a target's maxReplicaCount joins every candidate as
// max=N, and the floors above it leave the grid: at max 1 the floors 2
// (coarse) and 3 (fine) go; at max 20 they stay.
func TestCappedSpace(t *testing.T) {
	for _, c := range []struct {
		max          int
		values, fine []float64
		want         int // the max= replayed
	}{{1, []float64{1}, nil, 1}, {2, []float64{1, 2}, nil, 2}, {20, []float64{1, 2}, []float64{3}, 20},
		// serve takes up to the HPA's int32; the replay at most
		// replay.MaxReplicas, refusing max=2147483647 (every run failed).
		{2147483647, []float64{1, 2}, []float64{3}, 10000}} {
		sp := DefaultSpace.capped(c.max)
		var minDim, maxDim *Dim
		for i := range sp.Dims {
			switch sp.Dims[i].Name {
			case "min":
				minDim = &sp.Dims[i]
			case "max":
				maxDim = &sp.Dims[i]
			}
		}
		if minDim == nil || maxDim == nil {
			t.Fatalf("max %d: dims %+v, want min and max", c.max, sp.Dims)
		}
		if !equal(minDim.Values, c.values) || !equal(minDim.Fine, c.fine) {
			t.Errorf("max %d: min values %v fine %v, want %v and %v", c.max, minDim.Values, minDim.Fine, c.values, c.fine)
		}
		if len(maxDim.Values) != 1 || maxDim.Values[0] != float64(c.want) {
			t.Errorf("max %d: max values %v", c.max, maxDim.Values)
		}
		for _, opts := range grid(sp.Dims, 91) {
			cand := Candidate{Metric: "queue", Target: 16, Options: opts}
			if !strings.HasSuffix(cand.Policy(), ",max="+strconv.Itoa(c.want)) {
				t.Errorf("max %d: policy %s, want it to end in max=%d", c.max, cand.Policy(), c.want)
			}
			if _, err := cand.replayPolicy(); err != nil {
				t.Errorf("%s: %v", cand.Policy(), err)
			}
		}
	}
	// DefaultSpace itself is untouched (tune --trace).
	if len(DefaultSpace.Dims[0].Values) != 2 || len(DefaultSpace.Dims) != 3 {
		t.Errorf("DefaultSpace changed: %+v", DefaultSpace.Dims)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTuneUnderTargetMax: 60 req/s of Poisson traffic (20 minutes) needs
// several reference replicas (one holds 3 to 6 req/s under a queue
// target in replay, docs/backtest.md's profile): replayed under a
// maxReplicaCount of 1 every replay stays at 1 replica and no candidate
// holds a 0.1% budget (a single replica serving a tenth of the traffic
// backs up), where the same search at the default max holds at more than
// one. Before, a target's max was not replayed: tune --shard wrote "holds"
// for a candidate that reached 12 replicas on a target that may run 1.
func TestTuneUnderTargetMax(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a search twice")
	}
	m, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	budget := 0.1
	sp := Space{
		Metrics: []MetricSpace{{Name: "queue", Targets: []float64{0.5}, Integer: true, PerBatch: true}},
		Dims:    DefaultSpace.Dims,
	}
	run := func(sp Space) Report {
		src, err := trace.ParseContext(context.Background(), "synthetic:poisson,rate=60,duration=20m", trace.Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(context.Background(), src, Config{Replay: replay.Config{Model: m, SLOTTFT: 2}, MaxMissPct: &budget, Space: sp, Workers: 2, Stress: []Stress{}})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	capped := run(sp.capped(1))
	for _, r := range append(capped.Rows, capped.Finalists...) {
		if p := r.peak(); p > 1 {
			t.Errorf("capped row %s: peak %d, want at most 1 (the target's max)", r.Policy, p)
		}
	}
	if _, holds := Choose(capped.Finalists, budget); holds {
		t.Errorf("a candidate at 1 replica holds 60 req/s: %s", capped.Policy)
	}
	free := run(sp)
	if i, holds := Choose(free.Finalists, budget); !holds || free.Finalists[i].peak() <= 1 {
		t.Errorf("uncapped: winner %s holds %v; want it to hold above 1 replica", free.Policy, holds)
	}
}

// TestResultMatchesMax: a result records the max it was replayed under;
// one tuned at another maxReplicaCount than the target's now is from
// another configuration, and Adapt keeps the target's max whatever the
// candidate says.
func TestResultMatchesMax(t *testing.T) {
	f, err := config.Parse([]byte(`prometheus: {url: http://prometheus:9090}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 5
  tune: {}
`), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tg := &f.Targets[0]
	opts := grid(DefaultSpace.capped(20).Dims, 91)[0]
	r := TargetResult{Target: "chat", Outcome: Outcome{MaxMissPct: 0.1}, Candidate: Candidate{Metric: "queue", Target: 16, Options: opts}}
	err = r.Matches(tg, 0)
	if err == nil || !strings.Contains(err.Error(), "maxReplicaCount 20 (the target's is 5)") {
		t.Errorf("Matches: %v, want maxReplicaCount 20 (the target's is 5)", err)
	}
	r.Candidate.Options = grid(DefaultSpace.capped(5).Dims, 91)[0]
	if err := r.Matches(tg, 0); err != nil {
		t.Errorf("Matches at the target's max: %v", err)
	}
	live := recommend.Policy{Metrics: []recommend.Metric{{Signal: recommend.SignalQueue, Target: 24}}, Min: 1, Max: 5}
	p, err := Candidate{Metric: "queue", Target: 16, Options: opts}.Adapt(live)
	if err != nil || p.Max != 5 {
		t.Errorf("adapted: max %d err %v; want the target's 5", p.Max, err)
	}
}
