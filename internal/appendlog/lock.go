package appendlog

import (
	"errors"
	"fmt"
	"os"
)

// ErrLocked is returned by Open for a regular file that another writer
// opened with Open and has not closed (another serve given the same
// --audit-log, on this host, or on a volume whose file system carries
// flock between hosts): two writers would interleave their lines, and two
// rotating it would each rename the other's file and prune its backups.
var ErrLocked = errors.New("another process writes it")

// lockErr is Open's error for path when another writer holds its lock.
func lockErr(path string) error {
	return fmt.Errorf("%s: %w (it holds the file's lock: another serve given the same --audit-log?); give each serve its own file, or stop the other first", path, ErrLocked)
}

// lock takes the writer's advisory lock (an exclusive flock, not waited
// for) on path's file through f, an open of it that the writer keeps until
// Close (closing it releases the lock). Another open of the same file
// holding the lock, in this process or another, makes it return lockErr.
// A file system without flock takes no lock and refuses nothing.
func lock(path string, f *os.File) error {
	if err := tryLock(f); errors.Is(err, errWouldBlock) {
		return lockErr(path)
	}
	return nil
}

// lockPath opens path's file and locks it (lock), for a writer whose file
// is opened by someone else (lumberjack). The result is kept open until the
// writer closes.
func lockPath(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	if err := lock(path, f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
