//go:build unix

package boundedfile

import "syscall"

// nonBlock opens a FIFO without waiting for a writer (the descriptor is
// then refused as not regular); it does nothing to a regular file.
const nonBlock = syscall.O_NONBLOCK
