package replay

import (
	"context"
	"errors"
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
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(2*time.Second, cancel)
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, src, pol, Config{Model: referenceModel(t)})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(17 * time.Second):
		t.Fatal("still searching 15 s after the cancel")
	}
}
