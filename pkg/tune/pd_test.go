package tune

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
)

// TestPDFigures: a pair's figures are the pair's requests and misses,
// both pools' replica time and the two peaks added.
func TestPDFigures(t *testing.T) {
	// 100 requests: 90 met, 6 late, 3 unserved, 1 rejected = 10 misses
	// (10%); prefill 600 s + decode 1,200 s = 30 replica-minutes; peaks 2
	// + 3 = 5. A second result adds 50 requests, none missed, 60 s: 150
	// requests, 10 misses (6.67%), 31 minutes, peak still 5.
	a := replay.PDResult{Requests: 100, Met: 90, Late: 6, Unserved: 3, Rejected: 1,
		Prefill: replay.Result{ReplicaSeconds: 600, Peak: 2}, Decode: replay.Result{ReplicaSeconds: 1200, Peak: 3}}
	b := replay.PDResult{Requests: 50, Met: 50, Prefill: replay.Result{ReplicaSeconds: 30, Peak: 1}, Decode: replay.Result{ReplicaSeconds: 30, Peak: 1}}
	f := pdFigures(a)
	if f.Requests != 100 || f.Misses != 10 || f.MissPct != 10 || f.ReplicaMinutes != 30 || f.Peak != 5 {
		t.Errorf("one result: %+v", f)
	}
	g := pdFigures(a, b)
	if g.Requests != 150 || g.Misses != 10 || math.Abs(g.MissPct-20.0/3) > 1e-12 || g.ReplicaMinutes != 31 || g.Peak != 5 {
		t.Errorf("two results: %+v", g)
	}
}

// TestRunPDReference: tune --pd on the reference trace screens the whole
// grid, replays finalists on every part with tune's stress, and chooses
// by Choose: the winner is the row Choose picks among the finalists. No
// grid point holds there (the ramp at 1.5x and 2x outruns a cold start,
// docs/llm-d.md), so the floor round runs: its probes are finalists
// with a floor (prefill_min or decode_min) and not grid rows, and the
// winner is one of them and holds.
func TestRunPDReference(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the reference trace about 150 times")
	}
	m, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunPD(context.Background(), trace.Reference(1), Config{
		Replay: replay.Config{Model: m, SLOTTFT: 2, Period: 15}, Baselines: PDBaselines, Workers: 2,
	}, replay.PDConfig{KVLinkBytesPerSecond: 25e9})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != len(PDPrefillTargets)*len(PDDecodeTargets) {
		t.Errorf("%d rows screened, want %d", len(rep.Rows), len(PDPrefillTargets)*len(PDDecodeTargets))
	}
	fin := append([]Row(nil), rep.Finalists...)
	best, ok := Choose(fin, DefaultMaxMissPct)
	if fin[best].Policy != rep.Policy || ok != rep.Holds {
		t.Errorf("winner %s (holds %v); Choose over the finalists gives %s (%v)", rep.Policy, rep.Holds, fin[best].Policy, ok)
	}
	if !rep.Holds || !strings.Contains(rep.Policy, "_min=") {
		t.Errorf("winner %s holds %v; want a floor round probe (prefill_min or decode_min) that holds", rep.Policy, rep.Holds)
	}
	for _, f := range rep.Finalists {
		if f.InSample == nil || f.OutOfSample == nil || len(f.Stress) != len(DefaultStress) {
			t.Errorf("finalist %s not replayed on every part: %+v", f.Policy, f)
		}
	}
	if len(rep.Baselines) != len(PDBaselines) || rep.Baselines[0].Policy != "recommended" {
		t.Errorf("baselines %+v", rep.Baselines)
	}
	var out bytes.Buffer
	if err := rep.WriteText(&out, "reference"); err != nil || !strings.Contains(out.String(), "winner: "+rep.Policy) {
		t.Errorf("text %v:\n%s", err, out.String())
	}
}

// TestPDHeaderSeconds: a trace whose span is not whole seconds (azure-conv
// at 3x: 1167.24 s) prints its split and span in whole seconds, as the
// single pool's header does ("held out 875s to 1167.2406456666665s"
// before).
func TestPDHeaderSeconds(t *testing.T) {
	var b strings.Builder
	r := PDReport{Split: 875.43, Duration: 1167.2406456666665, Screened: "the whole in-sample part", Replays: 102, Policy: "recommended"}
	r.Holds = true
	if err := r.WriteText(&b, "azure x3"); err != nil {
		t.Fatal(err)
	}
	want := "P/D pair tuned on azure x3 (in sample 0 to 875s, held out 875s to 1167s; screened on the whole in-sample part): 102 replays\n"
	if first, _, _ := strings.Cut(b.String(), "\n"); first+"\n" != want {
		t.Errorf("header %q, want %q", first, want)
	}
}
