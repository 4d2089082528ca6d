package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDecideTextColumns: decide's text output puts each step's count in one
// column whatever its reason, ScaleDownStabilized (19 letters, the longest)
// included. State by hand: queue 16 on 4 replicas at t=1000 (the first
// decision records the current 4), then queue 8 at t=1015: ceil(8/4) = 2,
// held at 4 by the 300 s scaleDown window. The reason column is 19 wide, so
// the count ends at the same offset ("  1. " + 19 + " " + "%3d") in both
// steps: "  1. DesiredWithinRange    2" and "  2. ScaleDownStabilized   4".
func TestDecideTextColumns(t *testing.T) {
	st := filepath.Join(t.TempDir(), "s.json")
	decideOK(t, "--state", st, "--now", "1000", "--current", "4", "--queue", "16")
	code, out, errs := runDecide(t, "--state", st, "--now", "1015", "--current", "4", "--queue", "8")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(out, "\n")
	want := []string{"desired 4 (reason ScaleDownStabilized), current 4", "  1. DesiredWithinRange    2  ", "  2. ScaleDownStabilized   4  "}
	for i, w := range want {
		if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			t.Fatalf("line %d: want prefix %q\n%s", i, w, out)
		}
	}
}
