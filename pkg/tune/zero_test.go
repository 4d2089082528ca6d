package tune

import (
	"context"
	"testing"
	"time"

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
	src, err := trace.Parse("synthetic:onoff,gap=300s,duration=2h", trace.Options{Seed: 1})
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
