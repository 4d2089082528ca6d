package activator

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// setUserTimeout sets the TCP user timeout (TCP_USER_TIMEOUT, in ms) of the
// socket fd.
func setUserTimeout(fd uintptr, d time.Duration) error {
	if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds())); err != nil {
		return fmt.Errorf("TCP_USER_TIMEOUT %v: %w", d, err)
	}
	return nil
}
