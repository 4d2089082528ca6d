package scrape

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
)

// benchPage is a vLLM V1 page with 8 data-parallel engines, each with the
// scheduler gauges, token counters and a 20-bucket TTFT histogram, plus 100
// unrelated families: ~1,000 samples, the size of a real busy page.
func benchPage() []byte {
	var b strings.Builder
	for e := range 8 {
		l := fmt.Sprintf(`engine="%d",model_name="m"`, e)
		fmt.Fprintf(&b, "vllm:num_requests_running{%s} %d\nvllm:num_requests_waiting{%s} %d\nvllm:kv_cache_usage_perc{%s} 0.%d\n", l, e, l, e, l, e)
		fmt.Fprintf(&b, "vllm:prompt_tokens_total{%s} %d\nvllm:generation_tokens_total{%s} %d\n", l, e*1000, l, e*2000)
		for i := range 20 {
			fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{%s,le=\"%g\"} %d\n", l, 0.01*float64(i+1), i)
		}
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{%s,le=\"+Inf\"} 20\n", l)
	}
	for i := range 100 {
		for j := range 7 {
			fmt.Fprintf(&b, "other_family_%d{k=\"%d\"} %d\n", i, j, j)
		}
	}
	return []byte(b.String())
}

func BenchmarkRead(b *testing.B) {
	page := benchPage()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(page), "", "bench", modelserver.Unknown); err != nil {
			b.Fatal(err)
		}
	}
}
