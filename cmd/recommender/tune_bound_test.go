package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	got := tuneRunError(fmt.Errorf("screening: %w", err), "")
	if !errors.As(got, &inv) || got.Error() != "screening: "+err.Error() {
		t.Errorf("bound: %v (%T), want it as invalid input (exit 2)", got, got)
	}
	if got := tuneRunError(errors.New("disk full"), ""); errors.As(got, &inv) || got.Error() != "tune: disk full" {
		t.Errorf("other: %v, want a runtime failure prefixed tune:", got)
	}
}

// TestTuneNoteCount: tune's replays are sized to the trace's requests
// times its largest bursts: stress (the default bursts:2 doubles them),
// and the note called that count "the trace's": 200 for a trace of 100
// requests. It now says what a replay holds at most. 100 rows 10 s apart
// (0 to 990 s), 2 workers, 10,000 bytes free: one replay at 200 x 32 =
// 6,400 bytes fits, two do not, so they run 1 at a time.
func TestTuneNoteCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hundred.csv")
	var b strings.Builder
	b.WriteString(trace.GenericHeader + "\n")
	for i := range 100 {
		fmt.Fprintf(&b, "%d,200,100\n", 10*i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr := simUnder(t, []string{"tune", "--trace", path, "--workers", "2", "-q"}, 10_000)
	const want = "note: 2 replays holding up to 200 requests each (0.0 MiB each at most) would take more than the 0.0 MiB this process may still take (memory limit 1024.0 MiB, GOMEMLIMIT): running 1 at a time"
	if !strings.Contains(stderr, want) || strings.Contains(stderr, "the trace's 200") {
		t.Errorf("stderr %q\nwant %q", stderr, want)
	}
}
