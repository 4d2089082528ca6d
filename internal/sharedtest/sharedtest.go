// Package sharedtest (a test harness) finds the reference data tests share with the rest of
// the team: ../shared/testdata beside the repository root (real metrics
// pages, cases, traces; never copied into the repository). A test that
// needs it skips when it is absent, except under CI=true, where it fails:
// CI must run with the data in place.
package sharedtest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// module is the main module's path: the repository root is the directory
// whose go.mod declares it.
const module = "github.com/infscale/infscale"

// Path returns ../shared/testdata/elem... beside the repository root found
// above the working directory (a test's package directory). When that path
// does not exist it skips t, or fails t when $CI is "true".
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	p, err := path(elem...)
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("shared test data absent under CI=true (%v): ../shared/testdata must sit beside the repository", err)
		}
		t.Skipf("shared test data absent (%v): ../shared/testdata sits beside the repository, never in it; see its LOG.md", err)
	}
	return p
}

// path is Path's lookup without the test: the joined path, or an error when
// no repository root is above the working directory.
func path(elem ...string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{filepath.Dir(root), "shared", "testdata"}, elem...)...), nil
}

// repoRoot walks up from the working directory to the directory whose
// go.mod declares module.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if m, err := modulePath(filepath.Join(dir, "go.mod")); err == nil && m == module {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", module)
		}
		dir = parent
	}
}

// modulePath reads the module line of the go.mod file at p.
func modulePath(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New(p + ": no module line")
}
