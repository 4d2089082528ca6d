package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/infscale/infscale/internal/crashlog"
)

// TestClientPanicOneRecord: a goroutine under client-go's own guard
// (utilruntime.HandleCrash, as its reflectors and informer handlers run)
// that panics, in a process that called HandleClientPanics with a JSON
// logger, leaves exactly one line on stderr, the crashlog record (level
// ERROR, msg panic, the value, the stack naming the function that
// panicked, exit_code 2), and exits 2. Without the hook: klog's
// "Observed a panic" lines and then Go's trace, "panic: ..." and
// "goroutine N [running]:", none of them JSON.
func TestClientPanicOneRecord(t *testing.T) {
	if os.Getenv("INFSCALE_KUBE_PANIC_CHILD") == "1" {
		crashlog.SetLogger(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
		HandleClientPanics()
		HandleClientPanics() // idempotent: one hook, one record
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer utilruntime.HandleCrash()
			panicInAWatchHandler()
		}()
		<-done
		t.Fatal("the guarded goroutine returned; want the process ended by its panic")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestClientPanicOneRecord$")
	cmd.Env = append(os.Environ(), "INFSCALE_KUBE_PANIC_CHILD=1")
	var stderr, stdout bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stdout
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("child: %v, want exit status 2; stderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("stderr has %d lines, want the one JSON record:\n%s", len(lines), stderr.String())
	}
	var rec struct {
		Level, Msg, Panic, Stack string
		ExitCode                 int `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("stderr is not a JSON record: %v\n%s", err, lines[0])
	}
	if rec.Level != "ERROR" || rec.Msg != "panic" || rec.Panic != "a bug in a watch handler" || rec.ExitCode != 2 {
		t.Errorf("record %+v, want level ERROR, msg panic, panic \"a bug in a watch handler\", exit_code 2", rec)
	}
	if !strings.Contains(rec.Stack, "kube.panicInAWatchHandler") {
		t.Errorf("stack does not name the function that panicked:\n%s", rec.Stack)
	}
}

func panicInAWatchHandler() { panic("a bug in a watch handler") }
