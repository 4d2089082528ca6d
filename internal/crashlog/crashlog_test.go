package crashlog

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/crashtest"
)

// crashChild, set in the environment, makes TestHandleOneJSONRecord's
// child process panic in a goroutine guarded by Handle.
const crashChild = "INFSCALE_CRASHLOG_CHILD"

func TestMain(m *testing.M) {
	if Monitoring() {
		os.Exit(MonitorMain())
	}
	switch os.Getenv(crashChild) {
	case "fatal": // a Go fatal error under StartMonitor
		if err := StartMonitor(context.Background(), os.Stderr); err != nil {
			panic(err)
		}
		debug.SetMaxStack(1 << 20)
		overflow(0)
	case "replaced": // a Go fatal error under StartMonitor, the executable replaced on disk before it
		exe, err := os.Executable()
		if err != nil {
			panic(err)
		}
		if err := os.Remove(exe); err != nil {
			panic(err)
		}
		if err := os.WriteFile(exe, []byte("#!/bin/sh\necho another program >&2\n"), 0o755); err != nil {
			panic(err)
		}
		if err := StartMonitor(context.Background(), os.Stderr); err != nil {
			panic(err)
		}
		debug.SetMaxStack(1 << 20)
		overflow(0)
	case "group-signals": // the signals a reload or a dump sends to every infscale process, then a Go fatal error
		if err := StartMonitor(context.Background(), os.Stderr); err != nil {
			panic(err)
		}
		signal.Ignore(syscall.SIGHUP, syscall.SIGQUIT) // serve reloads on SIGHUP; this child ignores both
		time.Sleep(200 * time.Millisecond)             // the monitor's start
		_ = syscall.Kill(0, syscall.SIGHUP)            // its process group: this child and the monitor
		_ = syscall.Kill(0, syscall.SIGQUIT)
		time.Sleep(200 * time.Millisecond)
		debug.SetMaxStack(1 << 20)
		overflow(0)
	case "orphans": // as PID 1: two orphans end under it, then the zombies left are counted
		if err := StartMonitor(context.Background(), os.Stderr); err != nil {
			panic(err)
		}
		// sh leaves at once; its two sleeps, orphaned, go to PID 1.
		if err := exec.Command("sh", "-c", "sleep 0.1 & sleep 0.1 & exit 0").Run(); err != nil {
			panic(err)
		}
		time.Sleep(600 * time.Millisecond)
		fmt.Fprintf(os.Stderr, "zombies %d\n", zombiesOf(1))
		os.Exit(0)
	case "memlimit": // as PID 1 with a 100 MiB memory limit (automemlimit's, from the container's): the child's limit said
		if os.Getpid() == 1 { // PID 1, not its child
			debug.SetMemoryLimit(100 << 20)
		}
		if err := StartMonitor(context.Background(), os.Stderr); err != nil {
			panic(err)
		}
		fmt.Fprintf(os.Stderr, "%d %s\n", debug.SetMemoryLimit(-1), os.Getenv("GOMEMLIMIT"))
		os.Exit(0)
	case "stopped": // as PID 1, its signal context ended (a SIGTERM) before StartMonitor: where the command runs
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := StartMonitor(ctx, os.Stderr); err != nil {
			panic(err)
		}
		fmt.Fprintf(os.Stderr, "pid %d\n", os.Getpid())
		os.Exit(0)
	case "comm": // as PID 1: the name of the process that runs the command
		if err := StartMonitor(context.Background(), os.Stderr); err != nil {
			panic(err)
		}
		b, _ := os.ReadFile("/proc/self/comm")
		fmt.Fprintf(os.Stderr, "%s", b)
		os.Exit(0)
	case "monitor-pid": // a plain exit under StartMonitor, the monitor's process ID said first
		if err := StartMonitor(context.Background(), os.Stderr); err != nil {
			panic(err)
		}
		fmt.Fprintf(os.Stderr, "%d\n", childOf(os.Getpid()))
		os.Exit(0)
	case "command": // a command of its own: a word on stderr, status 3
		fmt.Fprintln(os.Stderr, "command ran")
		os.Exit(3)
	case "exit": // a plain exit under StartMonitor
		if err := StartMonitor(context.Background(), os.Stderr); err != nil {
			panic(err)
		}
		os.Exit(0)
	}
	if os.Getenv(crashChild) == "1" {
		log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer Handle(log)
			panicInADecision()
		}()
		<-done
		os.Exit(0) // not reached: Handle exits with ExitCode
	}
	os.Exit(m.Run())
}

func panicInADecision() {
	var m map[string]int
	m["target"] = 1 // assignment to entry in nil map
}

// TestHandleOneJSONRecord: a process whose goroutine panics under Handle
// with a JSON logger writes exactly one line to stderr, a JSON object with
// level ERROR, the panic's value, the stack (naming the function that
// panicked) as one string and exit_code 2, and exits 2, as Go does after a panic. Before
// (Go's own trace): "panic: assignment to entry in nil map", a blank line,
// "goroutine N [running]:" and two lines a frame, none of them JSON.
func TestHandleOneJSONRecord(t *testing.T) {
	code, stderr := crashtest.Run(t, "^$", crashChild+"=1")
	recs := crashtest.Panic(t, code, stderr, "assignment to entry in nil map", "crashlog.panicInADecision", "goroutine ")
	if len(recs) != 1 {
		t.Errorf("%d records, want the panic's alone: %v", len(recs), recs)
	}
}

// TestHandleNoPanic: deferred in a goroutine that returns, Handle neither
// logs nor exits.
func TestHandleNoPanic(t *testing.T) {
	exit = func(int) { t.Error("exit called without a panic") }
	defer func() { exit = os.Exit }()
	var buf bytes.Buffer
	func() {
		defer Handle(slog.New(slog.NewJSONHandler(&buf, nil)))
	}()
	if buf.Len() != 0 {
		t.Errorf("logged without a panic: %s", buf.String())
	}
}

// TestRecoverWithoutLoggerPanicsAgain: Recover with no SetLogger (a
// one-shot command, a test) neither logs nor exits: the panic goes on, its
// value unchanged, as if Recover were not there.
func TestRecoverWithoutLoggerPanicsAgain(t *testing.T) {
	exit = func(int) { t.Error("exit called without a logger") }
	defer func() { exit = os.Exit }()
	defer func() {
		if r := recover(); r != "a bug" {
			t.Errorf("recovered %v, want the panic going on: a bug", r)
		}
	}()
	func() {
		defer Recover()
		panic("a bug")
	}()
}

// childOf is the process ID of a child of ppid that is not a zombie
// (/proc/PID/stat), 0 if none.
func childOf(ppid int) int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		if state, parent := procStat(p); state != "" && state != "Z" && parent == ppid {
			pid, _ := strconv.Atoi(strings.Split(p, "/")[2])
			return pid
		}
	}
	return 0
}

// procStat reads a /proc/PID/stat file's state and parent's process ID
// ("", 0 when it cannot be read: the process has been reaped).
func procStat(path string) (state string, ppid int) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0
	}
	// "PID (COMM) STATE PPID ...": COMM may hold spaces, so after its ")".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return "", 0
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid
}

// zombiesOf counts the zombies (state Z in /proc/PID/stat) whose parent
// is ppid.
func zombiesOf(ppid int) int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	n := 0
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// "PID (COMM) STATE PPID ...": COMM may hold spaces, so after its ")".
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[0] == "Z" && f[1] == fmt.Sprint(ppid) {
			n++
		}
	}
	return n
}
