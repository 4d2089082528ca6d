package serve

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/internal/crashtest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

// panicSource panics in the cycle, as a bug in a read or a decision would.
type panicSource struct{}

func (panicSource) Name() string { return "scrape" }
func (panicSource) Read(context.Context, []*config.Target, time.Time) []Reading {
	panic("a bug in the cycle")
}

// TestCyclePanicOneRecord: serve logging JSON, whose cycle panics, writes
// its start line and then one JSON record for the panic (level ERROR, the
// value, the stack as one string naming the panicking function) and exits
// 2, as Go does after a panic; nothing else on stderr. Before: Go's
// plain-text trace, a dozen lines none of them JSON. The process ends, so
// no target is left undecided while serve looks alive (docs/serve.md).
func TestCyclePanicOneRecord(t *testing.T) {
	if os.Getenv("INFSCALE_SERVE_PANIC_CHILD") == "1" {
		cfg, err := config.Parse([]byte("interval: 1s\n"+loopConfig), "serve.yaml")
		if err != nil {
			t.Fatal(err)
		}
		log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
		_ = Run(context.Background(), cfg, Options{Listen: "127.0.0.1:0", Source: panicSource{}, Log: log, NoRebuild: true})
		t.Fatal("serve returned; want the process ended by the panic")
	}
	code, stderr := crashtest.Run(t, "^TestCyclePanicOneRecord$", "INFSCALE_SERVE_PANIC_CHILD=1")
	recs := crashtest.Panic(t, code, stderr, "a bug in the cycle", "serve.panicSource.Read", "(*Loop).Cycle")
	if recs[0]["msg"] != "serving" || len(recs) != 2 {
		t.Errorf("records %v, want the start line (serving) and the panic's", recs)
	}
}

// TestReadGoroutinePanicOneRecord: a panic in a goroutine a cycle's read
// starts (here the Prometheus or scrape read a KubeSource runs beside its
// scale reads), in a process whose logger is crashlog's (serve's at
// start), is one JSON record too, exit 2, naming the panicking read.
// Before: only the goroutines serve.Run started were guarded; one a read,
// a write or a restore started ended serve with Go's plain-text trace
// ("panic: a bug in the cycle [recovered, repanicked]", a dozen lines
// none of them JSON).
func TestReadGoroutinePanicOneRecord(t *testing.T) {
	if os.Getenv("INFSCALE_SERVE_READ_PANIC_CHILD") == "1" {
		crashlog.SetLogger(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
		c, _, sc := kubefake.New("llm")
		sc.Set("llm", kubefake.Deployments, "chat", 2, "app=chat")
		cfg, err := config.Parse([]byte(`
targets:
- name: chat
  namespace: llm
  scrape: [http://127.0.0.1:1/metrics]
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  metrics: [{type: queue, target: 24}]
  max: 8
`), "read.yaml")
		if err != nil {
			t.Fatal(err)
		}
		NewKubeSource(panicSource{}, c, nil).Read(context.Background(), []*config.Target{&cfg.Targets[0]}, time.Now())
		t.Fatal("the read returned; want the process ended by the panic")
	}
	code, stderr := crashtest.Run(t, "^TestReadGoroutinePanicOneRecord$", "INFSCALE_SERVE_READ_PANIC_CHILD=1")
	if recs := crashtest.Panic(t, code, stderr, "a bug in the cycle", "serve.panicSource.Read"); len(recs) != 1 {
		t.Errorf("%d records, want the panic's alone: %v", len(recs), recs)
	}
}
