//go:build !linux

package activator

import "time"

// setUserTimeout does nothing: TCP_USER_TIMEOUT is Linux's. Elsewhere a
// client lost while an answer streams to it is known when the kernel gives
// up retransmitting, or by --body-timeout once the socket buffers fill.
func setUserTimeout(uintptr, time.Duration) error { return nil }
