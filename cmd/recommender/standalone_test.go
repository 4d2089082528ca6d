package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepoStandsAlone: docs, README, shipped files and non-test code cite
// nothing outside the repository (the design notes and the shared test
// data's log are not in it; docs/design.md holds what a reader needs).
// Tests may name the shared test data they read and skip without, and so
// may internal/sharedtest, the one test harness that finds it.
func TestRepoStandsAlone(t *testing.T) {
	root := filepath.Join("..", "..")
	banned := []string{"DESIGN.md", "LOG.md", "../shared", "shared/testdata"}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == ".git" || rel == "tools" || rel == "bin" {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if strings.HasSuffix(path, "_test.go") || strings.HasPrefix(filepath.ToSlash(rel), "internal/sharedtest/") || !map[string]bool{".go": true, ".md": true, ".yml": true, ".yaml": true, ".json": true, ".prom": true}[ext] {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, s := range banned {
				if strings.Contains(line, s) {
					t.Errorf("%s:%d cites %q, which is not in the repository: %s", rel, i+1, s, strings.TrimSpace(line))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
