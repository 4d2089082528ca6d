// Package crashlog ends a long-running command (serve, the activator) on a
// panic with one log record, in the command's log format, instead of Go's
// plain-text trace: with --log-format json a pipeline that reads one JSON
// object a line split that trace into dozens of unparsed lines or dropped
// it, and the reason the process died was lost.
package crashlog

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync/atomic"
)

// ExitCode is the exit status after a panic: 2, Go's own after an
// unrecovered panic, so that a supervisor sees the same status as before.
const ExitCode = 2

// exit ends the process; a test replaces it.
var exit = os.Exit

// process is Recover's logger (SetLogger); nil until set.
var process atomic.Pointer[slog.Logger]

// SetLogger makes log the logger Recover writes to: serve and the
// activator set theirs at start, for the goroutines of the packages that
// have no logger at hand (a cycle's reads and writes, the audit log's
// writer).
func SetLogger(log *slog.Logger) { process.Store(log) }

// Handle, deferred at the top of a goroutine (`defer crashlog.Handle(log)`),
// turns a panic in it into one record on log at level ERROR, with msg
// "panic", the panic value as "panic" (its %v), the panicking goroutine's
// stack as one string, "stack", and "exit_code" (as the "exiting" record
// of an error, cmd/recommender), and then ends the process with
// ExitCode. Nothing is recovered to carry on: the panic ends the process
// as it did, only its trace is a record. It does nothing when there is no
// panic; with a nil log it panics again (Go's own trace).
func Handle(log *slog.Logger) { handle(log, recover()) }

// Recover, deferred at the top of a goroutine (`defer crashlog.Recover()`),
// is Handle with SetLogger's logger; none set (a one-shot command, a
// test), it panics again, Go's own trace.
func Recover() { handle(process.Load(), recover()) }

// handle is Handle's work on r, recover's value (nil: no panic).
func handle(log *slog.Logger, r any) {
	if r == nil {
		return
	}
	if log == nil {
		panic(r)
	}
	log.Error("panic", "panic", fmt.Sprint(r), "stack", string(debug.Stack()), "exit_code", ExitCode)
	exit(ExitCode)
}

// Recovered is Recover for a panic value a library has recovered itself
// and hands to its hooks (client-go's utilruntime.PanicHandlers): with
// SetLogger's logger it writes the one record and ends the process with
// ExitCode, the stack being the panicking goroutine's (a hook runs in the
// library's deferred recover, before the stack unwinds). With no logger
// set, or a nil r, it returns, and the library goes on as it would.
func Recovered(r any) {
	if log := process.Load(); log != nil && r != nil {
		handle(log, r)
	}
}
