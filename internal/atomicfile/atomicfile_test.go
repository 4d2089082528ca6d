package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrite: a new file, then one replaced, each read back whole, with
// Write and WriteDurable alike; the directory holds nothing else (no
// temporary file left), and the file is 0644 either way.
func TestWrite(t *testing.T) {
	for name, put := range map[string]func(string, []byte) error{"Write": Write, "WriteDurable": WriteDurable} {
		dir := t.TempDir()
		path := filepath.Join(dir, "chat.json")
		for _, data := range []string{"{\"a\": 1}\n", "{}\n"} {
			if err := put(path, []byte(data)); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got, err := os.ReadFile(path); err != nil || string(got) != data {
				t.Errorf("%s: read back %q, %v; want %q", name, got, err, data)
			}
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%s: %d entries in the directory, want 1 (chat.json)", name, len(ents))
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&^0o022 != 0o644&^0o022 {
			t.Errorf("%s: mode %v, %v; want 0644 (less the umask)", name, fi.Mode(), err)
		}
	}
}

// TestWriteFails: a path whose directory does not exist, and one that is
// a directory (the rename fails after the temporary file is written): the
// error names the path and no temporary file stays.
func TestWriteFails(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none", "chat.json")
	if err := Write(missing, []byte("x")); err == nil || !strings.HasPrefix(err.Error(), missing+": ") {
		t.Errorf("missing directory: %v, want an error naming %s", err, missing)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(sub, []byte("x")); err == nil || !strings.HasPrefix(err.Error(), sub+": ") {
		t.Errorf("over a non-empty directory: %v, want an error naming %s", err, sub)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries in %s, want only sub (no temporary file left)", len(ents), dir)
	}
}

// TestWriteMode: the file is 0644, as os.WriteFile(path, data, 0o644)
// left it before (load --calibrate's file came out 0600, CreateTemp's,
// unreadable to a serve running as another user).
func TestWriteMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.calibration.json")
	if err := Write(path, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (%v), want -rw-r--r--", fi.Mode().Perm(), err)
	}
}

// TestCheckDir: a writable directory passes and keeps no file; /proc (no
// file can be created at its top on Linux, root included) is refused with
// ErrNotWritable, the directory and the system's reason.
func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	if err := CheckDir(dir); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d entries left in the directory, want 0", len(ents))
	}
	if fi, err := os.Stat("/proc/self"); err != nil || !fi.IsDir() {
		t.Skip("no /proc for a directory no file can be created in")
	}
	err := CheckDir("/proc")
	if !errors.Is(err, ErrNotWritable) || !strings.HasPrefix(err.Error(), "/proc: not writable: ") {
		t.Errorf("CheckDir(/proc) = %v, want \"/proc: not writable: REASON\"", err)
	}
}

// TestWriteFollowsSymlink: a path that is a symlink (relative, to a file in
// another directory) keeps the link and gets its file replaced; a dangling
// link creates the file it names. The rename replaced the link itself with
// a file, leaving its target stale.
func TestWriteFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "real", "chat-v3.json")
	if err := os.WriteFile(target, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "chat.json")
	if err := os.Symlink("real/chat-v3.json", link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("chat.json: %v, %v; want the symlink kept", fi, err)
	}
	if got, _ := os.ReadFile(target); string(got) != "new\n" {
		t.Errorf("target holds %q, want %q", got, "new\n")
	}
	dangling := filepath.Join(dir, "next.json")
	if err := os.Symlink("real/next-v1.json", dangling); err != nil {
		t.Fatal(err)
	}
	if err := Write(dangling, []byte("x\n")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "real", "next-v1.json")); string(got) != "x\n" {
		t.Errorf("dangling link's target holds %q, want %q", got, "x\n")
	}
}

// TestRemoveDurable: the file goes and its neighbour stays; a missing file
// and a missing directory are no error (nothing to bring back); a path
// that cannot be removed (a non-empty directory) is an error naming it.
func TestRemoveDurable(t *testing.T) {
	dir := t.TempDir()
	path, keep := filepath.Join(dir, "chat.json"), filepath.Join(dir, "other.json")
	for _, p := range []string{path, keep} {
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveDurable(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after RemoveDurable: %v, want the file gone", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("its neighbour: %v, want it kept", err)
	}
	if err := RemoveDurable(path); err != nil {
		t.Errorf("missing file: %v, want nil", err)
	}
	if err := RemoveDurable(filepath.Join(dir, "none", "chat.json")); err != nil {
		t.Errorf("missing directory: %v, want nil", err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(sub, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := RemoveDurable(sub); err == nil || !strings.Contains(err.Error(), sub) {
		t.Errorf("non-empty directory: %v, want an error naming %s", err, sub)
	}
}

// TestMkdirDurable: the directory and its missing parents are created
// (serve's tune/ under a state dir, here two levels), an existing one is
// no error, and a path through a regular file is an error naming it.
// That each new directory's parent is synced shows under strace (the
// state dir's fsync after tune/ is created; none before MkdirDurable).
func TestMkdirDurable(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "state", "tune")
	for range 2 {
		if err := MkdirDurable(dir); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("%s: %v, %v; want a directory", dir, fi, err)
		}
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := MkdirDurable(filepath.Join(file, "tune")); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("through a file: %v, want an error naming %s", err, file)
	}
}
