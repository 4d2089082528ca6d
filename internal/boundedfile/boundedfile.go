// Package boundedfile reads a file that a user points infscale at (a
// configuration, a saved state) safely: only a regular file (or a symlink to
// one, as a Kubernetes ConfigMap mount is) of at most a given size. A FIFO
// would block the read forever (and SIGTERM with it); /dev/zero would exhaust
// memory.
package boundedfile

import (
	"fmt"
	"io"
	"os"
)

// Read returns the content of the file at path. what names the file's role in
// errors ("a configuration", "a state file") and hint says what the file
// should be. Errors: those of os.Stat/Open/Read as they are (fs.ErrNotExist
// included); "PATH: not a regular file (a named pipe); HINT" for anything
// but a regular file; "PATH: N bytes, larger than the MAX allowed for WHAT"
// when the file exceeds max bytes (also when it grew after the Stat).
func Read(path string, max int64, what, hint string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s); %s", path, Kind(fi.Mode()), hint)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, larger than the %d allowed for %s", path, fi.Size(), max, what)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max { // grew between Stat and read
		return nil, fmt.Errorf("%s: larger than the %d bytes allowed for %s", path, max, what)
	}
	return data, nil
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
