// Command infscale decides how many replicas an LLM inference Deployment should
// run from the signals that measure a model server's load, and replays history
// through a GPU replica simulator to prove a policy before it runs.
//
// Reading guide: main only exits with what run returns; run builds the kong
// parser over CLI (cli.go); each subcommand is one struct in its own file with
// a Run method. Exit codes: 0 success, 1 runtime failure, 2 invalid input, 130 interrupted by
// a signal.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/infscale/infscale/internal/crashlog"
)

func main() {
	if crashlog.Monitoring() { // serve's or the activator's crash monitor (crashlog.StartMonitor)
		os.Exit(crashlog.MonitorMain())
	}
	// GOMEMLIMIT from the container's cgroup limit (90% of it) unless the
	// environment sets it: the GC then collects before the kernel kills,
	// and a configuration whose parse would not fit is refused
	// (internal/membudget). Without a cgroup limit nothing is set.
	_, _ = memlimit.Set()
	ctx, stop := signalContext()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// sameStop is how long after the first SIGTERM or SIGINT another is the
// same stop: a signal sent to every infscale process (pkill -f 'infscale
// serve', systemd's stop of the unit's cgroup) reaches serve both itself
// and through its supervisor (crashlog.StartMonitor as PID 1, or under
// an init), which passes it on microseconds to milliseconds later; taken
// for a second signal, it ended serve at once in 7 runs of 20 (exit 143:
// no graceful shutdown, no state written, the Lease not released).
const sameStop = time.Second

// signalContext is the commands' signal context: the first SIGTERM or
// SIGINT cancels it (a graceful stop); one more within sameStop is the
// same stop, and the handler is then released, so that a second signal
// (an operator's second Ctrl-C) ends the process at once, Go's default.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); time.Sleep(sameStop); stop() }()
	return ctx, stop
}

// survivePipes makes a write to a pipe with no reader fail (EPIPE) rather
// than end the process: for the daemons (serve, the activator), whose log
// on stderr may go to a shipper or journald that restarts. Go's default
// kills the process at its next log line after that (SIGPIPE, exit 141:
// no graceful shutdown, no state written, the Lease not released); systemd
// starts its services with SIGPIPE ignored for the same reason. The
// one-shot commands keep the default (`infscale simulate | head` ends
// quietly).
func survivePipes() { signal.Ignore(syscall.SIGPIPE) }
