package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// signalChild is the child process of a signal test t: this test binary
// run again with -test.run naming t alone and INFSCALE_SIGNAL_CHILD=t's
// name. In that child (the variable set) it runs body under the
// commands' signal context (signalContext) and exits with body's code;
// in the test it returns the child's command, not started.
func signalChild(t *testing.T, body func(ctx context.Context) int) *exec.Cmd {
	t.Helper()
	if os.Getenv("INFSCALE_SIGNAL_CHILD") == t.Name() {
		ctx, _ := signalContext() // the child ends in os.Exit: no stop
		os.Exit(body(ctx))
	}
	c := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$")
	c.Env = append(os.Environ(), "INFSCALE_SIGNAL_CHILD="+t.Name())
	return c
}

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
	c := signalChild(t, func(ctx context.Context) int {
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
		return 0
	})
	var stderr bytes.Buffer
	c.Stderr = &stderr
	_ = c.Run()
	ws, _ := c.ProcessState.Sys().(syscall.WaitStatus)
	if stderr.String() != "alive\n" || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("child %s, stderr %q; want \"alive\\n\" and killed by SIGTERM", c.ProcessState, stderr.String())
	}
}
