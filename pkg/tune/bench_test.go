package tune

import (
	"context"
	"testing"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
)

// BenchmarkTuneWeek tunes on a week of 30 req/s (18 million requests of
// the reference lengths) with the default space, stress and workers: the
// target is at most 5 minutes on a 2-core machine (docs/evaluation/PERFORMANCE.md).
func BenchmarkTuneWeek(b *testing.B) {
	m, err := replica.New(replica.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	src, err := trace.ParseContext(context.Background(), "synthetic:poisson,rate=30,duration=7d", trace.Options{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rep, err := Run(context.Background(), src, Config{Replay: replay.Config{Model: m}})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rep.Replays), "replays")
		b.Logf("winner %s holds %v in %+v out %+v", rep.Policy, rep.Holds, rep.InSample, rep.OutOfSample)
	}
}
