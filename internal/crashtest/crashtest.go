// Package crashtest (a test harness) runs a test binary again as a child
// process that is to end the way serve and the activator end on a crash,
// and reads the records on its stderr, for internal/crashlog's users.
package crashtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Run runs this test binary again with -test.run=pattern and env
// ("NAME=VALUE", the switch the test's own code reads to act as the
// child) added to the environment, and returns its exit status and
// stderr. It returns once every process sharing that stderr has closed
// it (a crash monitor too). A child that cannot run fails t.
func Run(t testing.TB, pattern string, env ...string) (code int, stderr string) {
	t.Helper()
	return RunUnder(t, nil, pattern, env...)
}

// RunUnder is Run with the test binary started by wrapper, a command and
// its arguments before the binary's path (unshare --pid --fork: as PID 1
// of a new PID namespace); nil runs it directly.
func RunUnder(t testing.TB, wrapper []string, pattern string, env ...string) (code int, stderr string) {
	t.Helper()
	argv := append(append([]string{}, wrapper...), os.Args[0], "-test.run="+pattern)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var errb, outb bytes.Buffer
	cmd.Stderr, cmd.Stdout = &errb, &outb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), errb.String()
	}
	t.Fatalf("child %s: %v; stdout:\n%s", pattern, err, outb.String())
	return 0, ""
}

// Records decodes stderr as one JSON object a line (slog's JSON
// handler); a line that is not one fails t, naming it.
func Records(t testing.TB, stderr string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a line of stderr is not a JSON record: %v\n%s\nstderr:\n%.4000s", err, line, stderr)
		}
		recs = append(recs, rec)
	}
	return recs
}

// Panic checks a child that panicked under crashlog: exit status 2 and,
// last on stderr, crashlog.Handle's record (level ERROR, msg "panic",
// panic value, exit_code 2) whose stack names each of frames. It returns
// every record, the panic's last.
func Panic(t testing.TB, code int, stderr, value string, frames ...string) []map[string]any {
	t.Helper()
	if code != 2 {
		t.Fatalf("exit status %d, want 2; stderr:\n%.4000s", code, stderr)
	}
	recs := Records(t, stderr)
	last := recs[len(recs)-1]
	if last["level"] != "ERROR" || last["msg"] != "panic" || last["panic"] != value || last["exit_code"] != 2.0 {
		t.Errorf("last record %v, want level ERROR, msg panic, panic %q, exit_code 2", last, value)
	}
	stack, _ := last["stack"].(string)
	for _, f := range frames {
		if !strings.Contains(stack, f) {
			t.Errorf("stack does not name %s:\n%s", f, stack)
		}
	}
	return recs
}
