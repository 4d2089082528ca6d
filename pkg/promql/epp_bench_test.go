package promql

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
)

// BenchmarkEvaluate1000EPPTargets is one decision cycle's queries for
// 1,000 llm-d EPP targets reading the flow-control queue as held
// (running, waiting, reporting, kv, current, held, pools, pool_series):
// queries per cycle and the bytes of PromQL sent. Every answer is one
// series of 1, so no pool_series detail query is sent.
func BenchmarkEvaluate1000EPPTargets(b *testing.B) {
	targets := make([]Target, 1000)
	for i := range targets {
		ms, _ := ParseSelector(fmt.Sprintf(`{namespace="llm", service="t%d-epp"}`, i))
		targets[i] = Target{Name: fmt.Sprintf("t%d", i), Server: modelserver.EPP, Selector: ms, FlowControlHeld: true}
	}
	api := &countingAPI{}
	ev := &Evaluator{API: api, Parallel: 1}
	plan := NewPlan(targets, Options{}, 0)
	b.ReportAllocs()
	for b.Loop() {
		res, _ := ev.Run(context.Background(), plan, time.Unix(1e9, 0))
		if len(res[999].Errors) != 0 {
			b.Fatal(res[999].Errors)
		}
	}
	b.ReportMetric(float64(api.queries)/float64(b.N), "queries/cycle")
	b.ReportMetric(float64(api.bytes)/float64(b.N), "query-bytes/cycle")
}
