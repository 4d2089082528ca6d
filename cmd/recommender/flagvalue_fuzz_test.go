package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/quantity"
	"github.com/infscale/infscale/pkg/replica"
)

// FuzzFlagValues: the flag values with a syntax of their own (sizes,
// durations, --shard, --goodput, --stress, targets, GPU, model and dtype
// names, times) either read within their documented range, finite, or are
// an error; never a panic.
func FuzzFlagValues(f *testing.F) {
	for _, s := range []string{
		"4GB", "3.05GiB", "500MB", "1e9B", "25GB", "1.25GB", "10Gb", "nvlink", "128MiB", "80",
		"2s", "500ms", "1m30s", "7d", "90", "0/4", "/4", "3/4",
		"ttft:2s,tpot:100ms,e2el:30s", "ttft:500", "rate:2", "bursts:3", "gaps:1.5", "none",
		"0.75", "75%", "1d", "h100", "H100-SXM", "llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", "fp8", "bfloat16", "vllm",
		"-7d", "now", "2026-01-05T00:00:00Z", "1700000000",
	} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		t.Setenv("JOB_COMPLETION_INDEX", "1")
		for name, parse := range map[string]func(string) (float64, error){"parseBytes": parseBytes, "parseLinkBytes": parseLinkBytes} {
			if v, err := parse(s); err == nil && !(v >= 0 && !math.IsInf(v, 0)) {
				t.Fatalf("%s(%q) = %v, want a finite size >= 0", name, s, v)
			}
		}
		if n, err := heldBytes(s); err == nil && (n < 1<<20 || n > 1<<40) {
			t.Fatalf("heldBytes(%q) = %d", s, n)
		}
		if _, err := parseFlagDuration(s); err != nil && err.Error() == "" {
			t.Fatalf("parseFlagDuration(%q): empty error", s)
		}
		if i, n, err := parseShard(s); err == nil && !(0 <= i && i < n) {
			t.Fatalf("parseShard(%q) = %d/%d", s, i, n)
		}
		if g, err := parseGoodput(s); err == nil && g != nil {
			for _, v := range []float64{g.TTFT, g.TPOT, g.E2E} {
				if !(v >= 0 && v <= maxLoadDuration.Seconds()) {
					t.Fatalf("parseGoodput(%q) = %+v", s, g)
				}
			}
		}
		if st, err := parseStress(strings.Split(s, ","), true); err == nil {
			for _, x := range st {
				for _, v := range []float64{x.Rate, x.Bursts, x.Gaps} {
					if !(v >= 0 && v <= 100) {
						t.Fatalf("parseStress(%q) = %+v", s, st)
					}
				}
			}
		}
		if v, _, err := quantity.Parse(s); err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("quantity.Parse(%q) = %v", s, v)
		}
		if v, err := quantity.Fraction(s); err == nil && math.IsNaN(v) {
			t.Logf("quantity.Fraction(%q) = %v (callers check the range)", s, v)
		}
		if g, err := replica.LookupGPU(s); err == nil && !(g.MemoryBytes > 0 && g.BandwidthBytesPerSecond > 0) {
			t.Fatalf("LookupGPU(%q) = %+v", s, g)
		}
		if m, err := replica.LookupModel(s); err == nil && !(m.Params() > 0) {
			t.Fatalf("LookupModel(%q) = %+v", s, m)
		}
		replica.ParseDType(s)
		replica.ParseAccounting(s)
		if tm, err := parseTime(s, now); err == nil && (tm.Year() < 1970 || tm.Year() > 2262) {
			t.Fatalf("parseTime(%q) = %v", s, tm)
		}
	})
}
