package kube_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

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
	// timeout); later calls join it, not start one each.
	gk := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	if a, b := kube.RESTMappingCall(cl, gk, "v1"), kube.RESTMappingCall(cl, gk, "v1"); a != b {
		t.Errorf("a second lookup while one is in flight started another")
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

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
