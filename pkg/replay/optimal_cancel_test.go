package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/trace"
)

// TestOptimalStopsOnCancel: the hindsight optimum's search notices a
// cancelled context (an interrupt) within a period's search. At 20,000
// req/s (300,000 requests a 15 s period) it checked once every 64
// periods: simulate -p optimal ran on for over a minute after SIGINT. Two
// seconds in, a cancel must end it well within 15 s (a period takes well
// under a second here).
func TestOptimalStopsOnCancel(t *testing.T) {
	pol, err := ParsePolicy("optimal")
	if err != nil {
		t.Fatal(err)
	}
	src := trace.Synthetic{Rate: 20000, Duration: 600, Prompt: trace.ReferenceShape.Prompt, Output: trace.ReferenceShape.Output, Seed: 1}.Source()
	if err := runCancelled(t, src, pol, 2*time.Second, 15*time.Second); err != nil {
		t.Error(err)
	}
}

// runCancelled replays src under pol, cancels it after after and says
// what is wrong unless the replay ends with context.Canceled within
// within of the cancel.
func runCancelled(t *testing.T, src trace.Source, pol Policy, after, within time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(after, cancel)
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, src, pol, Config{Model: referenceModel(t)})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			return fmt.Errorf("err = %v, want context.Canceled", err)
		}
		return nil
	case <-time.After(after + within):
		return fmt.Errorf("still running %s after the cancel", within)
	}
}

// TestWarmStartStopsOnCancel: the warm start (the oracle's count for the
// first cold start) reads the trace up to a cold start and a period ahead
// with no checkpoint: at 10^7 req/s (about 10^9 requests) simulate went on
// for 17 s after SIGINT, 3 minutes at 10^8. A cancel must end it within
// seconds, whatever the policy (every replay but fixed:N sizes a warm start).
func TestWarmStartStopsOnCancel(t *testing.T) {
	for _, spec := range []string{"queue:24", "oracle"} {
		pol, err := ParsePolicy(spec)
		if err != nil {
			t.Fatal(err)
		}
		src := trace.Synthetic{Rate: 1e7, Duration: 3600, Prompt: trace.ReferenceShape.Prompt, Output: trace.ReferenceShape.Output, Seed: 1}.Source()
		if err := runCancelled(t, src, pol, time.Second, 5*time.Second); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
}

// TestOptimalDenseTrace: the hindsight search holds a period and the SLO of
// arrivals at once; past MaxBacklog of them it fails naming the bound
// instead of growing without one (10^8 req/s ended in "fatal error: out of
// memory" and a goroutine dump).
func TestOptimalDenseTrace(t *testing.T) {
	defer func(n int64) { MaxBacklog = n }(MaxBacklog)
	MaxBacklog = 1000 // 100 req/s x (15 s + 2 s) = 1700 held at once
	pol, err := ParsePolicy("optimal")
	if err != nil {
		t.Fatal(err)
	}
	src := trace.Synthetic{Rate: 100, Duration: 60, Prompt: trace.ReferenceShape.Prompt, Output: trace.ReferenceShape.Output, Seed: 1}.Source()
	_, err = Run(context.Background(), src, pol, Config{Model: referenceModel(t)})
	if err == nil || !strings.Contains(err.Error(), "more than 1000 requests arrive between second") {
		t.Errorf("err = %v, want the bound named", err)
	}
}

// TestOptimalBacklogBound: the bound is on the arrivals up to the fill's
// second, not on the one read past it to see the window end: exactly
// the replay's backlog bound (Config.MaxBacklog) of them are held, one
// more fails.
func TestOptimalBacklogBound(t *testing.T) {
	for _, c := range []struct {
		in      int // arrivals at second 1, then one at second 100
		wantErr bool
	}{{4, false}, {5, true}} {
		var reqs []trace.Request
		for range c.in {
			reqs = append(reqs, trace.Request{Arrival: 1, Prompt: 1, Output: 1})
		}
		reqs = append(reqs, trace.Request{Arrival: 100, Prompt: 1, Output: 1})
		rd, _ := trace.FromSlice("t", 100, reqs).Open()
		p := &planner{rd: rd, e: env{cfg: Config{MaxBacklog: 4}}}
		err := p.fill(10)
		if (err != nil) != c.wantErr {
			t.Errorf("%d arrivals by second 10, a bound of 4: err = %v, want error %v", c.in, err, c.wantErr)
		}
		if err == nil && len(p.buf) != c.in+1 {
			t.Errorf("%d arrivals: buffered %d, want %d (and the one past second 10)", c.in, len(p.buf), c.in+1)
		}
	}
}
