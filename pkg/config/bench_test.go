package config

import (
	"fmt"
	"strings"
	"testing"
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
	for b.Loop() {
		if _, err := Parse(data, "bench.yaml"); err != nil {
			b.Fatal(err)
		}
	}
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
		if es, ok := err.(Errors); !ok || len(es) != 20000 {
			b.Fatalf("want 20000 problems, got %v", len(es))
		}
	}
}
