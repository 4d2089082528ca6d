package kube

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// silentServer accepts TCP connections and never answers: an API server
// that hangs. It returns its URL.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + l.Addr().String()
}

var chatRef = Ref{Namespace: "llm", CrossVersionObjectReference: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "chat"}}

// Against an API server that never answers, the discovery behind Scale
// and SetReplicas (which takes no context) ends at RequestTimeout with a
// "timeout" reason, not at the 10 s HTTP timeout nor never; and a
// cancelled context ends it at once.
func TestSilentAPIServerBounded(t *testing.T) {
	cl, err := NewCluster(&rest.Config{Host: silentServer(t)}, "llm")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cl.RequestTimeout = 100 * time.Millisecond
	start := time.Now()
	_, err = cl.Scale(context.Background(), chatRef)
	if !errors.Is(err, context.DeadlineExceeded) || Reason(err) != "timeout" {
		t.Fatalf("Scale: %v (reason %s), want a timeout", err, Reason(err))
	}
	_, _, err = cl.SetReplicas(context.Background(), chatRef, 3)
	if !errors.Is(err, context.DeadlineExceeded) || Reason(err) != "timeout" {
		t.Fatalf("SetReplicas: %v (reason %s), want a timeout", err, Reason(err))
	}
	// Both within well under DefaultRequestTimeout (10 s): RequestTimeout bound them.
	if d := time.Since(start); d >= DefaultRequestTimeout/2 {
		t.Errorf("two calls took %s; RequestTimeout 100ms did not bound them", d)
	}

	// The discovery those calls gave up on still runs (until its HTTP
	// timeout); later calls join it, not start one each.
	gk := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	if a, b := cl.restMapping(gk, "v1"), cl.restMapping(gk, "v1"); a != b {
		t.Errorf("a second lookup while one is in flight started another")
	}

	cl.RequestTimeout = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start = time.Now()
	_, err = cl.Scale(ctx, chatRef)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Scale after cancel: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d >= DefaultRequestTimeout/2 {
		t.Errorf("cancelled Scale returned after %s", d)
	}
}

// An HTTP client timeout (rest.Config.Timeout) is reason "timeout" too.
func TestReasonNetTimeout(t *testing.T) {
	err := &net.OpError{Op: "read", Err: timeoutErr{}}
	if got := Reason(err); got != "timeout" {
		t.Errorf("Reason(%v) = %s, want timeout", err, got)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
