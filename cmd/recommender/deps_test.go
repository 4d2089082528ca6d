package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// harnessMark is in the first sentence of every test harness's package
// doc ("Package promtest (a test harness) starts ..."): the module's one
// list of its packages for tests only (the tools module's TestDeadcode reads
// it too). None belongs in the binary; any other package importing testing
// is caught as well.
const harnessMark = "(a test harness)"

// goList runs `go list` with args in this package's directory and returns its
// output's lines; it skips the test where the go command is absent.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	out, err := exec.Command(goBin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestBinaryLinksNoTestCode lists the packages the infscale binary is built
// from (`go list -deps`) and fails when the testing package, or one of this
// module's test harnesses, is among them, naming who imports it.
func TestBinaryLinksNoTestCode(t *testing.T) {
	harness := map[string]bool{}
	for _, line := range goList(t, "-f", "{{.ImportPath}}\t{{.Doc}}", "github.com/infscale/infscale/...") {
		if path, doc, _ := strings.Cut(line, "\t"); strings.Contains(doc, harnessMark) {
			harness[path] = true
		}
	}
	if len(harness) == 0 {
		t.Fatalf("go list found no package whose doc says %q: the mark changed?", harnessMark)
	}
	lines := goList(t, "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".")
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		if harness[pkg] {
			t.Errorf("the binary links test harness %s", pkg)
		}
		if slices.Contains(imports, "testing") {
			t.Errorf("%s imports testing, and the binary links it (move the test code to a _test.go file or a ...test package; for a dependency, upgrade or avoid it)", pkg)
		}
	}
}

// TestInternalHoldsLeaves fails when a package under the module's internal/
// imports one of the module's packages outside internal/: internal/ holds
// leaves only (standard library, third-party and other internal packages).
// A helper that needs pkg/... lives beside what it serves (pkg/..., or
// cmd/recommender/internal/ when only the binary uses it).
func TestInternalHoldsLeaves(t *testing.T) {
	const module = "github.com/infscale/infscale/"
	lines := goList(t, "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"internal/...")
	if len(lines) < 5 {
		t.Fatalf("go list found %d packages under internal/, want the leaves (boundedfile, httpurl, jsonpos, ...):\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			if strings.HasPrefix(imp, module) && !strings.HasPrefix(imp, module+"internal/") {
				t.Errorf("%s imports %s: internal/ holds leaves only; move the package beside what it serves", pkg, imp)
			}
		}
	}
}

// TestRecommendDecidesOnValues fails when the decision core, pkg/recommend,
// links goccy/go-yaml or imports a YAML package itself: it takes values (a
// Policy, an autoscalingv2 behavior); reading them from files belongs to
// pkg/config (config.DecodeBehavior). (k8s.io/api's own dependencies link
// go.yaml.in/yaml/v2, which no package here calls.)
func TestRecommendDecidesOnValues(t *testing.T) {
	const recommend = "github.com/infscale/infscale/pkg/recommend"
	deps := goList(t, "-deps", recommend)
	if !slices.Contains(deps, recommend) {
		t.Fatalf("go list -deps %s does not list the package itself:\n%s", recommend, strings.Join(deps, "\n"))
	}
	for _, pkg := range deps {
		if strings.HasPrefix(pkg, "github.com/goccy/go-yaml") {
			t.Errorf("%s links the YAML decoder %s: decode in pkg/config and pass values", recommend, pkg)
		}
	}
	for _, imp := range goList(t, "-f", `{{join .Imports "\n"}}`, recommend) {
		if strings.Contains(imp, "yaml") {
			t.Errorf("%s imports %s: decode in pkg/config and pass values", recommend, imp)
		}
	}
}
