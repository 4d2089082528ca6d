//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package statefile

import (
	"errors"
	"os"
)

// tryLock has no flock here: Lock locks nothing.
func tryLock(*os.File) (bool, error) { return false, errors.ErrUnsupported }
