//go:build !unix

package crashlog

import (
	"context"
	"errors"
	"os"
)

// endsContainer is true for PID 1 alone: on this system no process's end
// ends a container (supervise then refuses).
func endsContainer(pid, _ int) bool { return pid == 1 }

// supervise is StartMonitor's PID 1 mode, for a PID namespace's init
// (a Linux container); no other system starts serve as PID 1.
func supervise(context.Context, string, *os.File) error {
	return errors.New("crash monitor: no PID 1 mode on this system")
}
