package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestTuneGeneratedBoundInvalid: a generated trace that drew past the
// bound in tune's replays (trace.ErrGeneratedBound, wrapped as tune.Run
// returns it) ended tune with "tune: ..." and exit 1, though docs/simulate.md
// says exit 2 and tune --trace reads a trace as simulate does; it is the
// user's input now (exit 2), its text unprefixed. Another error stays a
// runtime failure.
func TestTuneGeneratedBoundInvalid(t *testing.T) {
	_, err := trace.ParseContext(t.Context(), "synthetic:poisson,rate=1e6,duration=1000", trace.Options{Seed: 1})
	if err == nil {
		t.Fatal("a spec of 1e9 requests was accepted")
	}
	var inv invalidInputError
	got := tuneRunError(fmt.Errorf("screening: %w", err))
	if !errors.As(got, &inv) || got.Error() != "screening: "+err.Error() {
		t.Errorf("bound: %v (%T), want it as invalid input (exit 2)", got, got)
	}
	if got := tuneRunError(errors.New("disk full")); errors.As(got, &inv) || got.Error() != "tune: disk full" {
		t.Errorf("other: %v, want a runtime failure prefixed tune:", got)
	}
}
