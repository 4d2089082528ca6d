package replay

import (
	"context"
	"fmt"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// BenchmarkSyntheticQueue24 replays steady Poisson traffic at 30 req/s
// (reference token lengths) under queue:24 for an hour, a day and a week
// (18.1 M requests); the cost should grow linearly with the span. Figures
// are in docs/evaluation/PERFORMANCE.md; run the week alone with
// go test -run '^$' -bench 'SyntheticQueue24/week' -benchtime 1x ./pkg/replay/.
func BenchmarkSyntheticQueue24(b *testing.B) {
	pol, err := ParsePolicy("queue:24")
	if err != nil {
		b.Fatal(err)
	}
	model := referenceModel(b)
	for _, span := range []struct {
		name string
		secs float64
	}{{"hour", 3600}, {"day", 86400}, {"week", 7 * 86400}} {
		b.Run(span.name, func(b *testing.B) {
			src := trace.Synthetic{Rate: 30, Duration: span.secs, Prompt: trace.ReferenceShape.Prompt, Output: trace.ReferenceShape.Output, Seed: 1}.Source()
			var res Result
			for b.Loop() {
				res, err = Run(context.Background(), src, pol, Config{Model: model})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.Requests), "requests")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(res.Requests), "ns/request")
			b.ReportMetric(span.secs*float64(b.N)/b.Elapsed().Seconds(), "x-realtime")
			_ = fmt.Sprint()
		})
	}
}

// BenchmarkOptimal runs the hindsight optimum's search and replay on the
// reference trace and on a day and a week of 30 req/s (docs/evaluation/PERFORMANCE.md).
func BenchmarkOptimal(b *testing.B) {
	pol, err := ParsePolicy("optimal")
	if err != nil {
		b.Fatal(err)
	}
	model := referenceModel(b)
	for _, c := range []struct {
		name string
		src  trace.Source
	}{
		{"reference", trace.Reference(1)},
		{"day", trace.Synthetic{Rate: 30, Duration: 86400, Prompt: trace.ReferenceShape.Prompt, Output: trace.ReferenceShape.Output, Seed: 1}.Source()},
		{"week", trace.Synthetic{Rate: 30, Duration: 7 * 86400, Prompt: trace.ReferenceShape.Prompt, Output: trace.ReferenceShape.Output, Seed: 1}.Source()},
	} {
		b.Run(c.name, func(b *testing.B) {
			var res Result
			for b.Loop() {
				if res, err = Run(context.Background(), c.src, pol, Config{Model: model}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.Requests), "requests")
			b.ReportMetric(res.ReplicaMinutes(), "replica-min")
		})
	}
}

// BenchmarkOptimalBurst runs the hindsight optimum on n requests all
// arriving at second 0 (reference token lengths): issue #23's trace of
// 40,000 took over 70 s. The cost should grow about linearly with n.
func BenchmarkOptimalBurst(b *testing.B) {
	pol, err := ParsePolicy("optimal")
	if err != nil {
		b.Fatal(err)
	}
	model := referenceModel(b)
	for _, n := range []int{2500, 5000, 10000, 40000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			src := burstAtZero(n)
			var res Result
			for b.Loop() {
				if res, err = Run(context.Background(), src, pol, Config{Model: model}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(res.ReplicaMinutes(), "replica-min")
			b.ReportMetric(float64(res.Misses()), "misses")
		})
	}
}

// burstAtZero is n requests at second 0 with the reference trace's token
// ranges (drawn from a fixed sequence: prompt 192-448, output 64-448).
func burstAtZero(n int) trace.Source {
	reqs := make([]trace.Request, n)
	x := uint64(1)
	for i := range reqs {
		x = x*6364136223846793005 + 1442695040888963407
		reqs[i] = trace.Request{Prompt: int32(192 + (x>>33)%257), Output: int32(64 + (x>>13)%385)}
	}
	return trace.FromSlice("burst", 0, reqs)
}

// BenchmarkLowerBound is the certified lower bound's streaming pass alone
// (optimal_bound.go) on synthetic:diurnal, a day of 3 to 30 req/s, with the
// reference replica (docs/simulate.md, "The lower bound").
func BenchmarkLowerBound(b *testing.B) {
	src, err := trace.ParseContext(context.Background(), "synthetic:diurnal", trace.Options{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	model := referenceModel(b)
	sp, err := newSpeed(model)
	if err != nil {
		b.Fatal(err)
	}
	e := env{cfg: Config{Model: model}.Defaults(), sp: sp, src: src}
	var lb Bound
	for b.Loop() {
		if lb, err = lowerBound(context.Background(), e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lb.requests), "requests")
	b.ReportMetric(lb.ReplicaSeconds/60, "replica-min")
}
