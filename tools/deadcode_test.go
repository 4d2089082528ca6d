package tools

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// module is the main module's path; the packages below are relative to it.
const module = "github.com/infscale/infscale/"

// harnessMark is in the first sentence of every test harness's package
// doc ("Package promtest (a test harness) starts ..."): the module's one
// list of its packages for tests only, read by go list here and by
// cmd/recommender's TestBinaryLinksNoTestCode, which keeps them out of the
// binary. What a harness holds is called from _test.go files, which
// deadcode does not read.
const harnessMark = "(a test harness)"

// harnesses lists the main module's test harnesses by harnessMark, as
// paths relative to module.
func harnesses(t *testing.T, goBin string) map[string]bool {
	t.Helper()
	cmd := exec.Command(goBin, "list", "-f", "{{.ImportPath}}\t{{.Doc}}", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	h := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		path, doc, _ := strings.Cut(strings.TrimSpace(line), "\t")
		if strings.Contains(doc, harnessMark) {
			h[strings.TrimPrefix(path, module)] = true
		}
	}
	if len(h) == 0 {
		t.Fatalf("go list ./... found no package whose doc says %q: the mark changed?", harnessMark)
	}
	return h
}

// pending are functions deadcode reports that stay for now, each "package
// path.Func" with why. TestDeadcode fails when one of them is reached again
// or removed, so that the entry goes with the fix.
var pending = map[string]string{}

type deadPackage struct {
	Path  string
	Funcs []struct {
		Name     string
		Position struct {
			File      string
			Line, Col int
		}
	}
}

// TestDeadcode runs golang.org/x/tools/cmd/deadcode (pinned in this module)
// over the main module, from the infscale binary's main: every function it
// reports outside the test harnesses and pending fails the test. A function
// only tests call belongs in a _test.go file or a harness package.
func TestDeadcode(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "deadcode")
	if out, err := exec.Command(goBin, "build", "-o", bin, "golang.org/x/tools/cmd/deadcode").CombinedOutput(); err != nil {
		t.Fatalf("go build deadcode: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-json", "./...")
	cmd.Dir = ".."
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("deadcode ./...: %v", err)
	}
	var pkgs []deadPackage
	if err := json.Unmarshal(out, &pkgs); err != nil {
		t.Fatalf("deadcode -json: %v\n%s", err, out)
	}
	harness := harnesses(t, goBin)
	seen := map[string]bool{}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p.Path, module)
		if harness[rel] {
			continue
		}
		for _, f := range p.Funcs {
			key := rel + "." + f.Name
			if _, ok := pending[key]; ok {
				seen[key] = true
				continue
			}
			t.Errorf("%s:%d: %s is unreachable from the binary: delete it, or move it to a _test.go file or a harness package", f.Position.File, f.Position.Line, key)
		}
	}
	for key, why := range pending {
		if !seen[key] {
			t.Errorf("%s (%s) is no longer reported: drop it from pending", key, why)
		}
	}
}
