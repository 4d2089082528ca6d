package kube_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

// Against an API server that never answers, the discovery behind Scale
// and SetReplicas (which takes no context) ends at RequestTimeout with a
// "timeout" reason, not at the 10 s HTTP timeout nor never; and a
// cancelled context ends it at once.
func TestSilentAPIServerBounded(t *testing.T) {
	cl, err := kube.NewCluster(&rest.Config{Host: kubefake.SilentServer(t)}, "llm")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	lookups := &countingMapper{RESTMapper: cl.Mapper}
	cl.Mapper = lookups
	cl.RequestTimeout = 100 * time.Millisecond
	start := time.Now()
	_, err = cl.Scale(context.Background(), chatRef())
	if !errors.Is(err, context.DeadlineExceeded) || kube.Reason(err) != "timeout" {
		t.Fatalf("Scale: %v (reason %s), want a timeout", err, kube.Reason(err))
	}
	_, _, err = cl.SetReplicas(context.Background(), chatRef(), 3)
	if !errors.Is(err, context.DeadlineExceeded) || kube.Reason(err) != "timeout" {
		t.Fatalf("SetReplicas: %v (reason %s), want a timeout", err, kube.Reason(err))
	}
	// Both within well under kube.DefaultRequestTimeout (10 s): RequestTimeout bound them.
	if d := time.Since(start); d >= kube.DefaultRequestTimeout/2 {
		t.Errorf("two calls took %s; RequestTimeout 100ms did not bound them", d)
	}

	// The discovery those calls gave up on still runs (until its HTTP
	// timeout); the second call joined it, not started another.
	if n := lookups.calls.Load(); n != 1 {
		t.Errorf("%d lookups for two calls while the first was in flight, want 1", n)
	}

	cl.RequestTimeout = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start = time.Now()
	_, err = cl.Scale(ctx, chatRef())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Scale after cancel: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d >= kube.DefaultRequestTimeout/2 {
		t.Errorf("cancelled Scale returned after %s", d)
	}
}

// An HTTP client timeout (rest.Config.Timeout) is reason "timeout" too.
func TestReasonNetTimeout(t *testing.T) {
	err := &net.OpError{Op: "read", Err: timeoutErr{}}
	if got := kube.Reason(err); got != "timeout" {
		t.Errorf("Reason(%v) = %s, want timeout", err, got)
	}
}

// countingMapper counts the RESTMapping lookups that reach the mapper.
type countingMapper struct {
	meta.RESTMapper
	calls atomic.Int32
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.calls.Add(1)
	return m.RESTMapper.RESTMapping(gk, versions...)
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
