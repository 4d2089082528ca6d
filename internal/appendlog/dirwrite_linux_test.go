//go:build linux

package appendlog

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// unwritableDir returns a directory holding audit.jsonl (written by
// anyone) in which no file can be made: mode 0555, or, for root, whom
// modes do not bind, the immutable attribute (chattr +i). Skips where
// neither holds.
func unwritableDir(t *testing.T) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(path, []byte("line-1.\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
			t.Skipf("chattr +i: %v %s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("chattr", "-i", dir).Run() })
	} else {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	}
	if f, err := os.CreateTemp(dir, "probe"); err == nil {
		f.Close()
		os.Remove(f.Name())
		t.Skip("a file could still be made in the directory")
	}
	return dir, path
}

// Rotation of a file whose directory cannot be written is refused at Open:
// each rotation's rename would fail, and every line from the first that
// reaches MaxSize be lost (serve ran on, dropping them). Without rotation
// the same file is appended to.
func TestRotateUnwritableDirRefused(t *testing.T) {
	dir, path := unwritableDir(t)
	_, err := Open(path, Rotation{MaxSize: 1})
	if !errors.Is(err, ErrDirNotWritable) {
		t.Fatalf("err = %v, want ErrDirNotWritable", err)
	}
	msg := err.Error()
	if prefix := path + ": its directory cannot be written (" + dir + ": "; !strings.HasPrefix(msg, prefix) ||
		!strings.HasSuffix(msg, "): rotation renames the file and makes a new one beside it; let this process write "+dir+", or leave rotation off and rotate the file from outside") {
		t.Errorf("err = %q", msg)
	}
	w, err := Open(path, Rotation{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("line-2.\n")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if b, _ := os.ReadFile(path); string(b) != "line-1.\nline-2.\n" {
		t.Errorf("file = %q, want both lines", b)
	}
}
