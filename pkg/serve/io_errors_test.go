package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
)

// TestNewStoreUnwritable: /proc exists but no file can be created in it,
// even by root: NewStore fails at once naming the directory (serve exits
// 1), rather than warning every cycle.
func TestNewStoreUnwritable(t *testing.T) {
	if fi, err := os.Stat("/proc"); err != nil || !fi.IsDir() {
		t.Skip("no /proc on this system")
	}
	_, err := NewStore("/proc")
	if err == nil || !strings.Contains(err.Error(), "state dir /proc is not writable") {
		t.Errorf("NewStore(/proc): %v, want not writable", err)
	}
	if _, err := NewStore(t.TempDir()); err != nil {
		t.Errorf("a temp dir: %v", err)
	}
	// A file where a directory of the path should be: named, with the
	// flag to change (it was "state dir: mkdir F/x: not a directory").
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = NewStore(filepath.Join(file, "x"))
	want := "state dir " + file + "/x cannot be created: " + file + ": not a directory; give --state-dir a directory serve can create and write in (one state file per target)"
	if err == nil || err.Error() != want {
		t.Errorf("under a file: %v\nwant %s", err, want)
	}
	_, err = NewStore("/proc")
	if want := "state dir /proc is not writable: no such file or directory; give --state-dir a directory"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("NewStore(/proc): %v\nwant %s...", err, want)
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), ".infscale-write-check.*")); len(left) > 0 {
		t.Errorf("write check left %v", left)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write([]byte) (int, error) {
	f.n++
	return 0, errors.New("no space left on device")
}

// loggedLoop is newTestLoop with its log captured.
func loggedLoop(t *testing.T, src Source, store *Store, audit *failWriter) (*Loop, *Metrics, *bytes.Buffer) {
	t.Helper()
	cfg, err := config.Parse([]byte(loopConfig), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var logb bytes.Buffer
	m := NewMetrics(prometheus.NewRegistry(), "test")
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Store: store, Now: func() time.Time { return now },
		Log: slog.New(slog.NewTextHandler(&logb, nil))})
	if audit != nil {
		l.audit = audit
	}
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return l, m, &logb
}

// TestAuditWriteErrorCounted: the audit log fails (disk full): each failed
// line is counted under reason audit_write (2 cycles x 1 decision of chat
// = 2), and logged once (same minute: the second is rate-limited).
func TestAuditWriteErrorCounted(t *testing.T) {
	src := &fakeSource{}
	src.set("chat", load(1, 50, 10))
	fw := &failWriter{}
	l, m, logb := loggedLoop(t, src, nil, fw)
	l.Cycle(t.Context())
	l.Cycle(t.Context())
	if fw.n != 2 {
		t.Fatalf("%d audit writes, want 2", fw.n)
	}
	if got := queryErrors(m, "chat", "audit_write"); got != 2 {
		t.Errorf("audit_write count %v, want 2", got)
	}
	if n := strings.Count(logb.String(), `msg="audit log write failed"`); n != 1 {
		t.Errorf("%d audit failure log lines, want 1:\n%s", n, logb.String())
	}
}

// TestStateWriteErrorWording: the state dir vanishes after startup: the
// save fails, is logged as a state write (not a signal read) and counted
// under reason state_write (1 decision of chat = 1).
func TestStateWriteErrorWording(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	store, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	src.set("chat", load(1, 50, 10))
	l, m, logb := loggedLoop(t, src, store, nil)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	l.Cycle(t.Context())
	if got := queryErrors(m, "chat", "state_write"); got != 1 {
		t.Errorf("state_write count %v, want 1", got)
	}
	if !strings.Contains(logb.String(), `msg="state write failed"`) || strings.Contains(logb.String(), "signal read failed") {
		t.Errorf("log:\n%s", logb.String())
	}
}

// TestObservedNullInOutage: chat decides 3 on 1 replica (ceil(60/24) = 3),
// then every read fails: the held record's observed replicas are unknown,
// JSON null, never -1.
func TestObservedNullInOutage(t *testing.T) {
	src := &fakeSource{}
	src.set("chat", load(1, 50, 10))
	l, _, _ := loggedLoop(t, src, nil, nil)
	l.Cycle(t.Context())
	if r := lastRecord(l, "chat"); r.Observed == nil || *r.Observed != 1 {
		t.Fatalf("observed before the outage: %v, want 1", r.Observed)
	}
	src.set("chat", Reading{Obs: unknownObservation()})
	l.Cycle(t.Context())
	r := lastRecord(l, "chat")
	if !r.Held || r.Observed != nil {
		t.Errorf("outage record: held %v observed %v, want held and nil", r.Held, r.Observed)
	}
	b, _ := json.Marshal(r)
	if !strings.Contains(string(b), `"observed":null`) {
		t.Errorf("JSON: %s", b)
	}
}

// TestHealthzDuringRebuild: Prometheus hangs; the startup rebuild waits
// on it (up to the 30 s timeout here), but /healthz answers at once and
// /readyz is 503 meanwhile.
func TestHealthzDuringRebuild(t *testing.T) {
	release := make(chan struct{})
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "gone", http.StatusServiceUnavailable)
	}))
	defer prom.Close()
	yaml := "prometheus:\n  url: " + prom.URL + "\n  timeout: 30s\ninterval: 15s\ntargets:\n- name: chat\n  server: vllm\n  selector: '{pod=~\"chat-.*\"}'\n  metrics: [{type: queue, target: 24}]\n  max: 4\n"
	cfg, err := config.Parse([]byte(yaml), "prom.yaml")
	if err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	ctx, cancel := contextWithCancel(t)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Options{Listen: "127.0.0.1:0", Version: "test", OnListen: func(a string) { addr <- a }})
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-time.After(5 * time.Second):
		t.Fatal("HTTP not listening 5 s into a 30 s rebuild")
	}
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz %d during the rebuild, want 200", code)
	}
	if code, _ := get(t, base+"/readyz"); code != 503 {
		t.Errorf("/readyz %d during the rebuild, want 503", code)
	}
	close(release) // Prometheus answers 503: the rebuild fails, the target starts fresh
	cancel()
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		t.Fatal("Run did not stop")
	}
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
