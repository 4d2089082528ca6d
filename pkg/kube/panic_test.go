package kube

import (
	"log/slog"
	"os"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/internal/crashtest"
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
	code, stderr := crashtest.Run(t, "^TestClientPanicOneRecord$", "INFSCALE_KUBE_PANIC_CHILD=1")
	if recs := crashtest.Panic(t, code, stderr, "a bug in a watch handler", "kube.panicInAWatchHandler"); len(recs) != 1 {
		t.Errorf("%d records, want the panic's alone: %v", len(recs), recs)
	}
}

func panicInAWatchHandler() { panic("a bug in a watch handler") }
