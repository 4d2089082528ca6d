package tools

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fuzzFunc is a fuzz target's declaration in a _test.go file.
var fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)

// TestFuzzTargetsListed checks the Makefile's FUZZ_TARGETS against the
// main module's fuzz targets, both ways: `make fuzz` runs `go test -fuzz
// '^NAME$' PKG` for each PKG:NAME listed, and go test fuzzes nothing,
// exit 0, when PKG has no such target (./pkg/recommend:FuzzDecodeBehavior,
// whose target is pkg/config's, fuzzed nothing that way), so a wrong
// package or a target missing from the list goes unseen.
func TestFuzzTargetsListed(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^FUZZ_TARGETS = ((?:.*\\\n)*.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no FUZZ_TARGETS = line")
	}
	listed := strings.Fields(strings.ReplaceAll(string(m[1]), "\\\n", " "))

	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			if path != root {
				// Another module (tools, deploy/*): make fuzz runs
				// go test in the main module only.
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, f := range fuzzFunc.FindAllSubmatch(b, -1) {
			found = append(found, "./"+filepath.ToSlash(rel)+":"+string(f[1]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Fatal("no fuzz targets found in the main module")
	}
	for _, f := range found {
		if !slices.Contains(listed, f) {
			t.Errorf("fuzz target %s is not in the Makefile's FUZZ_TARGETS", f)
		}
	}
	for _, l := range listed {
		if !slices.Contains(found, l) {
			t.Errorf("the Makefile's FUZZ_TARGETS lists %s, which is no fuzz target of that package: make fuzz would fuzz nothing for it", l)
		}
	}
}
