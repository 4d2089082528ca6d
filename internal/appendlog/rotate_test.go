//go:build unix

package appendlog

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// numbered is line i of a log of lines of size bytes each, newline
// included: its number in 6 digits, then x's.
func numbered(i, size int) []byte {
	return fmt.Appendf(nil, "%06d%s\n", i, strings.Repeat("x", size-7))
}

// writeLines opens path with r and writes lines [0, n) of size bytes.
func writeLines(t *testing.T, path string, r Rotation, n, size int) {
	t.Helper()
	w, err := Open(path, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := w.Write(numbered(i, size)); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// backups lists the files in dir other than audit.jsonl, oldest first (the
// names carry the rotation's time).
func backups(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if e.Name() != "audit.jsonl" {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

// checkLines fails unless file holds whole lines of size bytes numbered
// first, first+1, ... : count of them.
func checkLines(t *testing.T, file string, b []byte, first, count, size int) {
	t.Helper()
	if len(b) != count*size {
		t.Errorf("%s: %d bytes, want %d lines of %d = %d", file, len(b), count, size, count*size)
		return
	}
	for i := range count {
		if got, want := b[i*size:(i+1)*size], numbered(first+i, size); !bytes.Equal(got, want) {
			t.Errorf("%s: line %d = %.12q..., want %.12q...", file, i, got, want)
			return
		}
	}
}

// Lines of 1 KiB and a MaxSize of 1 MiB: a file holds 1,048,576 / 1,024 =
// 1,024 lines (the 1,025th would take it to 1,049,600 bytes, past it). 3,000
// lines are 1,024 + 1,024 + 952: two backups of 1,024 lines each, and the
// file holds the last 952 (974,848 bytes). Nothing lost, no line split, the
// backups named audit-TIME.jsonl.
func TestRotateAtMaxSize(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	writeLines(t, path, Rotation{MaxSize: 1}, 3000, 1024)
	bs := backups(t, dir)
	if len(bs) != 2 {
		t.Fatalf("backups %q, want 2", bs)
	}
	for i, name := range bs {
		ts, ok := strings.CutPrefix(name, "audit-")
		ts, ok2 := strings.CutSuffix(ts, ".jsonl")
		if _, err := time.Parse("2006-01-02T15-04-05.000", ts); !ok || !ok2 || err != nil {
			t.Errorf("backup %q, want audit-YYYY-MM-DDTHH-MM-SS.mmm.jsonl", name)
		}
		b, _ := os.ReadFile(filepath.Join(dir, name))
		checkLines(t, name, b, i*1024, 1024, 1024)
	}
	b, _ := os.ReadFile(path)
	checkLines(t, "audit.jsonl", b, 2048, 952, 1024)
}

// Lines of 1 MiB - 1 byte, one to a file: rotations come within a
// millisecond of each other, and lumberjack names backups to the
// millisecond, renaming a second backup of the same millisecond onto the
// first (without the wait between them, 12 to 14 of the 20 files were left).
// 20 lines are 19 backups and the file, one line each.
func TestRotateTwiceInAMillisecondKeepsBoth(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	const size = 1<<20 - 1
	w, err := Open(path, Rotation{MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	line := numbered(0, size)
	for i := range 20 {
		copy(line, fmt.Sprintf("%06d", i)) // made once: rotations as fast as they come
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	bs := backups(t, dir)
	if len(bs) != 19 {
		t.Fatalf("%d backups %q, want 19 (one lost to a rename onto it?)", len(bs), bs)
	}
	for i, name := range bs {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		checkLines(t, name, b, i, 1, size)
	}
	b, _ := os.ReadFile(path)
	checkLines(t, "audit.jsonl", b, 19, 1, size)
}

// eventually polls f (lumberjack prunes and compresses backups in its own
// goroutine, after the rotation) for up to 5 s.
func eventually(t *testing.T, f func() bool) bool {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if f() {
			return true
		}
	}
	return f()
}

// 5,121 lines of 1 KiB at 1 MiB a file are 5 full files and one line: 5
// rotations. MaxBackups 2 keeps the newest two, lines 3,072-4,095 and
// 4,096-5,119.
func TestRotatePrunesToMaxBackups(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	writeLines(t, path, Rotation{MaxSize: 1, MaxBackups: 2}, 5*1024+1, 1024)
	if !eventually(t, func() bool { return len(backups(t, dir)) == 2 }) {
		t.Fatalf("backups %q, want the newest 2", backups(t, dir))
	}
	for i, name := range backups(t, dir) {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		checkLines(t, name, b, 3072+1024*i, 1024, 1024)
	}
	b, _ := os.ReadFile(path)
	checkLines(t, "audit.jsonl", b, 5120, 1, 1024)
}

// Compress: the backup is gzipped (audit-TIME.jsonl.gz), the uncompressed
// one removed; it holds the first 1,024 lines.
func TestRotateCompress(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	writeLines(t, path, Rotation{MaxSize: 1, Compress: true}, 1025, 1024)
	if !eventually(t, func() bool {
		bs := backups(t, dir)
		return len(bs) == 1 && strings.HasSuffix(bs[0], ".jsonl.gz")
	}) {
		t.Fatalf("backups %q, want one audit-TIME.jsonl.gz", backups(t, dir))
	}
	name := backups(t, dir)[0]
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	checkLines(t, name, b, 0, 1024, 1024)
}

// A file of 1,000 lines from an earlier run: the first lines of this one
// fill it to 1,024 before it rotates, so a restart neither rotates at once
// nor lets the file pass MaxSize.
func TestRotateCarriesOnAnExistingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	writeLines(t, path, Rotation{}, 1000, 1024)
	w, err := Open(path, Rotation{MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1000; i < 1100; i++ {
		if _, err := w.Write(numbered(i, 1024)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	bs := backups(t, dir)
	if len(bs) != 1 {
		t.Fatalf("backups %q, want 1", bs)
	}
	b, _ := os.ReadFile(filepath.Join(dir, bs[0]))
	checkLines(t, bs[0], b, 0, 1024, 1024)
	b, _ = os.ReadFile(path)
	checkLines(t, "audit.jsonl", b, 1024, 76, 1024)
}

// The file a rotation begins is appended to, as the file before it: one
// truncated from outside (": > audit.jsonl" to free a full disk) gets the
// next line at its start. lumberjack's new file, written at its own offset
// (6 lines of 1 KiB after the rotation at the 1,025th), was left 6,144 NUL
// bytes and then the line, which no JSON-lines reader takes.
func TestRotatedFileAppends(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	w, err := Open(path, Rotation{MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1030 {
		if _, err := w.Write(numbered(i, 1024)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(numbered(1030, 1024)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, _ := os.ReadFile(path)
	checkLines(t, "audit.jsonl", b, 1030, 1, 1024)
	bs := backups(t, dir)
	if len(bs) != 1 {
		t.Fatalf("backups %q, want 1", bs)
	}
	b, _ = os.ReadFile(filepath.Join(dir, bs[0]))
	checkLines(t, bs[0], b, 0, 1024, 1024)
}

// Bounds past lumberjack's int64 sums are refused by Open: a MaxSize of
// 2^43 MiB is 2^63 bytes, one past math.MaxInt64 (the limit turned
// negative, refusing every line), and a MaxAge of 106,752 days is
// 9,223,372,800,000,000,000 ns, past 9,223,372,036,854,775,807 (the cutoff
// turned to a time ahead, removing every backup). One less of each is taken.
func TestRotateBoundsPastInt64Refused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, r := range []Rotation{{MaxSize: 1 << 43}, {MaxSize: 1, MaxAge: 106752}} {
		if w, err := Open(path, r); err == nil {
			w.Close()
			t.Errorf("%+v: opened, want refused", r)
		}
	}
	for _, r := range []Rotation{{MaxSize: 1<<43 - 1}, {MaxSize: 1, MaxAge: 106751}} {
		w, err := Open(path, r)
		if err != nil {
			t.Errorf("%+v: %v", r, err)
			continue
		}
		if _, err := w.Write([]byte("ok\n")); err != nil {
			t.Errorf("%+v: write: %v", r, err)
		}
		w.Close()
	}
}

// A file truncated from outside is rotated by its own size, not by what
// was written before: 1,000 lines of 1 KiB, the file emptied, then 100
// more are one file of those 100 (102,400 bytes) and no backup. Counting
// the 1,000, the 25th line after (1,024,000 + 24 x 1,024 = 1,048,576
// bytes written) rotated a file of 24 lines into a backup.
func TestRotateTruncatedFileBySize(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	w, err := Open(path, Rotation{MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1100 {
		if i == 1000 {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Write(numbered(i, 1024)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if bs := backups(t, dir); len(bs) != 0 {
		t.Errorf("backups %q, want none", bs)
	}
	b, _ := os.ReadFile(path)
	checkLines(t, "audit.jsonl", b, 1000, 100, 1024)
}

// A line of MaxSize bytes or more is refused, not written, and the next
// line is.
func TestRotateLineLongerThanMaxSize(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	w, err := Open(path, Rotation{MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if n, err := w.Write(make([]byte, 1<<20)); n != 0 || err == nil {
		t.Errorf("a line of 1 MiB: n = %d, err = %v, want 0 and an error", n, err)
	} else if want := path + ": a line of 1048576 bytes, as long as a file may be (1 MiB) or longer: not written"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if _, err := w.Write([]byte("ok\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "ok\n" {
		t.Errorf("file = %q, want %q", b, "ok\n")
	}
}

// Rotation of a named pipe (even one without a reader: no wait) or a
// device is refused, naming what the path is.
func TestRotateNotRegularRefused(t *testing.T) {
	fifo := mkfifo(t)
	for _, c := range []struct{ path, what string }{{fifo, "a named pipe"}, {os.DevNull, "a device"}} {
		_, err := Open(c.path, Rotation{MaxSize: 1})
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s: err = %v, want ErrNotRegular", c.path, err)
			continue
		}
		if want := c.path + ": not a regular file (" + c.what + "): rotation renames the file and makes a new one, which only a regular file allows; rotate it at its reader, or give a regular file"; err.Error() != want {
			t.Errorf("err = %q, want %q", err, want)
		}
	}
}
