package crashlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/crashtest"
)

// overflow recurses until the goroutine's stack passes its limit: a Go
// fatal error ("fatal error: stack overflow"), which no recover catches.
func overflow(n int) int { return overflow(n+1) + 1 }

// TestMonitorFatalErrorOneRecord: a process under StartMonitor that dies
// of a Go fatal error (a stack overflow past a 1 MiB limit) exits 2, its
// stderr Go's plain-text trace ("runtime: goroutine stack exceeds
// 1048576-byte limit", "fatal error: stack overflow", the frames) and
// then, last, one JSON record: msg "fatal error", at the function that
// overflowed, the trace (with the runtime's detail) and exit_code 2.
// fatal is "" on Go 1.26, whose crash output leaves a fatal error's
// message out (golang/go#76859), "fatal error: stack overflow" on a Go
// that passes it.
func TestMonitorFatalErrorOneRecord(t *testing.T) {
	code, stderr := crashtest.Run(t, "^$", crashChild+"=fatal")
	if code != 2 {
		t.Fatalf("exit status %d, want 2 (Go's after a fatal error); stderr:\n%.2000s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	var rec struct {
		Level, Msg, Fatal, At, Trace string
		TraceBytes                   int `json:"trace_bytes"`
		ExitCode                     int `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatalf("the last line of stderr is not a JSON record: %v\n%.2000s", err, lines[len(lines)-1])
	}
	if rec.Level != "ERROR" || rec.Msg != "fatal error" || rec.At != "github.com/infscale/infscale/internal/crashlog.overflow" || rec.ExitCode != 2 ||
		(rec.Fatal != "" && rec.Fatal != "fatal error: stack overflow") {
		t.Errorf("record level %q msg %q at %q fatal %q exit_code %d, want ERROR, \"fatal error\", crashlog.overflow, \"\" or \"fatal error: stack overflow\", 2", rec.Level, rec.Msg, rec.At, rec.Fatal, rec.ExitCode)
	}
	if !strings.Contains(rec.Trace, "runtime.newstack") || !strings.Contains(rec.Trace, "crashlog.overflow(") {
		t.Errorf("trace does not carry the runtime's detail and the overflowing function:\n%.2000s", rec.Trace)
	}
	if rec.TraceBytes < len(rec.Trace) {
		t.Errorf("trace_bytes %d, less than the trace kept (%d bytes)", rec.TraceBytes, len(rec.Trace))
	}
	if !strings.Contains(stderr, "runtime: goroutine stack exceeds 1048576-byte limit\nruntime: sp=") || !strings.Contains(stderr, "fatal error: stack overflow\n") {
		t.Errorf("Go's own trace is not on stderr before the record")
	}
}

// TestMonitorQuietOnExit: a process under StartMonitor that exits (here
// status 0) leaves stderr empty: the monitor reads no crash output and
// says nothing.
func TestMonitorQuietOnExit(t *testing.T) {
	code, stderr := crashtest.Run(t, "^$", crashChild+"=exit")
	if code != 0 || stderr != "" {
		t.Errorf("exit status %d, stderr %q; want 0 and nothing", code, stderr)
	}
}

// TestMonitorRecord: the record from a crash output written by hand. A
// "fatal error: ..." line after "runtime: ..." lines is the reason; an
// unrecovered panic's "panic: ..." line is, when no fatal error line is
// there; the trace is cut at MaxTrace (65,536 bytes) while trace_bytes
// counts all of it (200,000 + the 35 of the reason line and its newline), and
// nothing read is no record.
func TestMonitorRecord(t *testing.T) {
	type record struct {
		Fatal, At, Trace string
		TraceBytes       int `json:"trace_bytes"`
	}
	run := func(in string) (record, bool) {
		var out bytes.Buffer
		wrote := Monitor(slog.New(slog.NewJSONHandler(&out, nil)), strings.NewReader(in))
		var r record
		if wrote {
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatalf("not one JSON record: %v\n%s", err, out.String())
			}
		} else if out.Len() != 0 {
			t.Errorf("wrote %q, reported nothing", out.String())
		}
		return r, wrote
	}
	r, _ := run("runtime: out of memory: cannot allocate 8192-byte block (3 in use)\nfatal error: out of memory\n\ngoroutine 1 [running]:\n")
	if r.Fatal != "fatal error: out of memory" || r.At != "" {
		t.Errorf("fatal %q at %q, want the fatal error line and no frame", r.Fatal, r.At)
	}
	r, _ = run("panic: assignment to entry in nil map\n\ngoroutine 7 [running]:\nexample.com/a/b.(*T).f(...)\n\t/src/b.go:9\n")
	if r.Fatal != "panic: assignment to entry in nil map" || r.At != "example.com/a/b.(*T).f" {
		t.Errorf("fatal %q at %q, want the panic line and example.com/a/b.(*T).f", r.Fatal, r.At)
	}
	r, _ = run("SIGQUIT: quit\nPC=0x495b01 m=0 sigcode=0\n\ngoroutine 0 gp=0x5242fc0 m=0 mp=0x5244800 [idle]:\nruntime.futex(0x5244958, 0x80)\n\t/usr/local/go/src/runtime/sys_linux_amd64.s:557 +0x21\n")
	if r.Fatal != "SIGQUIT: quit" || r.At != "" {
		t.Errorf("fatal %q at %q, want the signal's line and no frame outside the runtime", r.Fatal, r.At)
	}
	// Go 1.26's crash output of a concurrent map write (its message only on stderr).
	r, _ = run("goroutine 6 [running]:\ninternal/runtime/maps.fatal({0x4a41a0?, 0x47aa32?})\n\t/usr/local/go/src/runtime/panic.go:1181 +0x18\nmain.writer(...)\n\t/tmp/ov/main.go:7\ncreated by main.main in goroutine 1\n")
	if r.Fatal != "" || r.At != "main.writer" {
		t.Errorf("fatal %q at %q, want \"\" and main.writer", r.Fatal, r.At)
	}
	r, _ = run("fatal error: concurrent map writes\n" + strings.Repeat("x", 200000))
	if len(r.Trace) != 65536 || r.TraceBytes != 200035 || r.Fatal != "fatal error: concurrent map writes" {
		t.Errorf("trace %d bytes, trace_bytes %d, fatal %q; want 65536, 200035, the fatal error line", len(r.Trace), r.TraceBytes, r.Fatal)
	}
	if _, wrote := run(""); wrote {
		t.Errorf("a record for no crash output")
	}
}

// TestMonitorEndsWithParent: after a plain exit of the process it
// monitors the monitor, reading the end of its input, exits too, within
// milliseconds (0.03 to 35 ms in 10 stops of serve on a loaded 2-core
// machine), an orphan then for the init to reap; here within 1 s of its
// parent's exit it is a zombie or gone, in each of 5 runs.
func TestMonitorEndsWithParent(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc:", err)
	}
	for i := range 5 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChild+"=monitor-pid")
		cmd.Stderr = w // a file: Wait returns as the child has exited, not when its monitor has
		err = cmd.Run()
		w.Close()
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		ended := time.Now()
		var pid int
		if _, err := fmt.Fscan(r, &pid); err != nil || pid == 0 {
			t.Fatalf("run %d: no monitor's process ID (%v)", i, err)
		}
		for {
			state, _ := procStat(fmt.Sprintf("/proc/%d/stat", pid))
			if state == "" || state == "Z" {
				break
			}
			if time.Since(ended) > time.Second {
				t.Fatalf("run %d: monitor %d still running (state %s) 1 s after its parent's exit", i, pid, state)
			}
			time.Sleep(time.Millisecond)
		}
		r.Close()
	}
}

// TestMonitorEnvOfUser: INFSCALE_CRASH_MONITOR=1 in a user's environment
// made every command of the executable a crash monitor (serve, version:
// stdin read, exit 0, nothing said). A process with arguments, as every
// command has, is not one: the child runs its command ("command ran",
// status 3) with "1" and with its parent's process ID alike.
func TestMonitorEnvOfUser(t *testing.T) {
	for _, value := range []string{"1", strconv.Itoa(os.Getpid())} {
		t.Setenv(MonitorEnv, value)
		code, stderr := crashtest.Run(t, "^$", crashChild+"=command")
		if code != 3 || stderr != "command ran\n" {
			t.Errorf("%s=%s: status %d, stderr %q; want 3, \"command ran\\n\"", MonitorEnv, value, code, stderr)
		}
	}
}

// TestMonitorQuietOnQuickExit: a process that exits as soon as it has
// started its monitor (serve with an invalid config) has left before the
// monitor starts; a monitor that checked its parent's process ID then
// took itself for a command without one and printed the usage on stderr,
// 10 runs in 10 with serve. In 20 runs stderr stays empty, status 0.
func TestMonitorQuietOnQuickExit(t *testing.T) {
	for i := range 20 {
		if code, stderr := crashtest.Run(t, "^$", crashChild+"=exit"); code != 0 || stderr != "" {
			t.Fatalf("run %d: exit status %d, stderr %q; want 0 and nothing", i, code, stderr)
		}
	}
}

// TestMonitorExecutableReplaced: the executable replaced on disk after
// the process started (a package upgrade renames a new file over it)
// made StartMonitor start the new file, os.Executable's path, as the
// monitor: another program (here a script that says "another program"),
// or another infscale release. The monitor is the running executable's
// own file (/proc/self/exe on Linux, which keeps it while it runs), so a
// stack overflow still ends in the record, and the other file never runs.
func TestMonitorExecutableReplaced(t *testing.T) {
	if _, err := os.Stat("/proc/self/exe"); err != nil {
		t.Skip("no /proc/self/exe:", err)
	}
	exe := t.TempDir() + "/crashlog.test"
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChild+"=replaced")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want status 2; stderr:\n%.2000s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	if strings.Contains(stderr.String(), "another program") || !strings.HasPrefix(last, `{"time":`) || !strings.Contains(last, `"msg":"fatal error"`) {
		t.Errorf("stderr's last line %.300q, want the monitor's record and not the replacing file's words", last)
	}
}

// TestMonitorAsPID1: as PID 1 of its PID namespace (a container's
// command; here unshare --pid --fork) a process's monitor child died with
// it, killed by the kernel as PID 1 exited, before it wrote the record in
// 7 runs of 10 (serve, kill -QUIT). StartMonitor there runs the command as
// its child and monitors it (supervise): in each of 10 runs of a stack
// overflow the status is 2, the child's, and stderr's last line the
// record, at the function that overflowed.
func TestMonitorAsPID1(t *testing.T) {
	for range 10 {
		code, stderr := asPID1(t, "fatal", false)
		overflowRecord(t, code, stderr)
	}
}

// TestMonitorUnderInit: under an init that exits as soon as its child
// does (here sh -c as PID 1 of its PID namespace, as docker run --init's
// tini does), the monitor was serve's child and was killed with the
// namespace before it wrote the record: 3 runs of 10 with serve and kill
// -QUIT. The child of a PID 1 supervises as PID 1 does: in each of 10 runs
// of a stack overflow the status is 2 and stderr's last line the record.
func TestMonitorUnderInit(t *testing.T) {
	wrapper := []string{"unshare", "--pid", "--fork", "sh", "-c", `"$@"; exit $?`, "sh"}
	if err := exec.Command(wrapper[0], wrapper[1], wrapper[2], "true").Run(); err != nil {
		t.Skipf("no unshare --pid --fork here (needs root or user namespaces): %v", err)
	}
	for range 10 {
		code, stderr := crashtest.RunUnder(t, wrapper, "^$", crashChild+"=fatal")
		overflowRecord(t, code, stderr)
	}
}

// TestEndsContainer: the processes whose end ends their container: PID 1
// (its parent 0, outside the namespace), the child of PID 1 (an init),
// a container's command in a shared PID namespace (parent 0); not a
// process with a parent of its own in its namespace (a shell's, 4242).
func TestEndsContainer(t *testing.T) {
	for _, c := range []struct {
		pid, ppid int
		want      bool
	}{{1, 0, true}, {7, 1, true}, {7, 0, true}, {4243, 4242, false}} {
		if got := endsContainer(c.pid, c.ppid); got != c.want {
			t.Errorf("endsContainer(%d, %d) = %v, want %v", c.pid, c.ppid, got, c.want)
		}
	}
}

// TestMonitorSurvivesGroupSignals: SIGHUP, serve's reload, sent to every
// infscale process (killall -HUP infscale, or to the process group) ended
// the monitor, Go's default for it, and serve ran on reloaded and
// unmonitored: its next fatal error had no record; SIGQUIT to both
// (killall -QUIT for a dump) made the monitor dump its own goroutines.
// The monitor ignores both: a child in a process group of its own sends
// them to the group, then overflows its stack; stderr's last line is the
// record, at crashlog.overflow, status 2.
func TestMonitorSurvivesGroupSignals(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChild+"=group-signals")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	overflowRecord(t, code, stderr.String())
}

// TestSuperviseReapsOrphans: a process whose parent has left goes to its
// PID namespace's PID 1 (a `kubectl exec` in the pod whose shell ends
// first), which must wait for it; the supervisor waited for serve alone
// (cmd.Wait), and each such orphan stayed a zombie under it, holding a
// process ID, until the container ended: 2 of 2 here. As PID 1 (unshare
// --pid --fork --mount-proc) the child has sh start two sleeps of 0.1 s
// and leave at once; 0.6 s later no zombie has PID 1 for parent, and
// the status is the child's, 0.
func TestSuperviseReapsOrphans(t *testing.T) {
	code, stderr := asPID1(t, "orphans", true)
	if code != 0 || stderr != "zombies 0\n" {
		t.Errorf("status %d, stderr %q; want status 0, \"zombies 0\\n\"", code, stderr)
	}
}

// TestSuperviseChildMemLimit: PID 1 and its child count against one
// container limit, and both took 90% of it for GOMEMLIMIT (automemlimit):
// at 128 MiB, 115.2 MiB for the child beside PID 1's own. The child gets
// PID 1's limit less what PID 1 holds: 120 MiB less 8 MiB is 112 MiB,
// 117,440,512 bytes; no limit (math.MaxInt64), or nothing left, gives
// none. As PID 1 with a 100 MiB limit the child's is in the environment
// and its runtime's, below 100 MiB and above 100 - 16 MiB (PID 1, a test
// binary, holds a few MiB), status 0.
func TestSuperviseChildMemLimit(t *testing.T) {
	for _, c := range []struct{ limit, held, want int64 }{
		{120 << 20, 8 << 20, 117440512},
		{math.MaxInt64, 8 << 20, 0},
		{8 << 20, 8 << 20, 0},
		{0, 0, 0},
	} {
		if got := childMemLimit(c.limit, c.held); got != c.want {
			t.Errorf("childMemLimit(%d, %d) = %d, want %d", c.limit, c.held, got, c.want)
		}
	}
	code, stderr := asPID1(t, "memlimit", false, "GOMEMLIMIT=")
	var got, env int64
	if _, serr := fmt.Sscanf(stderr, "%d %d\n", &got, &env); code != 0 || serr != nil || got != env || got >= 100<<20 || got <= 84<<20 {
		t.Errorf("status %d, stderr %q; want status 0, the child's limit twice, between 88080384 and 104857600 bytes", code, stderr)
	}
}

// TestSuperviseStoppedBeforeStart: a SIGTERM that reaches PID 1 before
// supervise listens for it (in the first 30 to 50 ms of serve's start
// here) cancels the command's signal context alone; the child started
// anyway never heard of it, and serve ran on until a SIGKILL (kill
// -TERM 1 30 ms after the start). With the context already ended no
// child is started: the command runs in PID 1 itself, which stops at
// once; stderr is "pid 1\n" (it was the child's, "pid 9\n"), status 0.
func TestSuperviseStoppedBeforeStart(t *testing.T) {
	code, stderr := asPID1(t, "stopped", false)
	if code != 0 || stderr != "pid 1\n" {
		t.Errorf("status %d, stderr %q; want status 0, \"pid 1\\n\"", code, stderr)
	}
}

// TestSuperviseChildNamed: the child supervise starts from /proc/self/exe
// was named "exe" by the kernel (/proc/PID/comm: ps -e, top, pgrep,
// killall); it is named after os.Args[0] as an exec from that path names
// it: the test binary, "crashlog.test".
func TestSuperviseChildNamed(t *testing.T) {
	code, stderr := asPID1(t, "comm", false)
	if code != 0 || stderr != "crashlog.test\n" {
		t.Errorf("status %d, stderr %q; want status 0, \"crashlog.test\\n\"", code, stderr)
	}
}

// asPID1 runs this test binary in mode (TestMain's crashChild, with env)
// as PID 1 of a new PID namespace (unshare --pid --fork; --mount-proc for
// a /proc of its own when proc) and returns its status and stderr; it
// skips where unshare cannot (it needs root or user namespaces).
func asPID1(t *testing.T, mode string, proc bool, env ...string) (int, string) {
	t.Helper()
	wrapper := []string{"unshare", "--pid", "--fork"}
	if proc {
		wrapper = append(wrapper, "--mount-proc")
	}
	if err := exec.Command(wrapper[0], append(wrapper[1:], "true")...).Run(); err != nil {
		t.Skipf("no %s here (needs root or user namespaces): %v", strings.Join(wrapper, " "), err)
	}
	return crashtest.RunUnder(t, wrapper, "^$", append([]string{crashChild + "=" + mode}, env...)...)
}

// overflowRecord checks that a child that overflowed its stack (mode
// "fatal") exited 2 and that stderr's last line is Monitor's record at
// crashlog.overflow.
func overflowRecord(t *testing.T, code int, stderr string) {
	t.Helper()
	if code != 2 {
		t.Fatalf("exit status %d, want 2; stderr:\n%.2000s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	var rec struct{ Msg, At string }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil || rec.Msg != "fatal error" || rec.At != "github.com/infscale/infscale/internal/crashlog.overflow" {
		t.Fatalf("last line of stderr %.300q (%v), want the record at crashlog.overflow", lines[len(lines)-1], err)
	}
}
