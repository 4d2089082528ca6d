//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/appendlog"
)

// TestServeAuditLogNotAFile: --audit-log on a named pipe nobody reads
// used to block serve in its open before anything was served, for ever
// (SIGTERM included); it is refused at once, exit 1, nothing served. A
// directory is invalid input, exit 2.
func TestServeAuditLogNotAFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	os.WriteFile(cfg, []byte("interval: 1s\ntargets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: queue, target: 24}]\n  max: 2\n"), 0o644)
	fifo := filepath.Join(dir, "audit.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{fifo, exitRuntime, "--audit-log " + fifo + ": a named pipe with no reader (opening it would wait for one, and the service with it); start its reader first, or give a regular file"},
		{dir, exitInvalid, "--audit-log " + dir + ": is a directory; give a file to append to, e.g. " + dir + "/audit.jsonl"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var out, errb bytes.Buffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--audit-log", tc.path}, nil, &out, &errb)
		}()
		select {
		case code := <-done:
			if code != tc.code || !strings.Contains(errb.String(), tc.want) || strings.Contains(errb.String(), "serving") {
				t.Errorf("--audit-log %s: exit %d, stderr %q; want exit %d with %q, nothing served", tc.path, code, errb.String(), tc.code, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("--audit-log %s: serve still starting after 5s", tc.path)
		}
		cancel()
	}
}

// TestServeAuditLogSecondWriterRefused: serve given an --audit-log that
// another serve writes (here an appendlog.Open in this process, which
// holds the same lock as a serve's), rotated or not, exits 1 at start
// naming the file, nothing served, and the other's lines are left alone.
// Before: both appended to it, their lines interleaved, and two rotating
// it renamed each other's file.
func TestServeAuditLogSecondWriterRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	os.WriteFile(cfg, []byte("interval: 1s\ntargets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: queue, target: 24}]\n  max: 2\n"), 0o644)
	audit := filepath.Join(dir, "audit.jsonl")
	other, err := appendlog.Open(audit, appendlog.Rotation{MaxSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.Write([]byte("{\"target\":\"other\"}\n"))
	for _, rotate := range [][]string{nil, {"--audit-log-maxsize", "100"}} {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--audit-log", audit}, rotate...), nil, &out, &errb)
		want := "--audit-log " + audit + ": another process writes it (it holds the file's lock: another serve given the same --audit-log?); give each serve its own file, or stop the other first"
		if code != exitRuntime || !strings.Contains(errb.String(), want) || strings.Contains(errb.String(), "serving") {
			t.Errorf("serve %v: exit %d, stderr %q; want exit 1 with %q, nothing served", rotate, code, errb.String(), want)
		}
	}
	if b, _ := os.ReadFile(audit); string(b) != "{\"target\":\"other\"}\n" {
		t.Errorf("the other writer's file: %q, want its line alone", b)
	}
}

// TestServeAuditLogRaceLeavesOthersFile: two serves starting at once on
// an --audit-log that does not exist yet: the other creates it (and holds
// its lock) after this one found it absent and before this one opens it.
// This one exits 1 (another process writes it) and leaves the file in
// place, empty as the other made it. Before: taking the file for one its
// own failed start had made, it removed it, and the other serve's lines
// went to a file no longer in the directory (its lock with them: a third
// serve was let in).
func TestServeAuditLogRaceLeavesOthersFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	os.WriteFile(cfg, []byte("interval: 1s\ntargets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: queue, target: 24}]\n  max: 2\n"), 0o644)
	for _, rotate := range [][]string{nil, {"--audit-log-maxsize", "100"}} {
		audit := filepath.Join(dir, fmt.Sprintf("audit%d.jsonl", len(rotate)))
		var other io.WriteCloser
		beforeAuditOpen = func() {
			var err error
			if other, err = appendlog.Open(audit, appendlog.Rotation{}); err != nil {
				t.Fatal(err)
			}
		}
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--audit-log", audit}, rotate...), nil, &out, &errb)
		beforeAuditOpen = nil
		if code != exitRuntime || !strings.Contains(errb.String(), "another process writes it") {
			t.Errorf("serve %v: exit %d, stderr %q; want exit 1, another process writes it", rotate, code, errb.String())
		}
		if _, err := os.Stat(audit); err != nil {
			t.Errorf("serve %v: the other serve's file: %v, want it left in place", rotate, err)
		}
		if other != nil {
			other.Close()
		}
	}
}
