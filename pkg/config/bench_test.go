package config

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParse1000Targets loads a configuration of 1,000 targets (linear
// in the file's size: leaves are decoded from their tokens).
func BenchmarkParse1000Targets(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("prometheus: {url: http://prometheus:9090}\ntargets:\n")
	for i := range 1000 {
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
