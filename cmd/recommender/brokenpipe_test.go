package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeSurvivesBrokenStderr: serve's log pipe losing its reader (a log
// shipper or journald restarting) does not kill it. Go's default for a
// write to fd 2 on a broken pipe is to die of SIGPIPE (exit 141, no
// graceful shutdown: no state written, the Lease not released); serve and
// the activator ignore SIGPIPE, so the write fails and serving goes on.
// The child is this test binary running serve for 3 s; the parent reads
// its first log line and closes the pipe, so the lines after it (the
// scrape failure, the shutdown) meet a pipe with no reader.
func TestServeSurvivesBrokenStderr(t *testing.T) {
	for _, cmd := range [][]string{
		{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug"},
		{"activator", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1"},
	} {
		t.Run(cmd[0], func(t *testing.T) { brokenStderr(t, cmd) })
	}
}

func brokenStderr(t *testing.T, args []string) {
	if a := os.Getenv("INFSCALE_BROKEN_STDERR_CHILD"); a != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		os.Exit(run(ctx, strings.Split(a, "\x1f"), os.Stdin, os.Stdout, os.Stderr))
	}
	args = append([]string(nil), args...)
	if args[0] == "serve" {
		cfg := filepath.Join(t.TempDir(), "serve.yaml")
		yaml := "pollingInterval: 1s\ntargets:\n- name: chat\n  scrape: [\"http://127.0.0.1:1/metrics\"]\n  metrics: [{type: queue, target: 24}]\n  maxReplicaCount: 4\n"
		if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", cfg)
	}
	c := exec.Command(os.Args[0], "-test.run=^TestServeSurvivesBrokenStderr$/^"+args[0]+"$")
	c.Env = append(os.Environ(), "INFSCALE_BROKEN_STDERR_CHILD="+strings.Join(args, "\x1f"))
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatalf("no first log line: %v", err)
	}
	stderr.Close() // the reader is gone
	err = c.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("%s ended %v after its log pipe lost its reader (first line %q); want a graceful exit 0", args[0], err, line)
	} else if err != nil {
		t.Fatal(err)
	}
}

// TestCheckConfigBrokenStdoutQuiet: serve --check-config is a one-shot
// command, and ends as the others do on a stdout whose reader is gone
// (`infscale serve --check-config -c x | head -1`): of SIGPIPE, quietly.
// SIGPIPE was ignored before the check, so it printed "write /dev/stdout:
// broken pipe" and exited 1.
func TestCheckConfigBrokenStdoutQuiet(t *testing.T) {
	if a := os.Getenv("INFSCALE_CHECK_CONFIG_CHILD"); a != "" {
		os.Exit(run(context.Background(), []string{"serve", "--check-config", "--config", a}, os.Stdin, os.Stdout, os.Stderr))
	}
	cfg := filepath.Join(t.TempDir(), "serve.yaml")
	yaml := "targets:\n- name: chat\n  scrape: [\"http://127.0.0.1:1/metrics\"]\n  metrics: [{type: queue, target: 24}]\n  maxReplicaCount: 4\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first line
	c := exec.Command(os.Args[0], "-test.run=^TestCheckConfigBrokenStdoutQuiet$")
	c.Env = append(os.Environ(), "INFSCALE_CHECK_CONFIG_CHILD="+cfg)
	c.Stdout = w
	var errb strings.Builder
	c.Stderr = &errb
	err = c.Run()
	w.Close()
	ws, ok := c.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGPIPE || strings.Contains(errb.String(), "broken pipe") {
		t.Errorf("serve --check-config on a stdout with no reader: %v, stderr %q; want ended by SIGPIPE, nothing said", err, errb.String())
	}
}
