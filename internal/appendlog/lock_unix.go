//go:build unix

package appendlog

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errWouldBlock is tryLock's error when another open file holds the lock.
var errWouldBlock = unix.EWOULDBLOCK

// tryLock takes an exclusive flock on f without waiting. A lock on the same
// file through another open (another process, or another Open in this
// one) makes it fail with errWouldBlock; a file system that has no flock
// (ENOLCK, EOPNOTSUPP) is not an error: nothing is locked.
func tryLock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB) }); err != nil {
		return err
	}
	if errors.Is(lerr, unix.ENOLCK) || errors.Is(lerr, unix.EOPNOTSUPP) {
		return nil
	}
	return lerr
}
