package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestOutputDirNotWritable: every output flag whose file is written after
// the work (a plot, a calibration, decide's state, tune's shard results,
// synth-week's OpenMetrics copy) is checked for a directory a file can be
// created in before the work starts: exit 1 naming the flag, the path and
// the directory, and what to do, at once (the run used to go to its end,
// then fail to write with "open /proc/.x.svg.NNN.tmp: no such file or
// directory"). /proc takes no new file at its top on Linux, root included.
func TestOutputDirNotWritable(t *testing.T) {
	if fi, err := os.Stat("/proc/self"); err != nil || !fi.IsDir() {
		t.Skip("no /proc for a directory no file can be created in")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "t.yaml")
	if err := os.WriteFile(cfg, []byte(`prometheus: {url: "http://127.0.0.1:1"}
targets:
- {name: chat, server: vllm, selector: '{namespace="llm"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8, replica: {gpu: h100-sxm, model: llama-3-8b}, tune: {mode: shadow}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	const todo = ": directory /proc: not writable: "
	const hint = "; choose a directory you can write to (checked before the run, whose result would be lost at its end)"
	for _, c := range []struct {
		args []string
		want string // the message up to the system's reason
	}{
		{[]string{"simulate", "--trace", "synthetic:poisson,rate=2,duration=5m", "--plot", "/proc/x.svg"}, "--plot /proc/x.svg"},
		{[]string{"tune", "--trace", "synthetic:poisson,rate=2,duration=5m", "--plot", "/proc/x.png"}, "--plot /proc/x.png"},
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "--plot", "/proc/x.svg"}, "--plot /proc/x.svg"},
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "--calibrate", "/proc/c.json"}, "--calibrate /proc/c.json"},
		{[]string{"load", "http://127.0.0.1:1", "--concurrency", "1,2", "--calibrate", "/proc/c.json"}, "--calibrate /proc/c.json"},
		{[]string{"decide", "--queue", "10", "--target", "8", "--state", "/proc/s.json"}, "--state /proc/s.json"},
		{[]string{"tune", "--config", cfg, "--shard", "0/1", "--out", "/proc"}, "--out /proc"},
		{[]string{"synth-week", "--data", filepath.Join(dir, "week"), "--openmetrics", "/proc/w.om"}, "--openmetrics /proc/w.om"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out, errb bytes.Buffer
		start := time.Now()
		code := run(ctx, c.args, nil, &out, &errb)
		cancel()
		msg := errb.String()
		if code != exitRuntime || !strings.HasPrefix(msg, "infscale: "+c.want+todo) || !strings.HasSuffix(strings.TrimSpace(msg), hint) {
			t.Errorf("%v: exit %d %q; want exit 1 with %q REASON %q", c.args, code, msg, c.want+todo, hint)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%v: refused after %s, want before the work", c.args, d)
		}
		if out.Len() > 0 {
			t.Errorf("%v: printed %q before refusing", c.args, out.String())
		}
	}
}

// TestOutputNotRegular: an output file that exists and is not a regular
// file (a named pipe here; /dev/stdout, a device, likewise) is refused
// before the work, exit 2 naming the flag and the kind, and left as it
// is: the atomic write renamed a file over it (as root, /dev/full became
// a regular file).
func TestOutputNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	plot := filepath.Join(dir, "out.svg")
	if err := syscall.Mkfifo(plot, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"load", "http://127.0.0.1:1", "--concurrency", "1,2", "--calibrate", fifo}, "--calibrate " + fifo},
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "--calibrate", fifo}, "--calibrate " + fifo},
		{[]string{"simulate", "--trace", "synthetic:poisson,rate=2,duration=5m", "--plot", plot}, "--plot " + plot},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out, errb bytes.Buffer
		code := run(ctx, c.args, nil, &out, &errb)
		cancel()
		kind := "a named pipe"
		want := "infscale: " + c.want + ": not a regular file (" + kind + "); give the path of a file to write"
		if code != exitInvalid || strings.TrimSpace(errb.String()) != want || out.Len() > 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out.String(), errb.String(), want)
		}
	}
	for _, p := range []string{fifo, plot} {
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("%s: %v, %v; want the named pipe left as it was", p, fi, err)
		}
	}
}

// TestOutputDirNotWritableThroughSymlink: an output path that is a
// symlink is written through (its file replaced, the link kept), so the
// directory checked before the work is its file's, not the link's: a link
// in a writable directory to a file in /proc is refused at once, naming
// /proc (the check passed on the link's directory, the run went to its
// end and failed to write "open /proc/.s.json.NNN.tmp").
func TestOutputDirNotWritableThroughSymlink(t *testing.T) {
	if fi, err := os.Stat("/proc/self"); err != nil || !fi.IsDir() {
		t.Skip("no /proc for a directory no file can be created in")
	}
	dir := t.TempDir()
	for _, c := range []struct {
		flag, target string
		args         []string
	}{
		{"state", "/proc/s.json", []string{"decide", "--queue", "10", "--target", "8"}},
		{"plot", "/proc/x.svg", []string{"simulate", "--trace", "synthetic:poisson,rate=2,duration=5m"}},
	} {
		link := filepath.Join(dir, c.flag+"-link"+filepath.Ext(c.target))
		if err := os.Symlink(c.target, link); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := run(context.Background(), append(c.args, "--"+c.flag, link), nil, &out, &errb)
		want := "infscale: --" + c.flag + " " + link + ": directory /proc: not writable: "
		if code != exitRuntime || !strings.HasPrefix(errb.String(), want) || out.Len() > 0 {
			t.Errorf("%v --%s %s: exit %d, stdout %q, stderr %q; want exit 1, %q", c.args, c.flag, link, code, out.String(), errb.String(), want)
		}
	}
}

// TestShardResultNotRegular: tune --shard's result files are checked
// before the tuning as every output file is: a target's NAME.json that is
// a directory or a named pipe (in --out or in its tune.dir) is refused
// at once, exit 2 naming the target, the path and the kind, before any
// query to Prometheus; a NAME.json linking to a file in /proc is refused
// naming /proc, exit 1. Before, the target was tuned (minutes on a week)
// and then failed to write, "chat: failed: .../chat.json: not a regular
// file (a directory)", exit 1.
func TestShardResultNotRegular(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Retry-After", "0")
		http.Error(w, `{"status":"error","errorType":"unavailable","error":"down"}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	out, tdir := t.TempDir(), t.TempDir()
	cfg := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(cfg, []byte(`prometheus: {url: "`+srv.URL+`"}
targets:
- {name: chat, server: vllm, selector: '{namespace="llm"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8, replica: {gpu: h100-sxm, model: llama-3-8b}, tune: {mode: shadow, dir: `+tdir+`}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(out, "chat.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(tdir, "chat.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--out", out}, exitInvalid, "infscale: target chat: " + filepath.Join(out, "chat.json") + ": not a regular file (a directory); give the path of a file to write"},
		{nil, exitInvalid, "infscale: target chat: " + fifo + ": not a regular file (a named pipe); give the path of a file to write"},
	} {
		var stdout, errb bytes.Buffer
		code := run(context.Background(), append([]string{"tune", "--config", cfg, "--shard", "0/1", "-q"}, c.args...), nil, &stdout, &errb)
		// The last line (with --out, a warning that serve reads tune.dir comes first).
		if code != c.code || !strings.HasSuffix("\n"+strings.TrimSpace(errb.String()), "\n"+c.want) || stdout.Len() > 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, stdout.String(), errb.String(), c.code, c.want)
		}
	}
	if fi, err := os.Stat("/proc/self"); err == nil && fi.IsDir() {
		link := filepath.Join(out, "chat.json")
		if err := os.Remove(link); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/proc/chat.json", link); err != nil {
			t.Fatal(err)
		}
		var stdout, errb bytes.Buffer
		code := run(context.Background(), []string{"tune", "--config", cfg, "--shard", "0/1", "-q", "--out", out}, nil, &stdout, &errb)
		want := "infscale: target chat: " + link + " is a link to /proc/chat.json: directory /proc: not writable: "
		if code != exitRuntime || !strings.Contains(errb.String(), "\n"+want) || stdout.Len() > 0 {
			t.Errorf("link into /proc: exit %d, stdout %q, stderr %q; want exit 1 and %q...", code, stdout.String(), errb.String(), want)
		}
	}
	if n := asked.Load(); n > 0 {
		t.Errorf("Prometheus asked %d times: want the result files refused before any query", n)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("%s: %v, %v; want the named pipe left as it was", fifo, fi, err)
	}
}
