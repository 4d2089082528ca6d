//go:build !unix

package appendlog

// nonBlock is 0 where O_NONBLOCK does not exist.
const nonBlock = 0

// isNoReader is false where FIFOs are not opened without blocking.
func isNoReader(error) bool { return false }
