//go:build unix

package appendlog

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRegularFileAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Open(path, Rotation{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.(*wholeLines); !ok {
		t.Errorf("a regular file: got %T, want *wholeLines (written as each line comes)", w)
	}
	for _, l := range []string{"a\n", "b\n"} {
		if _, err := w.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if got, want := string(b), "old\na\nb\n"; got != want {
		t.Errorf("file = %q, want %q (appended)", got, want)
	}
}

func TestDirectoryRefused(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(dir, Rotation{})
	if !errors.Is(err, ErrDirectory) {
		t.Fatalf("err = %v, want ErrDirectory", err)
	}
	if want := dir + ": is a directory; give a file to append to, e.g. " + dir + "/audit.jsonl"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

// mkfifo makes a named pipe in a temporary directory.
func mkfifo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return path
}

// A FIFO nobody reads: a plain open would wait for a reader forever (serve
// hung before it served anything); Open refuses it at once.
func TestFIFOWithoutReaderRefused(t *testing.T) {
	path := mkfifo(t)
	done := make(chan error, 1)
	go func() {
		w, err := Open(path, Rotation{})
		if err == nil {
			w.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNoReader) {
			t.Fatalf("err = %v, want ErrNoReader", err)
		}
		if want := path + ": a named pipe with no reader (opening it would wait for one, and the service with it); start its reader first, or give a regular file"; err.Error() != want {
			t.Errorf("err = %q, want %q", err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open of a FIFO with no reader still waiting after 5s")
	}
}

// A FIFO whose reader reads gets every line, in order.
func TestFIFOReaderGetsLines(t *testing.T) {
	path := mkfifo(t)
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := Open(path, Rotation{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := fmt.Fprintf(w, "line %d\n", i); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	if want := []string{"line 0", "line 1", "line 2"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("reader got %q, want %q", got, want)
	}
}

// A reader that opened the FIFO and never reads: Write never blocks. The
// pipe's buffer (64 KiB on Linux) and the queue take the first lines; once
// both are full a Write drops its line with ErrBehind, and Close returns
// although the writing goroutine is stalled.
func TestFIFOStalledReaderNeverBlocks(t *testing.T) {
	path := mkfifo(t)
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := Open(path, Rotation{})
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Repeat("x", 1023) + "\n") // 1 KiB
	// 64 lines fill a 64 KiB pipe buffer and Queue more wait: 3*Queue
	// writes are more than both hold on any pipe buffer up to 2 MiB.
	firstBehind := -1
	start := time.Now()
	for i := range 3 * Queue {
		_, err := w.Write(line)
		if errors.Is(err, ErrBehind) {
			if firstBehind < 0 {
				firstBehind = i
			}
		} else if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%d writes took %s: Write waited for the reader", 3*Queue, d)
	}
	// The goroutine may take at most one line off the queue per line the
	// pipe took, so the first Queue writes are always queued.
	if firstBehind < Queue {
		t.Errorf("first dropped line = write %d, want none before write %d (the queue holds %d)", firstBehind, Queue, Queue)
	}
	start = time.Now()
	w.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %s with a stalled reader, want about %s", d, closeWait)
	}
}
