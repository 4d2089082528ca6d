package accuracy

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/replica"
)

// TestFitFolds refits the step model on the shared set without each
// fold's models (replica.FittedH100Folds), then on every row, and prints
// the terms and the MAPE on the fit rows and on the held-out rows, with
// the held-out rows' TTFT and ITL errors: how docs/evaluation/ACCURACY.md's
// fold and variant tables were made. Minutes per fit, so it runs only with
// INFSCALE_FIT_FOLDS=1; INFSCALE_FIT_PARAMS (comma-separated FitParams
// names) tries another set of terms, INFSCALE_FIT_FOLD=i one fold (3: all
// rows).
func TestFitFolds(t *testing.T) {
	if os.Getenv("INFSCALE_FIT_FOLDS") == "" {
		t.Skip("minutes per fit: set INFSCALE_FIT_FOLDS=1 to refit the folds")
	}
	if p := os.Getenv("INFSCALE_FIT_PARAMS"); p != "" {
		old := FitParams
		FitParams = strings.Split(p, ",")
		defer func() { FitParams = old }()
	}
	st := sharedStages(t)
	var folds [][]string
	for _, f := range replica.FittedH100Folds {
		folds = append(folds, f.HeldOut)
	}
	folds = append(folds, nil)
	if f := os.Getenv("INFSCALE_FIT_FOLD"); f != "" {
		i, err := strconv.Atoi(f)
		if err != nil || i < 0 || i >= len(folds) {
			t.Fatalf("INFSCALE_FIT_FOLD=%q: want 0 to %d", f, len(folds)-1)
		}
		folds = folds[i : i+1]
	}
	base := replica.Fitted()
	for _, h := range folds {
		fit, err := Fit(context.Background(), st, Options{Base: &base, Seed: 1}, h)
		if err != nil {
			t.Fatal(err)
		}
		pred, err := Predict(context.Background(), st, Options{Base: &fit.Config, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := Compare(st, pred, nil, h)
		fmt.Printf("=== held out %v\n%s\n", h, fit.Terms())
		fmt.Printf("fit rows   ttft %.1f itl %.1f e2e %.1f\n", r.FitMAPE[TTFTMean], r.FitMAPE[ITLMean], r.FitMAPE[E2EMean])
		fmt.Printf("held out   ttft %.1f itl %.1f e2e %.1f\n", r.HeldOutMAPE[TTFTMean], r.HeldOutMAPE[ITLMean], r.HeldOutMAPE[E2EMean])
		fmt.Printf("all        ttft %.1f itl %.1f e2e %.1f\n", r.MAPE[TTFTMean], r.MAPE[ITLMean], r.MAPE[E2EMean])
		for _, x := range r.Rows {
			if x.HeldOut && x.Stage >= 0 && (x.Metric == ITLMean || x.Metric == TTFTMean) {
				fmt.Printf("  %-50s %d %-9s %7.2f %7.2f %+6.1f\n", x.Experiment, x.Stage, x.Metric, x.PredictedMS, x.ActualMS, x.ErrorPct)
			}
		}
	}
}
