// Package boundedfile reads a file that a user points infscale at (a
// configuration, a behavior, a saved state, a page, a trace) safely: only a
// regular file (or a symlink to one, as a Kubernetes ConfigMap mount is) of
// at most a given size. A FIFO would block the open and the read forever
// (and SIGTERM with it); /dev/zero would exhaust memory. The file is opened
// without blocking and checked on the open descriptor, so a file swapped
// for a FIFO after a Stat is refused too.
package boundedfile

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/infscale/infscale/internal/crashlog"
)

// Open opens the file at path for reading, refusing anything but a regular
// file of at most max bytes. what names the file's role in errors ("a
// configuration", "a trace") and hint says what the file should be. Errors:
// those of os.Open as they are (fs.ErrNotExist included); "PATH: not a
// regular file (a named pipe); HINT" for anything but a regular file;
// "PATH: N bytes, larger than the MAX allowed for WHAT". A reader of a
// file that may grow while read should cap its reads (Read does).
func Open(path string, max int64, what, hint string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file (%s); %s", path, Kind(fi.Mode()), hint)
	}
	if fi.Size() > max {
		f.Close()
		return nil, fmt.Errorf("%s: %d bytes, larger than the %d allowed for %s", path, fi.Size(), max, what)
	}
	return f, nil
}

// Read returns the content of the file at path, with Open's checks and
// errors; also "PATH: larger than the MAX bytes allowed for WHAT" when the
// file grew past max after the open.
func Read(path string, max int64, what, hint string) ([]byte, error) {
	f, err := Open(path, max, what, hint)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max { // grew between the open and the read
		return nil, fmt.Errorf("%s: larger than the %d bytes allowed for %s", path, max, what)
	}
	return data, nil
}

// ReadAll reads r (standard input, a pipe) to its end, at most max bytes
// (ok false when there were more), and returns as soon as ctx is done with
// ctx's error: a read that blocks (a terminal, a pipe nobody writes to)
// does not hold up a shutdown signal. The read itself then goes on in the
// background until r returns, so r must not be reused.
func ReadAll(ctx context.Context, r io.Reader, max int64) (data []byte, ok bool, err error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer crashlog.Recover()
		b, err := io.ReadAll(io.LimitReader(r, max+1))
		done <- result{b, err}
	}()
	select {
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case res := <-done:
		if res.err != nil {
			return nil, false, res.err
		}
		if int64(len(res.b)) > max {
			return nil, false, nil
		}
		return res.b, true, nil
	}
}

// Kind names a non-regular file mode in words: "a directory", "a named
// pipe", "a device", "a socket", else the mode's type letters.
func Kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeDevice != 0, m&os.ModeCharDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// Where is, for a relative path, " (looked for in the working directory
// WD)", to follow a "no such file": a command run from another directory
// than the one the path was written for then says where it looked. "" for
// an absolute path (it names itself) or when the directory is unknown.
func Where(path string) string {
	if filepath.IsAbs(path) {
		return ""
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	return " (looked for in the working directory " + wd + ")"
}
