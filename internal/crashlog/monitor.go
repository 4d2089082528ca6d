package crashlog

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// MonitorEnv, set in the environment of a process started without
// arguments (StartMonitor sets it to its own process ID), makes it the
// crash monitor (the executable's main checks Monitoring first and runs
// MonitorMain); it is not a setting for users: with arguments (every
// command) it is ignored.
const MonitorEnv = "INFSCALE_CRASH_MONITOR"

// MaxTrace is the most of a fatal error's trace (bytes) Monitor's record
// carries: the runtime prints the failing goroutine first, then every
// other one, which in a serve with thousands of goroutines is megabytes.
const MaxTrace = 64 << 10

// StartMonitor covers what Handle cannot: Go's fatal errors (a
// concurrent map write, memory exhausted, a stack overflow), which end
// the process without a recover, and an unrecovered panic in a goroutine
// nothing guards. It starts the crash monitor, a child process of the
// same executable with MonitorEnv set, whose standard input is the
// runtime's crash output (debug.SetCrashOutput) and whose standard error
// is stderr: when this process dies that way, the runtime still prints
// its plain-text trace on stderr, and the monitor then writes it as one
// record there (Monitor). On any other end of this process (an exit, a
// kill) the monitor reads an empty input and exits without a word. The
// error is self's, the pipe's or the start's; the process then
// runs without a monitor. Where this process's end ends its container
// (endsContainer: PID 1 of its PID namespace, the child of an init that
// is, or one whose parent is outside the namespace), which would kill the
// monitor child with it, the process is the monitor and runs the command
// again as its child (supervise): StartMonitor returns only in that
// child, or on an error. ctx is the command's signal context (signal.NotifyContext's,
// cancelled by SIGTERM or SIGINT): ended before supervise listens for
// them, the stop reaches the child as SIGTERM.
func StartMonitor(ctx context.Context, stderr *os.File) error {
	if os.Getenv(MonitorEnv) == supervised+strconv.Itoa(os.Getppid()) {
		// The child of a process that monitors it (supervise): the crash
		// output is the pipe it passed as file descriptor 3.
		_ = os.Unsetenv(MonitorEnv)
		nameSelf()
		f := os.NewFile(3, "crash output")
		defer f.Close() // SetCrashOutput holds its own duplicate, closed on exec
		return debug.SetCrashOutput(f, debug.CrashOptions{})
	}
	exe, err := self()
	if err != nil {
		return err
	}
	if endsContainer(getpid(), getppid()) {
		return supervise(ctx, exe, stderr)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer w.Close() // SetCrashOutput holds its own duplicate
	cmd := exec.Command(exe)
	if name, err := os.Executable(); err == nil {
		cmd.Args[0] = name // what ps shows, not /proc/self/exe
	}
	cmd.Env = append(os.Environ(), MonitorEnv+"="+strconv.Itoa(os.Getpid())) // the last value of a name is the one the child gets
	cmd.Stdin, cmd.Stderr = r, stderr
	err = cmd.Start()
	r.Close()
	if err != nil {
		return err
	}
	if err := debug.SetCrashOutput(w, debug.CrashOptions{}); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	// Reaps the monitor should it end first (killed); it ends at the
	// latest when this process does.
	go func() { _ = cmd.Wait() }()
	return nil
}

// supervised, followed by the parent's process ID, is MonitorEnv's value
// in the child supervise starts: a process that runs the command, its
// crash output file descriptor 3.
const supervised = "supervised:"

// nameSelf names this process (/proc/self/comm: what ps -e, top, ss -p,
// pgrep and killall match) after its executable, os.Args[0]'s base name
// (the kernel keeps 15 bytes), as an exec from that path would have: a
// process StartMonitor started from /proc/self/exe (self) was "exe", so
// that `pgrep -x infscale` missed serve under a PID 1 and the monitor.
// Where there is no /proc/self/comm it does nothing.
func nameSelf() {
	_ = os.WriteFile("/proc/self/comm", []byte(filepath.Base(os.Args[0])), 0)
}

// getpid and getppid are os.Getpid and os.Getppid; a test replaces them.
var getpid, getppid = os.Getpid, os.Getppid

// self is the path StartMonitor starts the monitor from: on Linux
// /proc/self/exe, the running executable's own file even when the path it
// was started from has been deleted or replaced since (a package upgrade
// renames a new file over it, which os.Executable's path then names: another
// program or another release would run as the monitor); else
// os.Executable.
func self() (string, error) {
	const proc = "/proc/self/exe"
	if _, err := os.Stat(proc); err == nil {
		return proc, nil
	}
	return os.Executable()
}

// Monitor reads a dying process's crash output from in until it ends
// and, when there was any, writes it on log as one record at level ERROR:
// msg "fatal error"; "fatal" the output's reason line, "panic: ..." for
// an unrecovered panic, "SIGQUIT: quit" for a fatal signal (kill -QUIT
// dumps the goroutines), "fatal error: ..." where the runtime passes it
// (Go 1.26 prints a fatal error's message only on stderr, before its
// crash output starts: golang/go#76859; then "" here, the message being
// the plain-text line just above the record); "at" the first function of
// the trace outside the Go runtime (where the program was, e.g.
// "main.writer" for a concurrent map write in it; "" if none); "trace" the
// output's first MaxTrace bytes; "trace_bytes" its whole length; and
// "exit_code" 2 (the runtime's). It reads everything, so that the dying
// process never blocks writing. It reports whether there was output.
func Monitor(log *slog.Logger, in io.Reader) bool {
	var kept bytes.Buffer
	n, _ := io.Copy(&kept, io.LimitReader(in, MaxTrace))
	rest, _ := io.Copy(io.Discard, in)
	if n == 0 {
		return false
	}
	fatal, at := reason(kept.String())
	log.Error("fatal error", "fatal", fatal, "at", at, "trace", kept.String(), "trace_bytes", n+rest, "exit_code", ExitCode)
	return true
}

// reason finds in a crash output the line that says why (the runtime's
// "fatal error: ...", else an unrecovered "panic: ..." or a fatal signal's
// "SIGSEGV: segmentation violation", "SIGQUIT: quit", else "") and the
// first traceback frame's function outside the runtime (packages runtime,
// runtime/..., internal/runtime/...).
func reason(out string) (why, at string) {
	var panicked string
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		frame := i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") // a function line, its file:line below
		switch {
		case strings.HasPrefix(line, "fatal error: "):
			if why == "" {
				why = line
			}
		case strings.HasPrefix(line, "panic: ") || signalLine(line):
			if panicked == "" {
				panicked = line
			}
		case at == "" && frame && strings.HasSuffix(line, ")") && !strings.HasPrefix(line, "created by "):
			fn := line[:strings.LastIndex(line, "(")]
			pkg := fn
			if i := strings.LastIndex(pkg, "/"); i >= 0 {
				pkg = pkg[:i+1] + strings.SplitN(pkg[i+1:], ".", 2)[0]
			} else {
				pkg = strings.SplitN(pkg, ".", 2)[0]
			}
			if fn != "" && pkg != "runtime" && !strings.HasPrefix(pkg, "runtime/") && !strings.HasPrefix(pkg, "internal/runtime/") {
				at = fn
			}
		}
	}
	if why == "" {
		why = panicked
	}
	return why, at
}

// MonitorMain is the crash monitor's main: a process started with
// MonitorEnv runs it first thing and exits with its status. It ignores
// the signals a terminal sends to every process of the group and those
// an operator sends to every infscale process (killall -HUP infscale,
// serve's reload, which ended it; -QUIT for a dump): it lives as long as
// its input. It writes JSON records, the format StartMonitor's callers
// log in.
func MonitorMain() int {
	signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	nameSelf()
	Monitor(slog.New(slog.NewJSONHandler(os.Stderr, nil)), os.Stdin)
	return 0
}

// Monitoring reports whether this process is a crash monitor: MonitorEnv
// set, and no arguments, as StartMonitor starts it. A user's
// INFSCALE_CRASH_MONITOR=1 made every command a monitor (serve, version:
// stdin read, exit 0, nothing said); a command has arguments. Not the
// parent's process ID read back: a parent that ends at once (serve with an
// invalid config) has left before the monitor looks, and the monitor,
// taking itself for a command without one, printed the usage.
func Monitoring() bool {
	v := os.Getenv(MonitorEnv)
	return v != "" && !strings.HasPrefix(v, supervised) && len(os.Args) == 1
}

// signalLine reports whether line is the runtime's line for a fatal
// signal: "SIG" and upper-case letters, ": ", its description.
func signalLine(line string) bool {
	name, _, ok := strings.Cut(line, ": ")
	if !ok || len(name) < 4 || !strings.HasPrefix(name, "SIG") {
		return false
	}
	for _, c := range name[3:] {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}
