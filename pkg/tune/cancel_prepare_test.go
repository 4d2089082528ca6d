package tune

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
)

// TestPrepareHonoursContext: tune read its trace passes (the split check,
// the screening windows' count and read, the stretched gaps) without
// looking at the context: tune --trace synthetic:poisson,rate=1e5,
// duration=2d ran on for ten minutes after SIGTERM. A cancelled run now
// stops within one check (65,536 requests) of each pass; here the whole
// trace, 268 million requests (tens of seconds a pass), is never read.
func TestPrepareHonoursContext(t *testing.T) {
	src, err := trace.ParseContext(context.Background(), "synthetic:poisson,rate=74565,duration=1h", trace.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, err = Run(ctx, src, Config{Replay: replay.Config{Model: m}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run on a cancelled context: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run on a cancelled context took %v, want it back within a check", d)
	}
}
