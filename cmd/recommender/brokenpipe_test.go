package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
