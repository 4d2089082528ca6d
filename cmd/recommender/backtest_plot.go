package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/infscale/infscale/pkg/backtest"
	"github.com/infscale/infscale/pkg/replay"
)

// plotBacktest draws the report with replay.Plot: arrivals (the
// reconstructed load), the replicas of the actual timeline (the "actual"
// line) and of each policy, and TTFT p95 per period against the SLO.
func plotBacktest(path string, rep backtest.Report, slo float64) error {
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
	if err := replay.Plot(f, format, results, slo); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
