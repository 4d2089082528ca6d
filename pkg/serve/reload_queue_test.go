package serve

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/pkg/config"
)

// TestReloadDuringReloadCoalesced: the first SIGHUP's reload reads the
// file (3 targets) and then hangs, as a new target's restore does against
// a hanging Prometheus. Meanwhile the file gains a fourth target and three
// more SIGHUPs arrive: the first is logged as queued, the next two as
// coalesced with it (requests 2, then 3). Once the first reload ends, one
// more reload runs, not three: the file is read twice in all, the
// reloads count 2 successes, and the last config (4 targets) is the one
// running.
func TestReloadDuringReloadCoalesced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "serve.yaml")
	write := func(extra string) {
		if err := os.WriteFile(path, []byte("interval: 1s\n"+loopConfig+extra), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	third := "- {name: third, scrape: ['http://127.0.0.1:3/metrics'], metrics: [{type: queue, target: 24}], max: 8}\n"
	fourth := "- {name: fourth, scrape: ['http://127.0.0.1:4/metrics'], metrics: [{type: queue, target: 24}], max: 8}\n"
	write(third)

	var loads atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	loadFile := func(p string) (*config.File, error) {
		c, err := config.Load(p)
		if loads.Add(1) == 1 {
			close(entered)
			<-release
		}
		return c, err
	}
	src := &fakeSource{}
	for _, n := range []string{"chat", "other", "third", "fourth"} {
		src.set(n, load(1, 0, 0))
	}
	var logs buftest.Buffer
	reload := make(chan os.Signal, 1)
	base, cancel, done := startRun(t, cfg, Options{ConfigPath: path, Source: src, Version: "test",
		Log: slog.New(slog.NewTextHandler(&logs, nil)), Reload: reload, load: loadFile})

	reload <- os.Interrupt
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first reload never read the file")
	}
	write(third + fourth)
	for range 3 {
		reload <- os.Interrupt
	}
	waitFor(t, "the second and third SIGHUP logged", func() bool {
		return strings.Contains(logs.String(), "requests=3")
	})
	out := logs.String()
	if n := strings.Count(out, "queued; it runs once that one finishes"); n != 1 {
		t.Errorf("%d queued lines, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "coalesced with the queued one"); n != 2 {
		t.Errorf("%d coalesced lines, want 2:\n%s", n, out)
	}
	close(release)
	waitFor(t, "two reloads counted", func() bool {
		_, body := get(t, base+"/metrics")
		return strings.Contains(body, `infscale_config_reloads_total{result="success"} 2`)
	})
	waitFor(t, "fourth decided", func() bool {
		_, body := get(t, base+"/metrics")
		return strings.Contains(body, `infscale_desired_replicas{target="fourth"}`)
	})
	time.Sleep(300 * time.Millisecond) // a third reload, were one run, would have read the file by now
	if n := loads.Load(); n != 2 {
		t.Errorf("the file was read %d times, want 2 (the four SIGHUPs coalesced into two reloads)", n)
	}
	out = logs.String()
	if !strings.Contains(out, "running the config reload requested during the previous one") || !strings.Contains(out, "targets=4") {
		t.Errorf("no log of the queued reload applying 4 targets:\n%s", out)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestStopDuringHangingReload: a reload whose file read never returns
// (it ignores the context) does not hold a stop: Run returns within
// ShutdownTimeout of the cancel (one shared deadline for the cycle and the
// reload; 5 s, bounded here at 8 s), logging that it stopped without the
// reload.
func TestStopDuringHangingReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(path, []byte("interval: 1s\n"+loopConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	entered, never := make(chan struct{}), make(chan struct{})
	defer close(never)
	loadFile := func(string) (*config.File, error) {
		close(entered)
		<-never
		return nil, context.Canceled
	}
	src := &fakeSource{}
	src.set("chat", load(1, 0, 0))
	src.set("other", load(1, 0, 0))
	var logs buftest.Buffer
	reload := make(chan os.Signal, 1)
	_, cancel, done := startRun(t, cfg, Options{ConfigPath: path, Source: src, Version: "test",
		Log: slog.New(slog.NewTextHandler(&logs, nil)), Reload: reload, load: loadFile})
	reload <- os.Interrupt
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the reload never read the file")
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(ShutdownTimeout + 3*time.Second):
		t.Fatalf("Run did not stop within %v of the cancel while a reload hung", ShutdownTimeout+3*time.Second)
	}
	if d := time.Since(start); d < ShutdownTimeout-time.Second {
		t.Errorf("stopped after %v: the hanging reload was not waited for up to the shutdown timeout", d)
	}
	if !strings.Contains(logs.String(), "the running config reload did not end within the shutdown timeout") {
		t.Errorf("no log of stopping without the reload:\n%s", logs.String())
	}
}
