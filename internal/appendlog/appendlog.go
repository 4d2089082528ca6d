// Package appendlog opens a log that a service appends one line per event
// to (serve's --audit-log) so that the log can never hold the service up. A
// regular file is written as each line comes, and rotated by size when
// asked (Rotation, rotate.go). Anything else a user may
// point it at (a named pipe to a log shipper, /dev/stdout, a socket) is
// opened without blocking, so a FIFO with no reader is refused at once
// instead of waiting for one, and written by a goroutine behind a bounded
// queue, so a reader that stalls or goes away costs dropped lines (each
// reported by the Write that dropped it), never a blocked caller.
package appendlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/infscale/infscale/internal/crashlog"
)

// ErrDirectory is returned by Open for a path that is a directory.
var ErrDirectory = errors.New("is a directory")

// ErrNoReader is returned by Open for a named pipe that no process reads.
var ErrNoReader = errors.New("a named pipe with no reader")

// ErrBehind is returned by Write when the queue of lines waiting for a slow
// reader is full: the line is dropped.
var ErrBehind = errors.New("the reader is not keeping up: line dropped")

// Queue is how many lines wait for a slow reader of a non-regular file
// before Write drops them.
const Queue = 1024

// closeWait bounds how long Close waits for a stalled reader to take the
// queued lines before it closes the file under the writing goroutine.
const closeWait = time.Second

// Open opens path for appending (created with mode 0644 when absent).
// Errors name path and say what to do: "PATH: is a directory; ..."
// (ErrDirectory), "PATH: a named pipe with no reader ...; ..."
// (ErrNoReader), "PATH: not a regular file ...; ..." (ErrNotRegular: r
// rotates and path is a pipe or device), "PATH: a symbolic link ..."
// (ErrSymlink: r rotates and path is one), "PATH: its directory cannot be
// written ..." (ErrDirNotWritable: r rotates), "PATH: another process
// writes it ..." (ErrLocked: a regular file another Open holds, in this
// process or another; lock.go), else os.OpenFile's error as is.
// The result writes a regular file as each line comes, a line the disk cuts
// short taken back (wholeLines), rotated by size when r.MaxSize > 0
// (Rotation); anything else goes to a writer whose Write never blocks
// (ErrBehind when its queue is full, or the error of an earlier background
// write, reported once) and whose Close returns within about a second even
// when the reader has stalled.
func Open(path string, r Rotation) (io.WriteCloser, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s: %w; give a file to append to, e.g. %s", path, ErrDirectory, path+"/audit.jsonl")
	}
	if r.MaxSize > 0 {
		// Refused before it is opened: a FIFO without a reader would
		// be ErrNoReader, hiding that rotation can never apply to it.
		if err := Rotatable(path); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY|nonBlock, 0o644)
	if err != nil {
		if isNoReader(err) {
			return nil, fmt.Errorf("%s: %w (opening it would wait for one, and the service with it); start its reader first, or give a regular file", path, ErrNoReader)
		}
		return nil, err
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	switch {
	case fi.Mode().IsRegular() && r.MaxSize > 0:
		// Opened above so that a file that cannot be created or
		// appended to is refused now, not at the first line; and one
		// whose directory cannot be written, not at the first rotation.
		f.Close()
		if err := dirWritable(path); err != nil {
			return nil, err
		}
		lf, err := lockPath(path)
		if err != nil {
			return nil, err
		}
		rf := newRotating(path, fi.Size(), r)
		rf.lock = lf
		return &wholeLines{f: rf}, nil
	case fi.Mode().IsRegular():
		if err := lock(path, f); err != nil {
			f.Close()
			return nil, err
		}
		return &wholeLines{f: appendFile{f}}, nil
	case r.MaxSize > 0: // made a pipe or device since Rotatable
		f.Close()
		return nil, notRegular(path, fi.Mode())
	}
	w := &asyncWriter{f: f, lines: make(chan []byte, Queue), done: make(chan struct{})}
	go func() { defer crashlog.Recover(); w.run() }()
	return w, nil
}

// wholeLines appends each Write (one line) to a regular file. A write
// the disk cuts short (ENOSPC, EFBIG: some bytes of the line written, then
// the error) is taken back by truncating the file to where the line began,
// so the log holds whole lines only: left there, the cut line's head
// would run into the next line written once there is room, spoiling both.
// Only while the cut line ends the file: another writer appending to it
// (O_APPEND both) may have written after it, whose line is kept. When the
// truncate fails too, the next write first ends the cut line, if it still
// ends the file.
type wholeLines struct {
	mu   sync.Mutex
	f    lineFile
	torn int64 // > 0: a cut line that could not be taken back ends here
}

// lineFile is the file wholeLines appends to: appendFile, or rotating.
type lineFile interface {
	io.WriteCloser
	// end is the offset just past the last write's bytes.
	end() (int64, error)
	// size is the file's size now, other writers' lines included.
	size() (int64, error)
	// truncate cuts the file to n bytes.
	truncate(n int64) error
}

func (w *wholeLines) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.torn > 0 {
		if w.endsFile(w.torn) {
			if _, err := w.f.Write([]byte{'\n'}); err != nil {
				return 0, err
			}
		}
		w.torn = 0
	}
	n, err := w.f.Write(p)
	if err == nil || n == 0 {
		return n, err
	}
	if afterCut != nil {
		afterCut()
	}
	end, serr := w.f.end()
	if serr != nil || end < int64(n) {
		return n, err
	}
	if !w.endsFile(end) {
		return n, err // another writer's line follows: not ours to cut
	}
	if w.f.truncate(end-int64(n)) != nil {
		w.torn = end
		return n, err
	}
	return 0, err
}

// endsFile reports whether the file is end bytes long (nothing appended
// after that offset by another writer).
func (w *wholeLines) endsFile(end int64) bool {
	size, err := w.f.size()
	return err == nil && size == end
}

// afterCut, when set (tests), runs between a cut write and its taking back.
var afterCut func()

// Close closes the file, which releases its lock (lock.go): another writer
// may open it then.
func (w *wholeLines) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}

// appendFile is a regular file opened with O_APPEND, never rotated.
type appendFile struct{ *os.File }

// end: with O_APPEND the offset after a write is the end of its bytes.
func (f appendFile) end() (int64, error) { return f.Seek(0, io.SeekCurrent) }

func (f appendFile) size() (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (f appendFile) truncate(n int64) error { return f.Truncate(n) }

// asyncWriter writes lines to f from its own goroutine.
type asyncWriter struct {
	f     *os.File
	lines chan []byte
	done  chan struct{} // closed when run returns

	mu      sync.Mutex
	err     error // the last background write's error, not yet reported
	closed  bool
	dropped int
}

func (w *asyncWriter) run() {
	defer close(w.done)
	for b := range w.lines {
		if _, err := w.f.Write(b); err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
		}
	}
}

// Write queues a copy of p; see Open.
func (w *asyncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, os.ErrClosed
	}
	if err := w.err; err != nil {
		w.err = nil
		return 0, fmt.Errorf("%s: %w", w.f.Name(), err)
	}
	select {
	case w.lines <- append([]byte(nil), p...):
		return len(p), nil
	default:
		w.dropped++
		return 0, fmt.Errorf("%s: %w (%d dropped so far, %d queued)", w.f.Name(), ErrBehind, w.dropped, Queue)
	}
}

// Close stops taking lines, gives the queued ones about a second to be
// written, and closes the file (which ends a write the reader is stalling).
func (w *asyncWriter) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return os.ErrClosed
	}
	w.closed = true
	close(w.lines)
	w.mu.Unlock()
	select {
	case <-w.done:
	case <-time.After(closeWait):
	}
	err := w.f.Close()
	select { // a pollable file's stalled write ends with the close
	case <-w.done:
	case <-time.After(closeWait):
	}
	return err
}
