package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/crashlog"
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestCyclePanicOneRecord$")
	cmd.Env = append(os.Environ(), "INFSCALE_SERVE_PANIC_CHILD=1")
	var stderr, stdout bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stdout
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("serve: %v, want exit status 2; stderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a line of stderr is not JSON: %v\n%s", err, line)
		}
		recs = append(recs, rec)
	}
	last := recs[len(recs)-1]
	if last["level"] != "ERROR" || last["msg"] != "panic" || last["panic"] != "a bug in the cycle" || last["exit_code"] != 2.0 {
		t.Errorf("last record %v, want level ERROR, msg panic, panic \"a bug in the cycle\", exit_code 2", last)
	}
	if s, _ := last["stack"].(string); !strings.Contains(s, "serve.panicSource.Read") || !strings.Contains(s, "(*Loop).Cycle") {
		t.Errorf("stack does not name the panicking read and the cycle:\n%v", last["stack"])
	}
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestReadGoroutinePanicOneRecord$")
	cmd.Env = append(os.Environ(), "INFSCALE_SERVE_READ_PANIC_CHILD=1")
	var stderr, stdout bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stdout
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("read: %v, want exit status 2; stderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil || len(lines) != 1 {
		t.Fatalf("stderr: %d lines, the last %v; want one JSON record:\n%s", len(lines), err, stderr.String())
	}
	if rec["level"] != "ERROR" || rec["msg"] != "panic" || rec["panic"] != "a bug in the cycle" || rec["exit_code"] != 2.0 {
		t.Errorf("record %v, want level ERROR, msg panic, panic \"a bug in the cycle\", exit_code 2", rec)
	}
	if s, _ := rec["stack"].(string); !strings.Contains(s, "serve.panicSource.Read") {
		t.Errorf("stack does not name the panicking read:\n%v", rec["stack"])
	}
}
