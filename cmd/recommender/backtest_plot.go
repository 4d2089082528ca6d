package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/infscale/infscale/pkg/backtest"
	"github.com/infscale/infscale/pkg/replay"
)

// plotBacktest draws the report with replay.PlotAt, dated from the
// history's start: arrivals (the reconstructed load), the replicas of the
// actual timeline (the "actual" line) and of each policy, and TTFT p95 per
// period against the SLO; the path written is reported on w.
func plotBacktest(w io.Writer, path string, rep backtest.Report, slo float64) error {
	var results []replay.Result
	if a := rep.Actual.Simulated; a != nil {
		results = append(results, *a)
	}
	for _, r := range rep.Policies {
		results = append(results, r.Result)
	}
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".") // as plotFileFormat
	if err := writeRendered(path, func(w io.Writer) error { return replay.PlotAt(w, format, results, slo, rep.Start) }); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	_, err := fmt.Fprintf(w, "plot: wrote %s\n", path)
	return err
}

// plotPairBacktest draws a pair's report with replay.PlotPairAt, dated
// from the history's start: arrivals, each pool's replicas of the actual
// timelines replayed ("actual") and of each policy, and the pair's TTFT
// p95 per period against the SLO; written atomically, the path reported
// on w.
func plotPairBacktest(w io.Writer, path string, rep backtest.PairReport) error {
	var results []replay.PDResult
	if a := rep.Actual.Simulated; a != nil {
		results = append(results, *a)
	}
	for _, r := range rep.Policies {
		results = append(results, r.PDResult)
	}
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".") // as plotFileFormat
	if err := writeRendered(path, func(w io.Writer) error { return replay.PlotPairAt(w, format, results, rep.SLOTTFT, rep.Start) }); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	_, err := fmt.Fprintf(w, "plot: wrote %s\n", path)
	return err
}
