package tune

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
)

// TestStretchGaps: arrivals 0, 10, 100, 105 with gaps of 10, 90 and 5 s;
// at k = 3 and a 30 s threshold only the 90 s gap is stretched, to 270 s:
// 0, 10, 280, 285, and the span 200 s grows by 180 s to 380 s.
func TestStretchGaps(t *testing.T) {
	src := trace.FromSlice("t", 200, []trace.Request{{Arrival: 0, Prompt: 1, Output: 1}, {Arrival: 10, Prompt: 1, Output: 1}, {Arrival: 100, Prompt: 1, Output: 1}, {Arrival: 105, Prompt: 1, Output: 1}})
	out, n, err := StretchGaps(context.Background(), src, 3, 30)
	if err != nil || n != 1 || out.Duration != 380 {
		t.Fatalf("n %d, duration %g, %v; want 1 gap, 380 s", n, out.Duration, err)
	}
	var got []float64
	if err := each(context.Background(), out, func(q trace.Request) { got = append(got, q.Arrival) }); err != nil {
		t.Fatal(err)
	}
	if want := []float64{0, 10, 280, 285}; len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Errorf("arrivals %v, want %v", got, want)
	}
	// No gap of 30 s: the source itself.
	same, n, err := StretchGaps(context.Background(), trace.WindowContext(context.Background(), src, 0, 50), 3, 30)
	if err != nil || n != 0 || same.Name != "t [0s,50s)" {
		t.Errorf("no gap: n %d, %q, %v", n, same.Name, err)
	}
}

// TestSpaceFollowsReplica: the option dims' cold-start values become the
// replica's seconds: on the reference replica (91 s cold start, docs/
// replica.md) the coarse grid has lookahead 0 and 91 s and scale-down
// holds of 91 s and 364 s (4 cold starts), min 1 and 2: 8 combinations.
func TestSpaceFollowsReplica(t *testing.T) {
	m, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	cold := m.ColdStart()
	if math.Ceil(cold) != 91 {
		t.Fatalf("reference cold start %g s, the docs say 91 s", cold)
	}
	g := grid(DefaultSpace.Dims, cold)
	if len(g) != 8 {
		t.Fatalf("%d combinations, want 2 x 2 x 2", len(g))
	}
	seen := map[string]bool{}
	for _, opts := range g {
		c := Candidate{Metric: "queue", Target: 8, Options: opts}
		seen[c.Policy()] = true
	}
	for _, want := range []string{"queue:8,downwindow=91", "queue:8,min=2,lookahead=91,downwindow=364", "queue:8,lookahead=91,downwindow=364"} {
		if !seen[want] {
			t.Errorf("grid lacks %s: %v", want, seen)
		}
	}
}

// TestCandidateBuiltDirectly: the policy tune replays is the one its
// string parses to (the string is printed, not parsed back), and the
// serve block carries every option: min 2, lookahead 91 s and a 364 s
// scale-down hold.
func TestCandidateBuiltDirectly(t *testing.T) {
	c := cand("demand", 0.7, 2, 2, 91, 364)
	got, err := c.Recommend()
	if err != nil {
		t.Fatal(err)
	}
	want, err := replay.ParsePolicy(c.Policy())
	if err != nil {
		t.Fatal(err)
	}
	w := want.Recommend
	if got.Min != 2 || w.Min != 2 || got.Lookahead != w.Lookahead || *got.Behavior.ScaleDown.StabilizationWindowSeconds != 364 ||
		*w.Behavior.ScaleDown.StabilizationWindowSeconds != 364 || len(got.Metrics) != 3 || got.Metrics[2] != w.Metrics[2] {
		t.Errorf("built %+v, parsed %+v", got, w)
	}
	block := c.Block(Serve{}, 8)
	f, err := config.Parse([]byte(block), "tune.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, block)
	}
	p, err := f.Targets[0].Policy()
	if err != nil {
		t.Fatal(err)
	}
	if p.Min != 2 || p.Lookahead.Seconds() != 91 || *p.Behavior.ScaleDown.StabilizationWindowSeconds != 364 || !strings.Contains(block, "  minReplicaCount: 2\n") {
		t.Errorf("serve block decides min %d lookahead %v window %d\n%s", p.Min, p.Lookahead, *p.Behavior.ScaleDown.StabilizationWindowSeconds, block)
	}
	// Adapt keeps the live policy's max and capacity, takes the tuned parts.
	live := recommend.Policy{Min: 1, Max: 12, Capacity: p.Capacity, Metrics: []recommend.Metric{{Signal: recommend.SignalQueue, Target: 24}}}
	a, err := c.Adapt(live)
	if err != nil {
		t.Fatal(err)
	}
	if a.Max != 12 || a.Min != 2 || a.Capacity != p.Capacity || a.Metrics[0].Signal != recommend.SignalDemand || live.Metrics[0].Signal != recommend.SignalQueue || live.Behavior.ScaleDown != nil {
		t.Errorf("adapted %+v from live %+v", a, live)
	}
}

// onOff is code-completion-like traffic (issue 20): bursts at 25 req/s
// lasting an exponential 8 s on average, separated by gaps that are
// short (exponential, 4 s mean) half the time and otherwise silent for
// 30-300 s (a Pareto tail from 30 s, shape 1.2, cut at 300 s).
func onOff(seed uint64, span float64) trace.Source {
	rng := rand.New(rand.NewPCG(seed, 20))
	var reqs []trace.Request
	for t := 0.0; t < span; {
		end := t + rng.ExpFloat64()*8
		for t += rng.ExpFloat64() / 25; t < end && t < span; t += rng.ExpFloat64() / 25 {
			reqs = append(reqs, trace.Request{Arrival: t, Prompt: int32(500 + rng.IntN(1500)), Output: int32(20 + rng.IntN(100))})
		}
		if rng.IntN(2) == 0 {
			t = end + rng.ExpFloat64()*4
		} else {
			t = end + min(30/math.Pow(1-rng.Float64(), 1/1.2), 300)
		}
	}
	return trace.FromSlice("on-off", span, reqs)
}

// TestOnOffHolds: on bursty traffic with silent gaps (two hours, issue
// 20's code-completion shape), the search finds a candidate that holds in
// sample, out of sample and on every stressed copy, the gaps doubled
// among them.
func TestOnOffHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes on two hours of traffic")
	}
	src := onOff(1, 7200)
	n := 0
	if err := each(context.Background(), src, func(trace.Request) { n++ }); err != nil {
		t.Fatal(err)
	}
	_, gaps, _ := StretchGaps(context.Background(), src, 2, 30)
	t.Logf("%d requests (%.2f/s), %d gaps of 30 s or more", n, float64(n)/7200, gaps)
	m, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), src, Config{Replay: replay.Config{Model: m}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteText(io.Discard, "on-off"); err != nil {
		t.Fatal(err)
	}
	t.Logf("winner %s holds %v in %+v out %+v stress %+v (%d replays)", rep.Policy, rep.Holds, rep.InSample, rep.OutOfSample, rep.Stress, rep.Replays)
	if !rep.Holds || rep.InSample.MissPct > 0.1 || rep.OutOfSample.MissPct > 0.1 {
		t.Errorf("winner %s: holds %v, in %.2f%% out %.2f%%; want a candidate within 0.1%% everywhere", rep.Policy, rep.Holds, rep.InSample.MissPct, rep.OutOfSample.MissPct)
	}
}
