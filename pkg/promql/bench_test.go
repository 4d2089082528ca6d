package promql

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/modelserver"
)

// countingAPI answers a batched query with one sample per target index (the
// query's label_replace count), value 1, as a Prometheus would that has data
// for every target. It does no PromQL: the benchmark measures infscale's side.
// countingAPI counts queries; Evaluate runs up to Parallel of them at once.
type countingAPI struct {
	mu             sync.Mutex
	queries, bytes int
}

func (c *countingAPI) Instant(_ context.Context, q string, ts time.Time) (model.Vector, []string, error) {
	c.mu.Lock()
	c.queries++
	c.bytes += len(q)
	c.mu.Unlock()
	n := strings.Count(q, `"`+TargetLabel+`"`)
	if n == 0 {
		return model.Vector{{Metric: model.Metric{}, Value: 1}}, nil, nil
	}
	out := make(model.Vector, n)
	for i := range out {
		out[i] = &model.Sample{Metric: model.Metric{TargetLabel: model.LabelValue(strconv.Itoa(i))}, Value: 1, Timestamp: model.TimeFromUnixNano(ts.UnixNano())}
	}
	return out, nil, nil
}

func (c *countingAPI) Range(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, []string, error) {
	return nil, nil, nil
}

func manyTargets(n int) []Target {
	out := make([]Target, n)
	for i := range out {
		ms, _ := ParseSelector(fmt.Sprintf(`{namespace="llm", pod=~"t%d-.*"}`, i))
		out[i] = Target{Name: fmt.Sprintf("t%d", i), Server: modelserver.VLLM, Selector: ms,
			TTFTQuantile: 0.95, TTFTWindow: 3 * time.Minute,
			Replicas: fmt.Sprintf(`kube_deployment_spec_replicas{namespace="llm",deployment="t%d"}`, i)}
	}
	return out
}

// BenchmarkPlan1000Targets builds and prints the queries of 1,000 targets
// (once per config load).
func BenchmarkPlan1000Targets(b *testing.B) {
	targets := manyTargets(1000)
	b.ReportAllocs()
	for b.Loop() {
		NewPlan(targets, Options{}, 0)
	}
}

// BenchmarkEvaluateCached1000Targets is Evaluate with the same targets
// every cycle: the plan cache's key check plus the cycle.
func BenchmarkEvaluateCached1000Targets(b *testing.B) {
	targets := manyTargets(1000)
	ev := &Evaluator{API: &countingAPI{}, Parallel: 1}
	b.ReportAllocs()
	for b.Loop() {
		ev.Evaluate(context.Background(), targets, time.Unix(1e9, 0))
	}
}

// BenchmarkEvaluate1000Targets is one decision cycle's queries for 1,000
// vLLM targets (running, waiting, reporting, kv, ttft, current): reports
// queries per cycle (goal <= 10) and the bytes of PromQL sent.
func BenchmarkEvaluate1000Targets(b *testing.B) {
	targets := manyTargets(1000)
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

// The query count of a cycle depends on the signals and on
// ceil(targets / BatchSize), never on pods. By hand for 6 signals:
// 1 target -> 6; 1,000 -> 6; 2,500 at the default 10,000 per batch -> 6;
// 2,500 at 1,000 per batch -> 6 * 3 = 18; BatchSize 1 -> 6 per target.
func TestQueryCountGrowth(t *testing.T) {
	for _, tc := range []struct{ targets, batch, want int }{
		{1, 0, 6}, {1000, 0, 6}, {2500, 0, 6}, {2500, 1000, 18}, {10, 1, 60},
	} {
		api := &countingAPI{}
		_, st := (&Evaluator{API: api, BatchSize: tc.batch}).Evaluate(context.Background(), manyTargets(tc.targets), time.Unix(1e9, 0))
		if st.Queries != tc.want || api.queries != tc.want {
			t.Errorf("%d targets, batch %d: %d queries (api saw %d), want %d", tc.targets, tc.batch, st.Queries, api.queries, tc.want)
		}
	}
}

// TestBatchCut: a batch takes targets up to BatchSize and while the text,
// each query plus 64 bytes of wrapping, fits in MaxBatchBytes (4 MiB =
// 4,194,304 bytes). Queries of 1,000,000 bytes: 4 take 4,000,256 and fit,
// 5 take 5,000,320 and do not, so 10 go as 4, 4, 2; a query alone larger
// than the cap still goes (alone).
func TestBatchCut(t *testing.T) {
	jobsOf := func(n, size int) []job {
		js := make([]job, n)
		for i := range js {
			js[i].text = verbatim(strings.Repeat("x", size))
		}
		return js
	}
	var cuts []int
	for js := jobsOf(10, 1_000_000); len(js) > 0; {
		n := batchCut(js, DefaultBatchSize)
		cuts = append(cuts, n)
		js = js[n:]
	}
	if fmt.Sprint(cuts) != "[4 4 2]" {
		t.Errorf("cuts %v, want [4 4 2]", cuts)
	}
	if n := batchCut(jobsOf(3, 5_000_000), DefaultBatchSize); n != 1 {
		t.Errorf("oversized query: batch of %d, want 1", n)
	}
	if n := batchCut(jobsOf(10, 100), 3); n != 3 {
		t.Errorf("BatchSize 3: batch of %d, want 3", n)
	}
	// Through NewPlan: no batch of long-selector targets passes the cap.
	targets := manyTargets(10)
	for i := range targets {
		ms, _ := ParseSelector(fmt.Sprintf(`{namespace="llm", pod=~"t%d-%s"}`, i, strings.Repeat("a", 500_000)))
		targets[i].Selector = ms
	}
	p := NewPlan(targets, Options{}, 0)
	for _, b := range p.batches {
		if n := len(textString(b.text)); n > MaxBatchBytes {
			t.Errorf("%s batch of %d targets: %d bytes > %d", b.signal, len(b.jobs), n, MaxBatchBytes)
		}
	}
	if p.Queries() <= 6 {
		t.Errorf("%d queries: 10 targets of 500 kB selectors (5 MB a signal) fit in one batch per signal", p.Queries())
	}
}
