//go:build !unix

package boundedfile

// nonBlock is 0 where O_NONBLOCK does not exist.
const nonBlock = 0
