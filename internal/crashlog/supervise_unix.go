//go:build unix

package crashlog

import (
	"context"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"syscall"
)

// endsContainer reports whether a process with ID pid and parent ppid
// is one whose end ends its container, so that a monitor child would be
// killed with it, before it wrote the record: PID 1 of its PID namespace
// (the image's command), whose exit makes the kernel kill every other
// process of the namespace; a child of that PID 1 (ppid 1: an init such
// as docker run --init's tini, dumb-init or sh -c, which exits as soon as
// its child has, the record then lost in 3 runs of 10 with sh); or a
// process whose parent is outside its PID namespace (ppid 0: a container's
// command in a pod with shareProcessNamespace, the pause container being
// PID 1, whose runtime kills the container's other processes once it has
// ended). There StartMonitor supervises (supervise). A process started by
// systemd (ppid 1 too) is supervised as well, which costs it nothing: its
// stop reaches both processes, as one (a stop signal within the first
// second of another is the same stop, cmd/recommender).
func endsContainer(pid, ppid int) bool { return pid == 1 || ppid <= 1 }

// supervise is StartMonitor in a process whose end ends its container
// (endsContainer): PID 1 of a PID namespace (a container's command, as
// the image runs serve), where a monitor child would die with it, the
// kernel killing every other process of the namespace as PID 1 exits,
// the monitor then between its end of input and its write (the record
// was lost in 7 runs of 10); the child of an init (tini, sh -c), which
// exits as its child does (lost in 3 runs of 10 under sh); a container's
// command in a shared PID namespace, whose runtime kills the container's
// other processes as it ends. So the roles swap: this process
// starts the command again (the same executable, arguments, environment,
// standard files) as its child, in a process group of its own, with the
// crash output the pipe it reads; it forwards SIGTERM, SIGINT, SIGHUP,
// SIGQUIT, SIGUSR1 and SIGUSR2 to the child, writes the child's crash
// output as Monitor's record once the child has ended, and exits with
// the child's status (128 + the signal's number for a child a signal
// ended, as a shell says it); meanwhile, as PID 1, it reaps the orphans
// the kernel gives it (reap). A stop that reached ctx alone, before supervise
// listened for the signals, was lost: serve ran on until a SIGKILL; then
// no child is started, and supervise returns nil: the command runs in
// this process and stops at once. It returns otherwise only an error
// starting the child, and then the process runs the command itself,
// unmonitored.
func supervise(ctx context.Context, exe string, stderr *os.File) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), MonitorEnv+"="+supervised+strconv.Itoa(os.Getpid()))
	// This process and the child count against the one container limit:
	// the child's GOMEMLIMIT is what this process leaves of its own.
	debug.FreeOSMemory() // its start's heap (as serve's) back to the system
	if os.Getenv("GOMEMLIMIT") == "" {
		if limit := childMemLimit(debug.SetMemoryLimit(-1), held()); limit > 0 {
			cmd.Env = append(cmd.Env, "GOMEMLIMIT="+strconv.FormatInt(limit, 10))
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, stderr
	cmd.ExtraFiles = []*os.File{w}
	// Its own group: a terminal's Ctrl-C reaches it once, forwarded.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	signal.Ignore(syscall.SIGPIPE) // a log reader gone loses the record, not the child's status
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	if ctx.Err() != nil && len(sigs) == 0 {
		// Stopped before Notify above (the command's own handler took
		// the signal): no child; the command runs here and stops at once.
		signal.Stop(sigs)
		r.Close()
		w.Close()
		return nil
	}
	err = cmd.Start()
	w.Close()
	if err != nil {
		signal.Stop(sigs)
		r.Close()
		return err
	}
	// A stop before Notify whose cancel came after the check above: the
	// child gets it as SIGTERM. One after Notify is in sigs too, and
	// forwarded once, below.
	if ctx.Err() != nil && len(sigs) == 0 {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	status := make(chan syscall.WaitStatus, 1)
	go func() { status <- reap(cmd.Process.Pid) }()
	// To the end of the output first (the child never blocks writing it),
	// which comes when the child has ended.
	Monitor(slog.New(slog.NewJSONHandler(stderr, nil)), r)
	ws := <-status
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	exit(code)
	return nil
}

// reap waits for any child of this process, PID 1, until child has
// ended, and returns child's status. The others are the namespace's
// orphans, which the kernel gives its PID 1 (a process a `kubectl exec`
// started whose parent has left): waited for, they do not stay zombies,
// holding a process ID each, until the container ends. Not cmd.Wait,
// which waits for child alone.
func reap(child int) syscall.WaitStatus {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
		case err != nil: // ECHILD: child's status lost (cannot be while child is ours): exit status 1
			return syscall.WaitStatus(1 << 8)
		case pid == child:
			return ws
		}
	}
}

// childMemLimit is the child's GOMEMLIMIT in bytes: limit, this
// process's (90% of the container's cgroup limit, set at start by
// automemlimit), less held, what this process holds; 0 (none given) when
// there is no limit (math.MaxInt64 or <= 0) or nothing is left. Before,
// the child took the same 90% for itself: at 128 MiB, 115.2 MiB for serve
// beside PID 1's 8 MiB left 4.8 MiB of the 12.8 MiB the 90% keeps for
// what Go does not count, so the kernel's limit came before the collector's.
func childMemLimit(limit, held int64) int64 {
	if limit <= 0 || limit == math.MaxInt64 || held >= limit {
		return 0
	}
	return limit - held
}

// held is the memory this process's runtime holds from the system, in
// bytes, as GOMEMLIMIT counts it: all its classes but the heap released.
func held() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
