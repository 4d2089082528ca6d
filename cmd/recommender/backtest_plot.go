package main

import (
	"fmt"
	"io"
	"os"
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
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	format := strings.TrimPrefix(filepath.Ext(path), ".")
	if err := replay.PlotAt(f, format, results, slo, rep.Start); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "plot: wrote %s\n", path)
	return err
}
