package appendlog

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
)

// Rotation is size-based rotation of a regular-file log with the meanings
// of the kube-apiserver's --audit-log-maxsize, --audit-log-maxbackup,
// --audit-log-maxage and --audit-log-compress, done by lumberjack (the
// kube-apiserver's own). The zero value rotates nothing. Every field is 0
// or more.
type Rotation struct {
	// MaxSize is the size in megabytes (MiB, 1,048,576 bytes) the file may
	// reach: a line that would take it past goes to a new file, the old
	// one renamed to a backup NAME-TIME.EXT beside it, TIME the rotation's
	// UTC time to the millisecond (audit.jsonl:
	// audit-2026-12-07T04-21-01.000.jsonl). A line of MaxSize or longer
	// is not written (Write's error). 0: no rotation, and the fields below
	// are unused.
	MaxSize int
	// MaxBackups is how many backups are kept, the newest by the time in
	// their names; 0: all.
	MaxBackups int
	// MaxAge is how many days a backup is kept, by the time in its name;
	// 0: no limit.
	MaxAge int
	// Compress gzips each backup (NAME-TIME.EXT.gz, the uncompressed one
	// removed).
	Compress bool
}

// ErrNotRegular is returned by Open and Rotatable for a Rotation of a path
// that is not a regular file (a named pipe, a device, a socket).
var ErrNotRegular = errors.New("not a regular file")

// ErrSymlink is returned by Open and Rotatable for a Rotation of a path that
// is a symbolic link (/dev/stdout is one): rotation renames the path
// itself, so the link would be moved aside and a plain file made in its
// place, the link's target never written again.
var ErrSymlink = errors.New("a symbolic link")

// ErrDirNotWritable is returned by Open for a Rotation of a file whose
// directory this process cannot write: every rotation would fail at its
// rename, and every line from the first that reaches MaxSize be lost.
var ErrDirNotWritable = errors.New("its directory cannot be written")

// dirWritable returns nil when a file can be made in path's directory, as
// rotation's rename and new file need: it makes a hidden one
// (.NAME.rotate-check-DIGITS) and removes it.
func dirWritable(path string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".rotate-check-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%s: %w (%s: %v): rotation renames the file and makes a new one beside it; let this process write %s, or leave rotation off and rotate the file from outside", path, ErrDirNotWritable, dir, err, dir)
	}
	f.Close()
	return os.Remove(f.Name())
}

// Rotatable returns nil when path may be rotated: a regular file, or
// nothing yet (Open makes a regular file). Else an error naming path, what
// it is and what to do: ErrSymlink, ErrNotRegular, or ErrDirectory. A path
// that cannot be looked at (no permission) returns nil: Open says why.
func Rotatable(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return nil
	case fi.Mode()&fs.ModeSymlink != 0:
		to, _ := os.Readlink(path)
		return fmt.Errorf("%s: %w (to %s): rotation would rename the link, not its file; give the file's own path (stdout or a pipe: rotate at its reader)", path, ErrSymlink, to)
	case fi.IsDir():
		return fmt.Errorf("%s: %w; give a file to append to, e.g. %s", path, ErrDirectory, path+"/audit.jsonl")
	case !fi.Mode().IsRegular():
		return notRegular(path, fi.Mode())
	}
	return nil
}

func notRegular(path string, mode fs.FileMode) error {
	what := "a device"
	switch {
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	}
	return fmt.Errorf("%s: %w (%s): rotation renames the file and makes a new one, which only a regular file allows; rotate it at its reader, or give a regular file", path, ErrNotRegular, what)
}

// MaxSizeLimit and MaxAgeLimit are the largest Rotation.MaxSize (MiB) and
// MaxAge (days): past them lumberjack's sums overflow int64, its file size
// limit (MaxSize x 1,048,576 bytes) turning negative, which refuses every
// line, and its age cutoff (MaxAge x 24 h in nanoseconds) turning to a time
// in the future, which removes every backup.
const (
	MaxSizeLimit = math.MaxInt64 >> 20                 // 8,796,093,022,207 MiB: 8 EiB
	MaxAgeLimit  = math.MaxInt64 / int64(24*time.Hour) // 106,751 days: 292 years
)

func (r Rotation) check() error {
	if r.MaxSize < 0 || r.MaxBackups < 0 || r.MaxAge < 0 {
		return fmt.Errorf("appendlog: a negative rotation bound %+v: each is 0 (no bound) or more", r)
	}
	if int64(r.MaxSize) > MaxSizeLimit || int64(r.MaxAge) > MaxAgeLimit {
		return fmt.Errorf("appendlog: rotation bound %+v: MaxSize is at most %d, MaxAge at most %d", r, int64(MaxSizeLimit), MaxAgeLimit)
	}
	return nil
}

// rotating is a regular file rotated by lumberjack. It is the file's only
// writer through Open (two rotating the same file would each rename the
// other's): it holds the file's lock (lock.go) on an open of its own, moved
// to the new file after each rotation (the old one, renamed, is a backup).
// Besides lumberjack's own count it keeps the file's size, to
// rotate before lumberjack would (the same rule) and so to space rotations
// a millisecond apart: backups are named to the millisecond, and
// lumberjack renames a second rotation of the same millisecond onto the
// first's backup, losing it (a wait of at most 1 ms, and only when
// MaxSize or more was written within a millisecond).
type rotating struct {
	path string
	lj   *lumberjack.Logger
	max  int64    // bytes
	cur  int64    // the file's size as written through this; read from the file where it may rotate
	open bool     // lumberjack holds the file open
	last int64    // Unix milliseconds just after the last rotation
	lock *os.File // the lock's open of the file at path (lock.go); nil when not held
}

// newRotating rotates path, whose size is now size.
func newRotating(path string, size int64, r Rotation) *rotating {
	return &rotating{path: path, cur: size, max: int64(r.MaxSize) << 20,
		lj: &lumberjack.Logger{Filename: path, MaxSize: r.MaxSize, MaxBackups: r.MaxBackups, MaxAge: r.MaxAge, Compress: r.Compress}}
}

func (r *rotating) Write(p []byte) (int, error) {
	n := int64(len(p))
	if n >= r.max {
		// One that fills the file alone would have lumberjack rotate
		// the empty file it opens first.
		return 0, fmt.Errorf("%s: a line of %d bytes, as long as a file may be (%d MiB) or longer: not written", r.path, n, r.max>>20)
	}
	if r.cur+n >= r.max {
		// The file's own size where it may rotate: one truncated from
		// outside is shorter than what was written through this, and
		// is not rotated early (a backup of a few lines pruning a full
		// one under MaxBackups). lumberjack's count is as stale:
		// closed, it reads the size again as it opens the file.
		if size, err := r.size(); err == nil && size < r.cur {
			_ = r.lj.Close()
			r.cur, r.open = size, false
		}
	}
	// lumberjack's rule: a file it holds open rotates before a line that
	// would take it past max; one it opens (the first line, or after an
	// error) before a line that would take it to max or past.
	if r.cur > 0 && (r.cur+n > r.max || !r.open && r.cur+n >= r.max) {
		if time.Now().UnixMilli() <= r.last {
			time.Sleep(time.Millisecond)
		}
		err := r.lj.Rotate()
		r.last = time.Now().UnixMilli()
		if err != nil {
			r.reopen()
			return 0, err
		}
		// lumberjack opens the new file without O_APPEND: writing at its
		// own offset, it would fill a file truncated from outside
		// (": > audit.jsonl" on a full disk) with NULs up to there.
		// Closed, it is opened again at the next write, by
		// openExistingOrNew, with O_APPEND, as the file was before the
		// first rotation.
		_ = r.lj.Close()
		r.cur, r.open = 0, false
		r.relock()
	}
	opening := !r.open // lumberjack opens the file at path, or makes it
	w, err := r.lj.Write(p)
	r.cur += int64(w)
	r.open = true
	if opening {
		// The file it opened may be another than the one locked: made
		// again after the locked one was moved away (by hand, or by a
		// rotation that failed before its new file).
		r.relock()
	}
	if err != nil {
		// lumberjack counted the cut bytes, which wholeLines may take
		// back: it reads the file's size again when it reopens it.
		_ = r.lj.Close()
		r.open = false
	}
	return w, err
}

// reopen has lumberjack open the file again at the next line, and takes its
// size from the file: after a failed rotation either name may be there.
func (r *rotating) reopen() {
	_ = r.lj.Close()
	r.open = false
	r.cur, _ = r.size()
	r.relock()
}

// relock moves the lock to the file now at path, when it is another than
// the one locked (a rotation renamed that one to a backup, or it was moved
// away and lumberjack made the file again). The new file
// is made by lumberjack a moment before: a writer that Opens it in that
// moment takes its lock first, and this one then holds none (it writes on,
// as before locks).
func (r *rotating) relock() {
	if r.lock != nil {
		held, err1 := r.lock.Stat()
		now, err2 := os.Stat(r.path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return
		}
	}
	f, err := lockPath(r.path)
	if err != nil {
		return // not there (a failed rotation), or another writer's
	}
	if r.lock != nil {
		r.lock.Close()
	}
	r.lock = f
}

// end is the file's size: its one writer's last line ends it, and the
// count written through this is too long once the file was truncated from
// outside (a cut line then not taken back).
func (r *rotating) end() (int64, error) { return r.size() }

func (r *rotating) size() (int64, error) {
	fi, err := os.Stat(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (r *rotating) truncate(n int64) error {
	if err := os.Truncate(r.path, n); err != nil {
		return err
	}
	r.cur = n
	return nil
}

// Close closes the file and releases its lock. lumberjack's goroutine that
// prunes and compresses backups is not stopped (lumberjack v2.2.1 has no
// way to): it waits, idle, until the process ends, one per Open that
// rotated or wrote.
func (r *rotating) Close() error {
	err := r.lj.Close()
	if r.lock != nil {
		r.lock.Close()
		r.lock = nil
	}
	return err
}
