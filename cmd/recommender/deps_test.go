package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// testingImporters are the packages outside this module allowed to pull the
// testing package into the binary, each with the reason it cannot be
// avoided. The test fails when one of them stops importing testing, so that
// the exception goes with the upstream fix.
var testingImporters = map[string]string{
	// prometheus/common/expfmt (v0.73) parses OpenMetrics 1.0 with go-abnf,
	// whose non-test *_fuzz.go files take *testing.T.
	"github.com/pandatix/go-abnf": "imported by github.com/prometheus/common/expfmt",
}

// testHarnesses are this module's packages for tests only; none belongs in
// the binary (any other package importing testing is caught as well).
var testHarnesses = []string{
	"github.com/infscale/infscale/internal/promtest",
	"github.com/infscale/infscale/pkg/history/historytest",
}

// TestBinaryLinksNoTestCode lists the packages the infscale binary is built
// from (`go list -deps`) and fails when one of this module's test harnesses,
// or a package importing testing, is among them (outside testingImporters).
func TestBinaryLinksNoTestCode(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		if slices.Contains(testHarnesses, pkg) {
			t.Errorf("the binary links test harness %s", pkg)
		}
		for _, imp := range imports {
			if imp != "testing" {
				continue
			}
			if _, ok := testingImporters[pkg]; ok {
				seen[pkg] = true
				continue
			}
			t.Errorf("%s imports testing, and the binary links it (move the test code to a _test.go file or a ...test package)", pkg)
		}
	}
	for pkg, why := range testingImporters {
		if !seen[pkg] {
			t.Errorf("%s (%s) no longer brings testing into the binary: drop it from testingImporters", pkg, why)
		}
	}
}
