package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestStopSignalTwiceOneStop: a SIGTERM sent to every infscale process
// (pkill -f, systemd's stop of the cgroup) reaches serve itself and
// through its supervisor (PID 1, or the child of an init), which passes
// it on a moment later; the second one ended serve at once, exit 143 with
// no graceful stop, in 7 runs of 20 (a container's serve, pkill -TERM).
// Within a second of the first it is the same stop. The child (this
// test binary) under signalContext sends itself SIGTERM, and once the
// context is cancelled another 2 ms later: 100 ms on it is alive and
// says so; a third SIGTERM 1.2 s after the first, an operator's second,
// ends it at once (killed by SIGTERM, before it says "not ended").
func TestStopSignalTwiceOneStop(t *testing.T) {
	if os.Getenv("INFSCALE_SAME_STOP_CHILD") != "" {
		ctx, _ := signalContext()
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		<-ctx.Done()
		time.Sleep(2 * time.Millisecond)
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		time.Sleep(100 * time.Millisecond)
		fmt.Fprintln(os.Stderr, "alive")
		time.Sleep(1100 * time.Millisecond)
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		time.Sleep(time.Second)
		fmt.Fprintln(os.Stderr, "not ended")
		os.Exit(0)
	}
	c := exec.Command(os.Args[0], "-test.run=^TestStopSignalTwiceOneStop$")
	c.Env = append(os.Environ(), "INFSCALE_SAME_STOP_CHILD=1")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	_ = c.Run()
	ws, _ := c.ProcessState.Sys().(syscall.WaitStatus)
	if stderr.String() != "alive\n" || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("child %s, stderr %q; want \"alive\\n\" and killed by SIGTERM", c.ProcessState, stderr.String())
	}
}
