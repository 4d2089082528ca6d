package kube

import (
	"context"
	"net/http"
	"sync"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/infscale/infscale/internal/crashlog"
)

var clientPanicsOnce sync.Once

// HandleClientPanics makes a panic in a goroutine client-go runs under
// its own guard (utilruntime.HandleCrash: its reflectors and watches, an
// informer's event handlers, the leader election loop) end the process
// through crashlog.Recovered: one record in the log's format (msg
// "panic", the value, the stack as one string) and exit 2, where client-go
// would log "Observed a panic" through klog and panic again, Go's
// plain-text trace. Its hook runs before client-go's own; the
// http.ErrAbortHandler sentinel, which net/http recovers, is left to
// client-go. serve calls it once at start, after crashlog.SetLogger;
// later calls do nothing.
func HandleClientPanics() {
	clientPanicsOnce.Do(func() {
		utilruntime.PanicHandlers = append([]func(context.Context, any){clientPanic}, utilruntime.PanicHandlers...)
	})
}

func clientPanic(_ context.Context, r any) {
	if r == http.ErrAbortHandler {
		return
	}
	crashlog.Recovered(r)
}
