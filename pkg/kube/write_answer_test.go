package kube_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/infscale/infscale/pkg/kube"
)

// TestWriteAnswerNotAScale: a PUT to the scale subresource answered 200
// with a body that is not a Scale (a proxy's page) reached something that
// may have written it. It is bad_data, but its error does not say "no
// decision" (one was made and sent) as a read's does: whether it was
// written is unknown.
func TestWriteAnswerNotAScale(t *testing.T) {
	f := &faultServer{replicas: 2, put: func(w http.ResponseWriter, _ *http.Request) bool {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`<html>200 from a proxy</html>`))
		return true
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	cl, err := kube.NewCluster(&rest.Config{Host: srv.URL}, "llm")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cl.RequestTimeout = 1500 * time.Millisecond
	_, err = (&kube.Applier{Cluster: cl}).Apply(context.Background(), chatRef(), 4)
	if err == nil || kube.Reason(err) != "bad_data" {
		t.Fatalf("err %v (reason %s), want bad_data", err, kube.Reason(err))
	}
	if msg := err.Error(); strings.Contains(msg, "no decision") || !strings.Contains(msg, "whether it was written is unknown") {
		t.Errorf("err %q; want it to say whether it was written is unknown, not \"no decision\"", msg)
	}
}
