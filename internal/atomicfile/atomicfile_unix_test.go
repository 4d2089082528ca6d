//go:build !windows

package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteRefusesNonRegular: a named pipe at the path (as a device such as
// /dev/stdout would be) is refused, named as such, and left in place; the
// rename replaced it with a file.
func TestWriteRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	err := Write(fifo, []byte("{}\n"))
	want := fifo + ": not a regular file (a named pipe); give the path of a file to write"
	if err == nil || err.Error() != want || !errors.Is(err, ErrNotRegular) {
		t.Errorf("err = %v; want %q", err, want)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("%s: %v, %v; want the named pipe left as it was", fifo, fi, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries, want the pipe alone", len(ents))
	}
}
