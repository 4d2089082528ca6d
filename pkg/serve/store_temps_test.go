package serve

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
		".chat.json.3489904221.tmp":     true,
		".a@prefill.json.17.tmp":        true,
		".infscale-write-check.42.tmp":  true,
		"tune/.chat.json.99.tmp":        true,
		".chat.json.refused.55.tmp":     true, // a refused file's copy (keepRefused)
		"tune/.chat.json.refused.7.tmp": true,
		"chat.json.refused":             false,
		".fresh.json.123.tmp":           false, // young: maybe another serve's write in flight
		"chat.json":                     false,
		".hidden.json":                  false,
		".notes.tmp":                    false,
		".chat.json.12x.tmp":            false,
		"tune/chat.json":                false,
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

// TestStoreKeepsRefused: a state file Load refuses (here one a newer
// infscale wrote: version 99) would be overwritten by the target's next
// save; Load copies it to NAME.json.refused, says so, and the save then
// writes NAME.json beside it, leaving the kept bytes as they were. A file
// Load cannot read at all (a directory in its place) is left where it is.
func TestStoreKeepsRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	newer := []byte(`{"version": 99, "desired": 3, "future_field": true}` + "\n")
	if err := os.WriteFile(filepath.Join(dir, "chat.json"), newer, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := s.Load("chat")
	kept := filepath.Join(dir, "chat.json.refused")
	if p != nil || err == nil || !strings.Contains(err.Error(), "newer infscale") || !strings.Contains(err.Error(), "kept as "+kept) {
		t.Fatalf("Load: %v, %v; want the newer-version refusal naming %s", p, err, kept)
	}
	// serve has started the target fresh: the text says what was kept,
	// not to move the file away to start fresh (decide's advice).
	if want := "(this one reads version 1): run the infscale that wrote it; its bytes are kept as " + kept + " (the target's next save overwrites the file)"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Load: %v; want it to end %q", err, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "chat.json")); err != nil || string(b) != string(newer) {
		t.Errorf("chat.json after Load: %q (%v), want it in place until the save", b, err)
	}
	if err := s.Save("chat", Persisted{Desired: 2, Current: 2, SavedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != string(newer) {
		t.Errorf("kept file %q (%v), want the refused bytes %q", b, err, newer)
	}
	if p, err := s.Load("chat"); err != nil || p == nil || p.Desired != 2 {
		t.Errorf("Load after the save: %+v, %v; want desired 2", p, err)
	}
	// An empty file (a power loss after a save that was not synced) holds
	// nothing to keep: refused, and the earlier copy stays as it was.
	if err := os.WriteFile(filepath.Join(dir, "chat.json"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("chat"); err == nil || !strings.Contains(err.Error(), "empty") || strings.Contains(err.Error(), "kept") {
		t.Errorf("Load of an empty file: %v; want it refused, nothing kept", err)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != string(newer) {
		t.Errorf("kept file after an empty one was refused: %q (%v), want the newer infscale's bytes %q", b, err, newer)
	}
	if names, err := s.Unclaimed([]string{"chat"}); err != nil || len(names) != 0 {
		t.Errorf("Unclaimed %v, %v: the kept file is no target's state", names, err)
	}

	if err := os.Mkdir(filepath.Join(dir, "dir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("dir"); err == nil || strings.Contains(err.Error(), "kept as") {
		t.Errorf("Load of a directory: %v; want an error, the directory left in place", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "dir.json")); err != nil {
		t.Errorf("the directory moved: %v", err)
	}
}

// TestStoreKeepsRefusedSymlink: a target's state file that is a symlink
// (to a file on another volume) stays one when Load refuses what it names:
// the refused bytes are copied to NAME.json.refused and the next save
// writes through the link, as every save before. Moving the link aside
// left the next save a regular NAME.json in the state dir, the linked file
// never written again.
func TestStoreKeepsRefusedSymlink(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	s, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	real, link := filepath.Join(other, "chat-state.json"), filepath.Join(dir, "chat.json")
	bad := []byte(`{"version": 1, "desired": -5}` + "\n")
	if err := os.WriteFile(real, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(dir, "chat.json.refused")
	if _, err := s.Load("chat"); err == nil || !strings.Contains(err.Error(), "kept as "+kept) {
		t.Fatalf("Load: %v; want a refusal naming %s", err, kept)
	}
	if err := s.Save("chat", Persisted{Desired: 4, Current: 4, SavedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("chat.json after Load and Save: %v (%v); want the symlink to %s", fi.Mode(), err, real)
	}
	if fi, err := os.Lstat(kept); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("kept %s: %v (%v); want a regular file", kept, fi.Mode(), err)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != string(bad) {
		t.Errorf("kept file %q (%v), want the refused bytes %q", b, err, bad)
	}
	if p, err := s.Load("chat"); err != nil || p == nil || p.Desired != 4 {
		t.Errorf("Load after the save: %+v, %v; want desired 4 through the link", p, err)
	}
}
