package replay

import (
	"context"
	"reflect"
	"runtime"
	"testing"

	gpu "github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"

	"github.com/infscale/infscale/internal/sharedtest"
)

func referenceModel(t testing.TB) *gpu.Replica {
	t.Helper()
	r, err := gpu.New(gpu.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func runPolicies(t testing.TB, src trace.Source, cfg Config, specs ...string) []Result {
	t.Helper()
	pols := make([]Policy, len(specs))
	for i, s := range specs {
		p, err := ParsePolicy(s)
		if err != nil {
			t.Fatal(err)
		}
		pols[i] = p
	}
	res, err := RunAll(context.Background(), src, pols, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestReferenceOrdering checks docs/design.md's reference comparison ordering on
// the built-in reference trace (seed 1) with the reference replica, a 2 s
// SLO and a 15 s period. The expected relations are docs/design.md's, not this
// code's output.
func TestReferenceOrdering(t *testing.T) {
	res := runPolicies(t, trace.Reference(1), Config{Model: referenceModel(t)},
		"cpu:60", "cpu:25", "queue:24", "queue:24,lookahead=90", "queue:24,min=0,cooldown=120", "oracle")
	by := map[string]Result{}
	for _, r := range res {
		by[r.Policy] = r
		t.Logf("%-30s requests %d misses %d (%.1f%%) p50 %.2fs p95 %.2fs replica-min %.1f peak %d events %d reversals %d",
			r.Policy, r.Requests, r.Misses(), r.MissPct(), r.TTFTP50, r.TTFTP95, r.ReplicaMinutes(), r.Peak, r.ScaleEvents, r.Reversals)
	}
	cpu60, cpu25, q, look, zero, oracle := by["cpu:60"], by["cpu:25"], by["queue:24"], by["queue:24,lookahead=90"], by["queue:24,min=0,cooldown=120"], by["oracle"]
	// cpu:60 never scales: a pod reads at most 46% CPU; most requests miss.
	if cpu60.Peak != 1 || cpu60.ScaleEvents != 0 || cpu60.MissPct() <= 50 {
		t.Errorf("cpu:60: peak %d, %d scale events, %.1f%% misses; want peak 1, no scaling, most requests missing", cpu60.Peak, cpu60.ScaleEvents, cpu60.MissPct())
	}
	// cpu:25 meets the SLO and costs the most.
	if cpu25.Misses() != 0 {
		t.Errorf("cpu:25: %d misses, want 0", cpu25.Misses())
	}
	for _, r := range res {
		if r.Policy != "cpu:25" && r.ReplicaSeconds >= cpu25.ReplicaSeconds {
			t.Errorf("%s costs %.1f replica-min, not less than cpu:25's %.1f", r.Policy, r.ReplicaMinutes(), cpu25.ReplicaMinutes())
		}
	}
	// queue:24: small misses (0.1-5%) at <= 75% of cpu:25's replica time.
	if p := q.MissPct(); p < 0.1 || p > 5 {
		t.Errorf("queue:24 misses %.2f%%, want 0.1..5%%", p)
	}
	if q.ReplicaSeconds > 0.75*cpu25.ReplicaSeconds {
		t.Errorf("queue:24 %.1f replica-min > 75%% of cpu:25's %.1f", q.ReplicaMinutes(), cpu25.ReplicaMinutes())
	}
	// lookahead=90 removes the misses.
	if look.Misses() != 0 {
		t.Errorf("queue:24,lookahead=90: %d misses, want 0", look.Misses())
	}
	// min=0,cooldown=120 saves the silent minutes.
	if zero.ReplicaSeconds >= q.ReplicaSeconds {
		t.Errorf("queue:24,min=0,cooldown=120 %.1f replica-min, want fewer than queue:24's %.1f", zero.ReplicaMinutes(), q.ReplicaMinutes())
	}
	// The oracle is the cheapest zero-miss row.
	if oracle.Misses() != 0 {
		t.Errorf("oracle: %d misses, want 0", oracle.Misses())
	}
	for _, r := range res {
		if r.Policy != "oracle" && r.Misses() == 0 && r.ReplicaSeconds <= oracle.ReplicaSeconds {
			t.Errorf("%s: zero misses at %.1f replica-min, not more than the oracle's %.1f", r.Policy, r.ReplicaMinutes(), oracle.ReplicaMinutes())
		}
	}
	for _, r := range res {
		if r.Met+r.Late+r.Unserved+r.Rejected != r.Requests {
			t.Errorf("%s: %d+%d+%d+%d != %d requests", r.Policy, r.Met, r.Late, r.Unserved, r.Rejected, r.Requests)
		}
	}
}

// TestAzureAccounting: on the Azure conversation trace every request is
// accounted for: met + late + unserved + rejected = 19,366 (its README).
func TestAzureAccounting(t *testing.T) {
	p := sharedtest.Path(t, "traces", "azure-llm-2023-conv.csv")
	src, err := trace.ParseContext(context.Background(), p, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runPolicies(t, src, Config{Model: referenceModel(t)}, "queue:24", "fixed:1", "oracle", "knative:24", "hpa(recommended)") {
		if r.Requests != 19366 || r.Met+r.Late+r.Unserved+r.Rejected != 19366 {
			t.Errorf("%s: requests %d, met %d + late %d + unserved %d + rejected %d; want 19366 in all", r.Policy, r.Requests, r.Met, r.Late, r.Unserved, r.Rejected)
		}
		t.Logf("%-20s misses %d (%.2f%%) replica-min %.1f peak %d", r.Policy, r.Misses(), r.MissPct(), r.ReplicaMinutes(), r.Peak)
	}
}

// TestDeterministic: the same inputs give the same results, in parallel or
// one at a time.
func TestDeterministic(t *testing.T) {
	cfg := Config{Model: referenceModel(t), Timeline: true}
	specs := []string{"queue:24", "knative:24", "oracle", "hpa(queue:24,lookahead=90)", "ttft:1s", "kv:0.5"}
	a := runPolicies(t, trace.Reference(7), cfg, specs...)
	for i, s := range specs {
		b := runPolicies(t, trace.Reference(7), cfg, s)
		if !reflect.DeepEqual(stripNaN(a[i]), stripNaN(b[0])) {
			t.Errorf("%s: parallel and alone differ", s)
		}
	}
}

// TestReadAheadSameResult: reading the trace ahead on a second core
// (GOMAXPROCS > 1) leaves every figure of a replay as reading it inline.
func TestReadAheadSameResult(t *testing.T) {
	cfg := Config{Model: referenceModel(t), Timeline: true}
	specs := []string{"queue:24", "recommended"}
	prev := runtime.GOMAXPROCS(1)
	inline := runPolicies(t, trace.Reference(3), cfg, specs...)
	runtime.GOMAXPROCS(max(prev, 2))
	ahead := runPolicies(t, trace.Reference(3), cfg, specs...)
	runtime.GOMAXPROCS(prev)
	for i, s := range specs {
		if !reflect.DeepEqual(stripNaN(inline[i]), stripNaN(ahead[i])) {
			t.Errorf("%s: read ahead and inline differ", s)
		}
	}
}

// stripNaN replaces NaNs (which never compare equal) for DeepEqual.
func stripNaN(r Result) Result {
	tl := make([]Sample, len(r.Timeline))
	for i, s := range r.Timeline {
		for _, f := range []*float64{&s.Running, &s.Waiting, &s.Held, &s.TTFTP95} {
			if *f != *f {
				*f = -1
			}
		}
		tl[i] = s
	}
	r.Timeline = tl
	return r
}
