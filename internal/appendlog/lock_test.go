//go:build unix

package appendlog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecondWriterRefused: a regular file open through Open is refused to a
// second Open, rotating or not, either way round, with ErrLocked and an
// error naming the file; once the first is closed, the second opens it.
// Before: both opened it, their lines interleaved, and two rotating it
// renamed each other's file (flock conflicts between two opens in one
// process as between two processes, so one process stands for two serves).
func TestSecondWriterRefused(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, second Rotation
	}{
		{"append, append", Rotation{}, Rotation{}},
		{"rotate, rotate", Rotation{MaxSize: 1}, Rotation{MaxSize: 1}},
		{"append, rotate", Rotation{}, Rotation{MaxSize: 1}},
		{"rotate, append", Rotation{MaxSize: 1}, Rotation{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			a, err := Open(path, tc.first)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Write([]byte("{\"first\":1}\n")); err != nil {
				t.Fatal(err)
			}
			b, err := Open(path, tc.second)
			if !errors.Is(err, ErrLocked) || !strings.HasPrefix(err.Error(), path+": another process writes it") {
				if b != nil {
					b.Close()
				}
				t.Fatalf("second Open: %v, want %s: another process writes it (ErrLocked)", err, path)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			b, err = Open(path, tc.second)
			if err != nil {
				t.Fatalf("Open after the first closed: %v", err)
			}
			b.Close()
		})
	}
}

// TestLockFollowsRotation: a writer rotating at 1 MiB writes 3 lines of
// 400 KiB (the third rotates: 800 KiB + 400 KiB > 1 MiB), so the file at
// the path is a new one; a second Open of the path is still refused (the
// lock moved to the new file with the rotation), and the backup is left
// unlocked (a reader or a shipper may do what it likes with it).
func TestLockFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	w, err := Open(path, Rotation{MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 3 {
		if _, err := w.Write(numbered(i, 400<<10)); err != nil {
			t.Fatal(err)
		}
	}
	bs := backups(t, dir)
	if len(bs) != 1 {
		t.Fatalf("backups %q, want 1", bs)
	}
	if _, err := Open(path, Rotation{}); !errors.Is(err, ErrLocked) {
		t.Errorf("Open of the new file: %v, want ErrLocked", err)
	}
	f, err := Open(filepath.Join(dir, bs[0]), Rotation{})
	if err != nil {
		t.Errorf("Open of the backup: %v, want it unlocked", err)
	} else {
		f.Close()
	}
}

// TestLockFollowsAFileMadeAgain: a rotating writer opens its file (and
// locks it) at start, but lumberjack opens it only at the first line; the
// file moved away by hand meanwhile (mv audit.jsonl elsewhere, a log
// shipper's rotation; as a rotation failing between its rename and its new
// file leaves none), that line goes to a new file at the path, which
// lumberjack makes. That file is locked too: a second Open is refused.
// Before: the lock stayed on the moved file until the next rotation, and a
// second writer was let in, both appending to the new file.
func TestLockFollowsAFileMadeAgain(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	w, err := Open(path, Rotation{MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.Rename(path, filepath.Join(dir, "moved.jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(numbered(0, 10)); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || len(b) != 10 {
		t.Fatalf("the file made again: %d bytes, %v; want the line of 10 bytes", len(b), err)
	}
	if f, err := Open(path, Rotation{}); !errors.Is(err, ErrLocked) {
		if err == nil {
			f.Close()
		}
		t.Errorf("Open of the file made again: %v, want ErrLocked", err)
	}
}
