package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSimulatePlotOnePeriod: a replay spanning less than two periods (a
// 20 s trace at the 15 s default: one timeline row, at 15 s) wrote a plot
// whose three panels were empty (no line has one point), exit 0. It is
// refused before the replay, naming the span and what to change; at 30 s
// (two rows, 15 and 30 s) the plot is written.
func TestSimulatePlotOnePeriod(t *testing.T) {
	dir := t.TempDir()
	short, long := filepath.Join(dir, "short.csv"), filepath.Join(dir, "long.csv")
	os.WriteFile(short, []byte("0,100,50\n20,100,20\n"), 0o644)
	os.WriteFile(long, []byte("0,100,50\n30,100,20\n"), 0o644)
	png := filepath.Join(dir, "p.png")
	wantRefused(t, []string{"simulate", "-q", "-p", "fixed:1", "--trace", short, "--plot", png}, nil,
		"--plot: the replay spans 20 s, less than two periods of 15s: a plot draws a line through two or more")
	if _, err := os.Stat(png); err == nil {
		t.Errorf("refused, yet %s was written", png)
	}
	if code, _, errs := runIn(t, nil, "simulate", "-q", "-p", "fixed:1", "--trace", long, "--plot", png); code != 0 {
		t.Errorf("30 s: exit %d: %s", code, errs)
	}
}
