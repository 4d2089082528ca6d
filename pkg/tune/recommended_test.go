package tune

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"

	"github.com/infscale/infscale/internal/sharedtest"
)

var chooseRecommended = flag.Bool("choose", false, "replay the grid recommended is chosen from (a minute of CPU) and check the preset is Choose's winner")

// TestRecommendedChoice is how replay.Recommended is chosen: tune's own
// rule (Choose, budget 0: zero misses) over a grid of demand policies,
// the reference trace's seeds 1-10 as the in-sample part and
// azure-llm-2023-conv at 1x, 3x and 6x and the synthetic diurnal day as
// the out-of-sample part (docs/evaluation/recommended.md's traces where a causal
// policy can reach zero misses; reference 2x, the step and mooncake miss
// under every candidate, docs/evaluation/recommended.md shows why). The winner is
// the cheapest in-sample holder. Run with -choose.
func TestRecommendedChoice(t *testing.T) {
	if !*chooseRecommended {
		t.Skip("replays the recommended grid only with -choose")
	}
	az := sharedtest.Path(t, "traces", "azure-llm-2023-conv.csv")
	rep, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var in, out []trace.Source
	for s := uint64(1); s <= 10; s++ {
		in = append(in, trace.Reference(s))
	}
	for _, x := range []float64{1, 3, 6} {
		src, err := trace.ParseContext(context.Background(), az, trace.Options{RateScale: x})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, src)
	}
	di, err := trace.ParseContext(context.Background(), "synthetic:diurnal", trace.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, di)

	// The grid: utilisation up to 0.9 (the replica model's 10% accuracy),
	// the lookahead's lead over the cold start, the scale-down window from
	// the trend span + a period (60 s) up. Every candidate carries the
	// latency guards (ttft at the 2 s SLO, queuewait at a fifth of it): they
	// are there for long-prompt traffic (mooncake) that none of these
	// traces has, so they are part of the policy, not a dimension these
	// traces could choose.
	cold := int(rep.ColdStart() + 0.999999)
	var specs []string
	for _, u := range []string{"0.8", "0.85", "0.9"} {
		for _, lead := range []int{30, 45, 60} {
			for _, w := range []int{60, 90, 120} {
				specs = append(specs, fmt.Sprintf("demand:%s,lookahead=%d,downwindow=%d,ttft:2,queuewait:0.4", u, cold+lead, w))
			}
		}
	}
	pols := make([]replay.Policy, len(specs))
	for i, s := range specs {
		if pols[i], err = replay.ParsePolicy(s); err != nil {
			t.Fatal(err)
		}
	}
	cfg := replay.Config{Model: rep}
	run := func(srcs []trace.Source) [][]replay.Result {
		res := make([][]replay.Result, len(specs))
		for _, src := range srcs {
			rs, err := replay.RunAll(context.Background(), src, pols, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range rs {
				res[i] = append(res[i], r)
			}
		}
		return res
	}
	ins, outs := run(in), run(out)
	rows := make([]Row, len(specs))
	for i, s := range specs {
		fi, fo := figures(ins[i]...), figures(outs[i]...)
		rows[i] = Row{Policy: s, Screen: fi, InSample: &fi, OutOfSample: &fo}
	}
	best, ok := Choose(rows, 0)
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%-42s in %.2f%% / %.1f  out %.2f%% / %.1f  holds %v\n", r.Policy, r.InSample.MissPct, r.InSample.ReplicaMinutes, r.OutOfSample.MissPct, r.OutOfSample.ReplicaMinutes, r.Holds)
	}
	t.Log("\n" + b.String())
	if !ok || rows[best].Policy != replay.Recommended {
		t.Errorf("Choose picks %s (holds %v), want the preset %s", rows[best].Policy, ok, replay.Recommended)
	}
}
