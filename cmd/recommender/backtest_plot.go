package main

import (
	"errors"

	"github.com/infscale/infscale/pkg/backtest"
)

// plotBacktest draws the report (placeholder until the plot lands).
func plotBacktest(path string, rep backtest.Report) error {
	return errors.New("plots are not available in this build")
}
