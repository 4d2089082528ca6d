package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/membudget"
	"github.com/infscale/infscale/pkg/config"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startRun runs Run(cfg, o) on a free loopback port (o.Listen and
// o.OnListen are set) and returns its base URL, the cancel that stops it
// and the channel of Run's result; it fails the test when no port is
// bound within 10 s.
func startRun(t *testing.T, cfg *config.File, o Options) (base string, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	addr := make(chan string, 1)
	o.Listen, o.OnListen = "127.0.0.1:0", func(a string) { addr <- a }
	ctx, cancel := context.WithCancel(t.Context())
	res := make(chan error, 1)
	go func() { res <- Run(ctx, cfg, o) }()
	select {
	case a := <-addr:
		return "http://" + a, cancel, res
	case err := <-res:
		cancel()
		t.Fatalf("Run returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("Run bound no port within 10 s")
	}
	return "", cancel, res
}

// TestRunEndpointsReloadShutdown runs the service on a free port with a fake
// source: endpoints answer, a bad config on SIGHUP is refused and the old
// one kept, a good one is applied, and cancelling the context shuts down
// gracefully (Run returns nil).
func TestRunEndpointsReloadShutdown(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "serve.yaml")
	good := "interval: 1s\n" + loopConfig
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	src.set("chat", load(1, 50, 10)) // ceil(60/24) = 3
	src.set("other", load(1, 5, 0))
	reload := make(chan os.Signal, 1)
	base, cancel, done := startRun(t, cfg, Options{ConfigPath: path, Source: src, Version: "test", Reload: reload})
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz %d", code)
	}
	waitFor(t, "readyz", func() bool { code, _ := get(t, base+"/readyz"); return code == 200 })
	_, body := get(t, base+"/metrics")
	if !strings.Contains(body, `infscale_desired_replicas{target="chat"} 3`) {
		t.Errorf("/metrics lacks desired 3 for chat:\n%s", body)
	}
	if !strings.Contains(body, "infscale_config_last_reload_successful 1") {
		t.Error("/metrics lacks infscale_config_last_reload_successful 1 after a valid start")
	}
	_, body = get(t, base+"/debug/decisions")
	var recent map[string][]Record
	if err := json.Unmarshal([]byte(body), &recent); err != nil {
		t.Fatalf("/debug/decisions: %v\n%s", err, body)
	}
	if rs := recent["chat"]; len(rs) == 0 || rs[0].Desired != 3 || len(rs[0].Steps) == 0 {
		t.Errorf("/debug/decisions chat: %+v", rs)
	}

	// A broken config: kept the old one (both targets still decided).
	os.WriteFile(path, []byte("targets: [{name: chat, metrics: [{type: qeue}]}]\n"), 0o644)
	reload <- os.Interrupt
	time.Sleep(1500 * time.Millisecond)
	_, body = get(t, base+"/metrics")
	if !strings.Contains(body, `infscale_desired_replicas{target="other"}`) {
		t.Error("a bad reload dropped the running config")
	}
	// Issue 23 item 6: a file past the token count (3 MB of one-character
	// list items, within the 4 MiB size limit) is refused before it is
	// parsed (it drove serve to a 2.96 GB peak); the old config stays and
	// the failed reloads are counted.
	os.WriteFile(path, []byte("targets: ["+strings.Repeat("a,", 3<<20/2)+"a]\n"), 0o644)
	reload <- os.Interrupt
	waitFor(t, "failed reloads counted", func() bool {
		_, body := get(t, base+"/metrics")
		return strings.Contains(body, `infscale_config_reloads_total{result="failure"} 2`)
	})
	if _, body = get(t, base+"/metrics"); !strings.Contains(body, `infscale_desired_replicas{target="other"}`) {
		t.Error("a reload past the token count dropped the running config")
	}
	if !strings.Contains(body, "infscale_config_last_reload_successful 0") {
		t.Error("/metrics lacks infscale_config_last_reload_successful 0 after refused reloads")
	}
	// A valid config whose parse would not fit the memory left under the
	// process's limit (2,000 targets, some 33 MB by yamlbound's cost
	// model, against about 10 MiB left) is refused before it is parsed;
	// the old config stays.
	used := membudget.Now().Used
	defer debug.SetMemoryLimit(debug.SetMemoryLimit((used + 10<<20) * 4 / 3))
	var big strings.Builder
	big.WriteString("targets:\n")
	for i := range 2000 {
		fmt.Fprintf(&big, "- {name: t%d, scrape: ['http://h%d:1/metrics'], metrics: [{type: queue, target: 24}], max: 8}\n", i, i)
	}
	os.WriteFile(path, []byte(big.String()), 0o644)
	reload <- os.Interrupt
	waitFor(t, "the reload over the memory budget counted", func() bool {
		_, body := get(t, base+"/metrics")
		return strings.Contains(body, `infscale_config_reloads_total{result="failure"} 3`)
	})
	debug.SetMemoryLimit(math.MaxInt64)
	if _, body = get(t, base+"/metrics"); !strings.Contains(body, `infscale_desired_replicas{target="other"}`) {
		t.Error("a reload over the memory budget dropped the running config")
	}
	// A good config without "other": applied.
	os.WriteFile(path, []byte("interval: 1s\n"+strings.SplitN(loopConfig, "- name: other", 2)[0]), 0o644)
	reload <- os.Interrupt
	waitFor(t, "reload", func() bool {
		_, body := get(t, base+"/metrics")
		return !strings.Contains(body, `infscale_desired_replicas{target="other"}`) && strings.Contains(body, `infscale_config_reloads_total{result="success"} 1`)
	})
	if _, body = get(t, base+"/metrics"); !strings.Contains(body, "infscale_config_last_reload_successful 1") {
		t.Error("/metrics lacks infscale_config_last_reload_successful 1 after a good reload")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop")
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("server still answers after shutdown")
	}
}

// TestStopDuringRebuild: Prometheus mode, no state dir, so the startup
// rebuilds each target's state from Prometheus, which hangs; a stop 300 ms
// in ends serve at once (within 2 s), not after the 30 s prometheus.timeout.
func TestStopDuringRebuild(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm() // read the body so the server notices the client leaving
		select {
		case <-r.Context().Done():
		case <-time.After(40 * time.Second):
		}
	}))
	defer hang.Close()
	cfg, err := config.Parse([]byte("prometheus: {url: "+hang.URL+", timeout: 30s}\ntargets:\n- name: chat\n  selector: '{namespace=\"llm\"}'\n  metrics: [{type: queue, target: 24}]\n  max: 8\n"), "serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(b) }), nil))
	go func() { done <- Run(ctx, cfg, Options{Listen: "127.0.0.1:0", Version: "test", Log: log}) }()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil || time.Since(start) > 2*time.Second {
			t.Errorf("Run returned %v after %s, want nil within 2 s", err, time.Since(start))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve still running 10 s after the stop (the rebuild waits for prometheus.timeout)")
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "state not restored: stopping") {
		t.Errorf("a stop is no error:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
