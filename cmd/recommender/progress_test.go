package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// stderrFile runs infscale with stderr on a regular file (a redirected
// stderr: not a terminal) and returns the exit code and what it wrote.
func stderrFile(t *testing.T, args ...string) (int, string) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, f)
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(b)
}

// TestSimulateProgressMonotonic: with optimal (whose search runs several
// passes before its replay) beside queue:24, a redirected stderr gets
// plain progress lines whose percentages never go back, ending at 100%.
func TestSimulateProgressMonotonic(t *testing.T) {
	code, errs := stderrFile(t, "simulate", "-p", "optimal", "-p", "queue:24", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	prev := -1
	lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
	for _, l := range lines {
		pc, ok := strings.CutPrefix(l, "simulating 2 policies: ")
		n, err := strconv.Atoi(strings.TrimSuffix(pc, "%"))
		if !ok || err != nil || !strings.HasSuffix(pc, "%") {
			t.Fatalf("stderr line %q: want \"simulating 2 policies: N%%\"", l)
		}
		if n < prev || n > 100 {
			t.Errorf("progress %d%% after %d%%: want a non-decreasing percentage up to 100:\n%s", n, prev, errs)
		}
		prev = n
	}
	if len(lines) < 2 || prev != 100 {
		t.Errorf("progress lines %q: want several, the last at 100%%", lines)
	}
}

// TestSimulateProgressOnePolicy: one policy on an on-off trace says
// "1 policy" and its redirected progress ends at 100% (the last step from
// 95% came within 10 s and 10 points of the line before and was dropped).
func TestSimulateProgressOnePolicy(t *testing.T) {
	code, errs := stderrFile(t, "simulate", "-p", "fixed:2", "--trace", "synthetic:onoff,duration=2h", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
	if last := lines[len(lines)-1]; last != "simulating 1 policy: 100%" {
		t.Errorf("last progress line %q, want \"simulating 1 policy: 100%%\" (all: %q)", last, lines)
	}
}

// TestQuietProgress: --quiet writes no progress, on a redirected stderr,
// for simulate and tune.
func TestQuietProgress(t *testing.T) {
	for _, args := range [][]string{
		{"simulate", "--quiet", "-p", "optimal", "-o", "json"},
		{"tune", "--trace", "synthetic:poisson,rate=3,duration=10m", "--stress", "none", "--finalists", "1", "-q", "-o", "json"},
	} {
		if code, errs := stderrFile(t, args...); code != 0 || errs != "" {
			t.Errorf("%v: exit %d, stderr %q; want 0 and nothing", args, code, errs)
		}
	}
}
