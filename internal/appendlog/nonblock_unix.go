//go:build unix

package appendlog

import (
	"errors"
	"syscall"
)

// nonBlock opens a FIFO without waiting for a reader: with no reader the
// open fails at once with ENXIO. It does nothing to a regular file.
const nonBlock = syscall.O_NONBLOCK

// isNoReader reports an open of a FIFO that has no reader (ENXIO).
func isNoReader(err error) bool { return errors.Is(err, syscall.ENXIO) }
