//go:build linux

package appendlog

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// A line the disk cuts short (ENOSPC on a full disk; here EFBIG from a file
// size limit, which cuts a write the same way: some bytes written, then the
// error) is taken back, so the log holds whole lines only: the next line,
// once there is room, is not glued to the cut one's head (a full disk left
// the audit log with a torn JSON line that swallowed the next decision's).
// The limit is set in a child process: it binds every file the process
// writes.
func TestCutLineTakenBack(t *testing.T) {
	cutLineTakenBack(t, "TestCutLineTakenBack", Rotation{}, false)
}

// The same through rotation (lumberjack's file): the line is taken back as
// well, and lumberjack, which counted its cut bytes, reads the file's size
// again.
func TestCutLineTakenBackRotating(t *testing.T) {
	cutLineTakenBack(t, "TestCutLineTakenBackRotating", Rotation{MaxSize: 1}, false)
}

// The same through rotation after the file was truncated from outside
// (emptied to free a full disk): 10 lines of 8 bytes written, the file
// emptied, the cut line is taken back by the file's size (12 bytes: line 1
// and 4 of line 2's), not by the 92 bytes written through the writer,
// which no longer matched the file and left "line" glued to line 3.
func TestCutLineTakenBackAfterTruncation(t *testing.T) {
	cutLineTakenBack(t, "TestCutLineTakenBackAfterTruncation", Rotation{MaxSize: 1}, true)
}

// cutLineTakenBack runs tornChild in a child process (truncated: 10 lines
// written and the file emptied first) and checks the file it leaves.
func cutLineTakenBack(t *testing.T, name string, r Rotation, truncated bool) {
	if path := os.Getenv("APPENDLOG_TORN_CHILD"); path != "" {
		tornChild(path, r, truncated)
		return
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$")
	cmd.Env = append(os.Environ(), "APPENDLOG_TORN_CHILD="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// line 1 (8 bytes) fits the 12-byte limit, line 2 is cut after 4 of
	// its bytes, line 3 is written after the limit is lifted.
	if got, want := string(b), "line-1.\nline-3.\n"; got != want {
		t.Errorf("file = %q, want %q (the cut line taken back)", got, want)
	}
}

func tornChild(path string, r Rotation, truncated bool) {
	w, err := Open(path, r)
	if err != nil {
		panic(err)
	}
	if truncated {
		for range 10 {
			if _, err := w.Write([]byte("line-0.\n")); err != nil {
				panic(err)
			}
		}
		if err := os.Truncate(path, 0); err != nil {
			panic(err)
		}
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		panic(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 12, Max: old.Max}); err != nil {
		panic(err)
	}
	_, err1 := w.Write([]byte("line-1.\n"))
	_, err2 := w.Write([]byte("line-2.\n"))
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		panic(err)
	}
	if err1 != nil || err2 == nil {
		panic("line 1 should fit and line 2 fail")
	}
	if _, err := w.Write([]byte("line-3.\n")); err != nil {
		panic(err)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
}

// Another writer appending to the same file (a second process on a shared
// volume, O_APPEND both) between a cut write and its taking back: the
// file's last bytes are then the other writer's line, not the cut one's,
// and are kept. Truncating by the cut's length took them back instead
// ("other." lost, the cut head "line" left). The cut head, now glued to
// the other line, cannot be taken back alone.
func TestCutLineOtherWriterKept(t *testing.T) {
	if path := os.Getenv("APPENDLOG_SHARED_CHILD"); path != "" {
		sharedChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCutLineOtherWriterKept$")
	cmd.Env = append(os.Environ(), "APPENDLOG_SHARED_CHILD="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "line-1.\nlineother.\nline-3.\n"; got != want {
		t.Errorf("file = %q, want %q (the other writer's line kept)", got, want)
	}
}

func sharedChild(path string) {
	a, err := Open(path, Rotation{})
	if err != nil {
		panic(err)
	}
	// A writer that takes no lock (a shell's >>, a process on another
	// host whose file system does not carry flock): a second Open is
	// refused (ErrLocked).
	b, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		panic(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		panic(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 12, Max: old.Max}); err != nil {
		panic(err)
	}
	afterCut = func() { // the other writer, once there is room
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			panic(err)
		}
		if _, err := b.Write([]byte("other.\n")); err != nil {
			panic(err)
		}
	}
	_, err1 := a.Write([]byte("line-1.\n"))
	_, err2 := a.Write([]byte("line-2.\n"))
	afterCut = nil
	if err1 != nil || err2 == nil {
		panic("line 1 should fit and line 2 fail")
	}
	if _, err := a.Write([]byte("line-3.\n")); err != nil {
		panic(err)
	}
	if a.Close() != nil || b.Close() != nil {
		panic("close")
	}
}
