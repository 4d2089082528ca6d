package config

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/infscale/infscale/internal/yamlbound"
)

// BenchmarkParse1000Targets loads a configuration of 1,000 targets (linear
// in the file's size: leaves are decoded from their tokens).
func BenchmarkParse1000Targets(b *testing.B) { benchParse(b, 1000) }

// BenchmarkParse10000Targets is the same at 10,000 targets (serve's
// 10,000-target benchmark loads this file at startup).
func BenchmarkParse10000Targets(b *testing.B) { benchParse(b, 10000) }

func benchParse(b *testing.B, n int) {
	var sb strings.Builder
	sb.WriteString("prometheus: {url: http://prometheus:9090}\ntargets:\n")
	for i := range n {
		fmt.Fprintf(&sb, "- {name: t%d, selector: '{namespace=\"llm\", deployment=\"t%d\"}', metrics: [{type: queue, target: 24}, {type: kv, target: 0.8}], max: 8}\n", i, i)
	}
	data := []byte(sb.String())
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		if _, err := Parse(data, "bench.yaml"); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(n), "B/target")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/target")
}

// BenchmarkParse10000BadTargets: 10,000 targets, each with a value that does
// not decode and a missing max (20,000 problems). Counting each target's
// problems by scanning all of them, and an insertion sort of the problems,
// were quadratic (14 s for 20,000 targets); both are linear now.
func BenchmarkParse10000BadTargets(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("targets:\n")
	for i := range 10000 {
		fmt.Fprintf(&sb, "- {name: t%d, scrape: ['http://h%d:1/metrics'], metrics: [{type: queue, target: 0x1}]}\n", i, i)
	}
	data := []byte(sb.String())
	b.ReportAllocs()
	for b.Loop() {
		_, err := Parse(data, "bench.yaml")
		if es, ok := err.(Errors); !ok || len(es) != MaxErrors+1 || es.Total() != 20000 || !strings.Contains(es[MaxErrors].Msg, fmt.Sprintf("and %d more problems", 20000-MaxErrors)) {
			b.Fatalf("want %d problems listed and 20000 counted, got %v", MaxErrors, len(es))
		}
	}
}

// BenchmarkParseTokenLimit is a configuration refused by its size in
// tokens: a MaxFileSize document of one-character list items ("[a,a,a,...",
// two bytes a token) is refused by yamlbound's count from its bytes before
// anything is built (goccy tokenized it whole first: 2.0 GB for 10 MB).
func BenchmarkParseTokenLimit(b *testing.B) {
	data := []byte("targets: [" + strings.Repeat("a,", MaxFileSize/2-8) + "a]\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, "bench.yaml"); err == nil || !strings.Contains(err.Error(), "YAML tokens") {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseAtTokenLimit is the costliest document the token count
// admits: one-character list items up to the count (2^20 tokens, each
// counted once; one target's worth of problems reported), the most
// tokens a parse builds. Its peak live heap is the bound on what a
// configuration costs to parse (docs/evaluation/PERFORMANCE.md).
func BenchmarkParseAtTokenLimit(b *testing.B) {
	data := []byte("targets: [" + strings.Repeat("a,", yamlbound.MaxTokens/2-8) + "a]\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, "bench.yaml"); err == nil || strings.Contains(err.Error(), "YAML tokens") {
			b.Fatal(err)
		}
	}
}
