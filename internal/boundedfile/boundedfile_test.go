//go:build unix

package boundedfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO nobody writes to is refused at once (its open would block), a
// device too, and a file over the cap by its size; a regular file reads.
func TestOpenRefusesWhatBlocksOrNeverEnds(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Read(fifo, 10, "a test file", "hint"); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe); hint") {
			t.Errorf("fifo: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the open of a FIFO blocked")
	}
	if _, err := Read("/dev/zero", 10, "a test file", "hint"); err == nil || !strings.Contains(err.Error(), "a device") {
		t.Errorf("/dev/zero: %v", err)
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, 11), 0o644)
	if _, err := Read(big, 10, "a test file", "hint"); err == nil || !strings.Contains(err.Error(), "11 bytes, larger than the 10 allowed for a test file") {
		t.Errorf("big: %v", err)
	}
	os.WriteFile(big, []byte("ok"), 0o644)
	if b, err := Read(big, 10, "a test file", "hint"); err != nil || string(b) != "ok" {
		t.Errorf("regular: %q %v", b, err)
	}
}

// ReadAll returns when ctx is done even though the read blocks.
func TestReadAllHonoursContext(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, _, err := ReadAll(ctx, r, 10); err != context.DeadlineExceeded || time.Since(start) > time.Second {
		t.Errorf("ReadAll: %v after %v, want the deadline within a second", err, time.Since(start))
	}
	w.Write([]byte("0123456789ab"))
	w.Close()
	r2, w2, _ := os.Pipe()
	w2.Write([]byte("0123456789ab"))
	w2.Close()
	if _, ok, err := ReadAll(t.Context(), r2, 10); ok || err != nil {
		t.Errorf("12 bytes with max 10: ok %v err %v, want not ok", ok, err)
	}
}
