package serve

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestStoreRemovesStaleTemps: a serve killed (kill -9, OOM) while it wrote
// a state file leaves the write's hidden temporary file behind
// (.NAME.json.DIGITS.tmp, internal/atomicfile), one per crash, never read
// again. NewStore removes those (and its own write checks, and the tune/
// state's) older than staleTempAge, so crash loops do not pile them up; a
// younger one may be the write of another serve sharing the directory, so it
// stays, as do the state files and anything not named like a temporary file.
func TestStoreRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "tune"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	files := map[string]bool{ // name: removed
		".chat.json.3489904221.tmp":    true,
		".a@prefill.json.17.tmp":       true,
		".infscale-write-check.42.tmp": true,
		"tune/.chat.json.99.tmp":       true,
		".fresh.json.123.tmp":          false, // young: maybe another serve's write in flight
		"chat.json":                    false,
		".hidden.json":                 false,
		".notes.tmp":                   false,
		".chat.json.12x.tmp":           false,
		"tune/chat.json":               false,
	}
	for f := range files {
		p := filepath.Join(dir, f)
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if f != ".fresh.json.123.tmp" {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for f, gone := range files {
		_, err := os.Lstat(filepath.Join(dir, f))
		if gone != os.IsNotExist(err) {
			t.Errorf("%s: removed %v, want %v (err %v)", f, os.IsNotExist(err), gone, err)
		}
		if gone {
			want = append(want, f)
		}
	}
	slices.Sort(want)
	if !slices.Equal(s.removedTemps, want) {
		t.Errorf("removedTemps = %q, want %q", s.removedTemps, want)
	}
}
