package promtest

import (
	"fmt"
	"strings"
	"time"
)

// VLLMHistory is OpenMetrics text (Backfill's input) for one vLLM pod,
// {namespace="llm",pod="chat-1"}, scraped every minute from 10 minutes
// before start to end: it finishes one request a second
// (vllm:request_success_total rising 60 a minute), each of 500 prompt and
// 100 generated tokens, up is 1 throughout, and its in-flight gauges
// (vllm:num_requests_running 4, vllm:num_requests_waiting 0) are sampled
// only at the scrapes where gauge(at) is true (nil: never, a pod that
// exports none).
func VLLMHistory(start, end time.Time, gauge func(at time.Time) bool) string {
	const pod = `namespace="llm",pod="chat-1"`
	first := start.Add(-10 * time.Minute)
	var b strings.Builder
	family := func(name, typ string, value func(s int) float64, sampled func(time.Time) bool) {
		if sampled == nil {
			return
		}
		fmt.Fprintf(&b, "# TYPE %s %s\n", name, typ)
		series := name
		if typ == "counter" {
			series += "_total"
		}
		for at := first; !at.After(end); at = at.Add(time.Minute) {
			if sampled(at) {
				fmt.Fprintf(&b, "%s{%s} %g %d\n", series, pod, value(int(at.Sub(first).Seconds())), at.Unix())
			}
		}
	}
	always := func(time.Time) bool { return true }
	family("vllm:request_success", "counter", func(s int) float64 { return float64(s) }, always)
	family("vllm:prompt_tokens", "counter", func(s int) float64 { return 500 * float64(s) }, always)
	family("vllm:generation_tokens", "counter", func(s int) float64 { return 100 * float64(s) }, always)
	family("up", "gauge", func(int) float64 { return 1 }, always) // the pod's scrapes answer (the gauges count only then)
	family("vllm:num_requests_running", "gauge", func(int) float64 { return 4 }, gauge)
	family("vllm:num_requests_waiting", "gauge", func(int) float64 { return 0 }, gauge)
	b.WriteString("# EOF\n")
	return b.String()
}
