package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/replay"
)

// TestPDCSVExact: simulate --pd --output csv rounded miss_pct and the
// replica minutes to two decimals and the latencies to six digits: a miss
// share of 0.004% read 0.00, against docs/simulate.md's "JSON and CSV carry
// the exact miss_pct" (what a budget such as tune --max-miss's 0.1% is
// held against). The cells are the numbers as given, as the single-pool
// CSV and backtest's pair CSV write them.
func TestPDCSVExact(t *testing.T) {
	ttft, itl := 0.0205383123, 0.00684356689453125
	row := replay.PDRow{Policy: "recommended", Requests: 25000, Misses: 1, MissPct: 0.004, TTFTP95: &ttft, ITLP95: &itl,
		PrefillMinutes: 1.125, DecodeMinutes: 0.4375, TotalMinutes: 1.5625, PrefillPeak: 1, DecodePeak: 2, ScaleEvents: 3}
	var b bytes.Buffer
	if err := replay.WritePDCSV(&b, []replay.PDRow{row}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := "recommended,25000,1,0.004,0.0205383123,0.00684356689453125,1.125,0.4375,1.5625,1,2,3"
	if len(lines) != 2 || lines[1] != want {
		t.Errorf("CSV:\n%s\nwant the row %s", b.String(), want)
	}
}
