//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveConfig writes a one-target embedded config scraping url.
func serveConfig(t *testing.T, dir, url string) string {
	t.Helper()
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "interval: 1s\ntargets:\n- name: chat\n  scrape: [%s]\n  metrics: [{type: queue, target: 24}]\n  max: 2\n", url), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestServeAuditLogRotationFlagsRefused: a bad rotation value, a rotation
// flag that would be ignored, and rotation of what is not a regular file
// (a named pipe nobody reads: refused at once, not waiting; a device;
// /dev/stdout, a symbolic link) exit 2 naming the flag, before anything is
// served or created.
func TestServeAuditLogRotationFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := serveConfig(t, dir, "http://127.0.0.1:1/metrics")
	audit := filepath.Join(dir, "audit.jsonl")
	fifo := filepath.Join(dir, "audit.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(audit, link); err != nil {
		t.Skipf("symlink: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--audit-log", audit, "--audit-log-maxsize=-1"}, "--audit-log-maxsize -1: can't be a negative number: want 0 or more megabytes, e.g. 100 (0: no rotation)"},
		{[]string{"--audit-log", audit, "--audit-log-maxsize", "-1"}, `--audit-log-maxsize: expected int value but got "-1"`},
		{[]string{"--audit-log", audit, "--audit-log-maxsize", "1", "--audit-log-maxbackup=-1"}, "--audit-log-maxbackup -1: can't be a negative number: want 0 or more files, e.g. 10 (0: keep all)"},
		{[]string{"--audit-log", audit, "--audit-log-maxsize", "1", "--audit-log-maxage=-7"}, "--audit-log-maxage -7: can't be a negative number: want 0 or more days, e.g. 30 (0: no limit)"},
		{[]string{"--audit-log", audit, "--audit-log-maxsize", "100MB"}, `--audit-log-maxsize: "100MB" is not a whole number`},
		{[]string{"--audit-log", audit, "--audit-log-maxsize", "1.5"}, `--audit-log-maxsize: "1.5" is not a whole number`},
		{[]string{"--audit-log", audit, "--audit-log-maxsize", "1", "--audit-log-maxbackup", "ten"}, `--audit-log-maxbackup: "ten" is not a whole number`},
		// Past lumberjack's int64 sums: 2^63-1 bytes is 2^43-1 MiB
		// (8,796,093,022,207), 2^63-1 ns is 106,751.99 days. Over them
		// every line was refused ("(-8592186044416 MiB)"), every rotated
		// file removed.
		{[]string{"--audit-log", audit, "--audit-log-maxsize", "8796093022208"}, "--audit-log-maxsize 8796093022208: want at most 8796093022207 (8 EiB: "},
		{[]string{"--audit-log", audit, "--audit-log-maxsize", "1", "--audit-log-maxage", "106752"}, "--audit-log-maxage 106752: want at most 106751 (292 years: more overflows the age cutoff, and every rotated file would be removed; 0 keeps them with no limit)"},
		{[]string{"--audit-log-maxsize", "100"}, "--audit-log-maxsize needs --audit-log (without it the flag would be ignored)"},
		{[]string{"--audit-log", audit, "--audit-log-maxbackup", "5"}, "--audit-log-maxbackup needs --audit-log-maxsize above 0"},
		{[]string{"--audit-log", audit, "--audit-log-maxsize", "0", "--audit-log-maxage", "5"}, "--audit-log-maxage needs --audit-log-maxsize above 0"},
		{[]string{"--audit-log", audit, "--audit-log-compress"}, "--audit-log-compress needs --audit-log-maxsize above 0"},
		{[]string{"--audit-log", fifo, "--audit-log-maxsize", "1"}, "--audit-log-maxsize: --audit-log " + fifo + ": not a regular file (a named pipe): rotation renames the file and makes a new one, which only a regular file allows; rotate it at its reader, or give a regular file"},
		{[]string{"--audit-log", os.DevNull, "--audit-log-maxsize", "1"}, "--audit-log-maxsize: --audit-log " + os.DevNull + ": not a regular file (a device)"},
		{[]string{"--audit-log", link, "--audit-log-maxsize", "1"}, "--audit-log-maxsize: --audit-log " + link + ": a symbolic link (to " + audit + "): rotation would rename the link, not its file; give the file's own path (stdout or a pipe: rotate at its reader)"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var out, errb bytes.Buffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, append([]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0"}, tc.args...), nil, &out, &errb)
		}()
		select {
		case code := <-done:
			if code != exitInvalid || !strings.Contains(errb.String(), tc.want) || strings.Contains(errb.String(), "serving") {
				t.Errorf("%q: exit %d, stderr %q; want exit 2 with %q, nothing served", tc.args, code, errb.String(), tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%q: serve still starting after 5s", tc.args)
		}
		cancel()
	}
	if _, err := os.Lstat(audit); err == nil {
		t.Errorf("%s created by a refused start", audit)
	}
}

// TestServeAuditLogRotates: serve's audit log holding 1 MiB less 100 bytes
// from an earlier run, --audit-log-maxsize 1: the first decision's line
// (about 2.5 KB) would take it past 1 MiB, so the old lines go to one
// backup, byte for byte, and the file begins again with whole decision
// lines.
func TestServeAuditLogRotates(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 12\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 0\n")
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := serveConfig(t, dir, srv.URL+"/metrics")
	audit := filepath.Join(dir, "audit.jsonl")
	old := bytes.Repeat([]byte(strings.Repeat("o", 99)+"\n"), (1<<20-100)/100)
	if err := os.WriteFile(audit, old, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--audit-log", audit, "--audit-log-maxsize", "1", "--audit-log-maxbackup", "3"}, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "audit-*.jsonl"))
	if len(matches) != 1 {
		t.Fatalf("backups %q, want 1", matches)
	}
	if b, _ := os.ReadFile(matches[0]); !bytes.Equal(b, old) {
		t.Errorf("the backup holds %d bytes, want the %d of the earlier run", len(b), len(old))
	}
	b, _ := os.ReadFile(audit)
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] != "" || len(lines) < 2 {
		t.Fatalf("audit log %q: want whole lines, at least one", b)
	}
	for _, l := range lines[:len(lines)-1] {
		var rec struct{ Target string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Target != "chat" {
			t.Errorf("line %.80q: %v, want a decision of chat", l, err)
		}
	}
}

// TestServeAuditLogDefaultsGiven: the rotation flags given their defaults
// (maxsize 0, maxbackup 0, maxage 0, compress false), as a template that
// passes all four with rotation off does, ask for nothing: the start goes
// on (--check-config exits 0), with or without --audit-log. A value other
// than the default still needs what it needs (TestServeAuditLogInvalid).
func TestServeAuditLogDefaultsGiven(t *testing.T) {
	dir := t.TempDir()
	cfg := serveConfig(t, dir, "http://127.0.0.1:1/metrics")
	defaults := []string{"--audit-log-maxsize=0", "--audit-log-maxbackup=0", "--audit-log-maxage=0", "--audit-log-compress=false"}
	for _, args := range [][]string{
		append([]string{"--audit-log", filepath.Join(dir, "audit.jsonl")}, defaults...),
		defaults,
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append([]string{"serve", "--check-config", "--config", cfg}, args...), nil, &out, &errb); code != exitOK {
			t.Errorf("%q: exit %d, stderr %q; want 0", args, code, errb.String())
		}
	}
}
