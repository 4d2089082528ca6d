package serve

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

// serve with a scaleTargetRef against an API server that accepts
// connections and never answers: each cycle's read of the scale ends with
// the cycle (interval 1s) as reason timeout, counted, and the stop is
// prompt (Run returns nil well within ShutdownTimeout).
func TestServeSilentAPIServer(t *testing.T) {
	cl, err := kube.NewCluster(&rest.Config{Host: kubefake.SilentServer(t)}, "llm")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(`interval: 1s
targets:
- name: chat
  namespace: llm
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  scrape: {port: 8000}
  metrics: [{type: queue, target: 24}]
  max: 4
`), "kcfg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Options{Listen: "127.0.0.1:0", Version: "test", OnListen: func(a string) { addr <- a },
			Cluster: func() (*kube.Cluster, error) { return cl, nil }})
	}()
	base := "http://" + <-addr
	waitFor(t, "a timeout read error", func() bool {
		_, body := get(t, base+"/metrics")
		return strings.Contains(body, `infscale_query_errors_total{reason="timeout",target="chat"}`)
	})
	if code, _ := get(t, base+"/readyz"); code != 503 {
		t.Errorf("/readyz %d, want 503 (nothing decided)", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	case <-time.After(ShutdownTimeout):
		t.Fatal("Run did not stop within ShutdownTimeout")
	}
}
