//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package statefile

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes f's exclusive flock without waiting: false when another
// open file holds it.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, err
	}
}
