package accuracy

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/infscale/infscale/pkg/replica"
)

// sharedDir is the team's ground-truth data, beside the repository.
var sharedDir = filepath.Join("..", "..", "..", "shared", "testdata", "groundtruth")

func sharedStages(t *testing.T) []Stage {
	t.Helper()
	name := filepath.Join(sharedDir, "vllm-trainval.csv")
	if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("%s absent: the shared sim-to-real data set is not beside the repository", name)
	}
	st, err := ReadGroundTruth(name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSharedSetParses: the shared file has 34 rows (13 experiments, their
// stages and whole runs, README.md), every one with the five metrics; the
// peers' file has BLIS-evolved's prediction of each of them.
func TestSharedSetParses(t *testing.T) {
	st := sharedStages(t)
	if len(st) != 34 || len(experiments(st)) != 13 {
		t.Fatalf("%d rows in %d experiments, want 34 in 13", len(st), len(experiments(st)))
	}
	for _, s := range st {
		if len(s.Measured) != len(Metrics) {
			t.Errorf("%s:%d: %d metrics measured, want %d", s.File, s.Line, len(s.Measured), len(Metrics))
		}
	}
	peers, err := ReadPeers(filepath.Join(sharedDir, "peers-trainval.csv"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range peers {
		if p.Simulator == "blis-evolved" && p.Metric == TTFTMean {
			n++
		}
	}
	if n != 34 {
		t.Errorf("blis-evolved predicts ttft_mean on %d rows, want 34", n)
	}
}

// The MAPE bounds (percent) stated in docs/evaluation/ACCURACY.md:
// replica.Fitted() on every row of the shared set (in sample), and each
// of replica.FittedH100Folds on its held-out models' rows (out of
// sample). Issue 21's goal is 15 / 8 / 8 (mean TTFT / ITL / e2e).
var (
	// allBound is tighter than the goal: the fit reaches 8.8 / 6.3 / 6.2.
	allBound = map[Metric]float64{TTFTMean: 10, ITLMean: 7, E2EMean: 7}
	// foldBound[i] is replica.FittedH100Folds[i]'s: every fold holds the
	// goal out of sample (docs/evaluation/ACCURACY.md).
	foldBound = []map[Metric]float64{
		{TTFTMean: 15, ITLMean: 8, E2EMean: 8},
		{TTFTMean: 15, ITLMean: 8, E2EMean: 8},
		{TTFTMean: 15, ITLMean: 8, E2EMean: 8},
	}
)

func sharedMAPE(t *testing.T, base replica.Config, heldOut []string) Report {
	t.Helper()
	st := sharedStages(t)
	pred, err := Predict(context.Background(), st, Options{Base: &base, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return Compare(st, pred, nil, heldOut)
}

// TestSharedSetMAPE replays the shared set with replica.Fitted() and
// checks each metric's MAPE over all rows against its stated bound.
func TestSharedSetMAPE(t *testing.T) {
	r := sharedMAPE(t, replica.Fitted(), nil)
	t.Logf("all rows: %.1f / %.1f / %.1f", r.MAPE[TTFTMean], r.MAPE[ITLMean], r.MAPE[E2EMean])
	for m, b := range allBound {
		if got, ok := r.MAPE[m]; !ok || got > b {
			t.Errorf("all rows: %s MAPE %.1f%%, want <= %g%%", m, got, b)
		}
	}
}

// TestSharedSetHeldOutMAPE replays the shared set with each fold's terms
// (fitted without its held-out models) and checks each metric's MAPE on
// those models' rows against the fold's stated bound.
func TestSharedSetHeldOutMAPE(t *testing.T) {
	if len(replica.FittedH100Folds) != len(foldBound) {
		t.Fatalf("%d folds, %d bounds", len(replica.FittedH100Folds), len(foldBound))
	}
	for i, f := range replica.FittedH100Folds {
		r := sharedMAPE(t, f.Terms.Apply(replica.Calibrated()), f.HeldOut)
		t.Logf("fold %d %v: held out %.1f / %.1f / %.1f, fit rows %.1f / %.1f / %.1f", i, f.HeldOut,
			r.HeldOutMAPE[TTFTMean], r.HeldOutMAPE[ITLMean], r.HeldOutMAPE[E2EMean], r.FitMAPE[TTFTMean], r.FitMAPE[ITLMean], r.FitMAPE[E2EMean])
		for m, b := range foldBound[i] {
			if got, ok := r.HeldOutMAPE[m]; !ok || got > b {
				t.Errorf("fold %d, held-out models %v: %s MAPE %.1f%%, want <= %g%%", i, f.HeldOut, m, got, b)
			}
		}
	}
}
