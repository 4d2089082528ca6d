//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
