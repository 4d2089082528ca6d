package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestActivatorIgnoresHangup: a SIGHUP (a `killall -HUP infscale` meant
// for serve's reload, or passed on by the crash monitor) does not end the
// activator, which has no configuration to reload. Go's default ended it
// with exit 129. The child (signalChild) is this test binary running
// the activator under the commands' signal context; the parent sends it
// SIGHUP, reads the one INFO line saying it was ignored, finds /healthz
// still answering "ok", then stops it with SIGTERM: a graceful exit 0.
func TestActivatorIgnoresHangup(t *testing.T) {
	c := signalChild(t, func(ctx context.Context) int {
		return run(ctx, []string{"activator", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1"}, os.Stdin, os.Stdout, os.Stderr)
	})
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stderr ended before %s: the activator ended %v", what, c.Wait())
			}
			return l
		case <-time.After(10 * time.Second):
			t.Fatalf("no line for 10s waiting for %s", what)
		}
		return ""
	}
	// slog's text format: level=INFO msg="infscale activator on http://127.0.0.1:PORT" listen=127.0.0.1:PORT ...
	start := next("the start line")
	_, listen, _ := strings.Cut(start, " listen=")
	listen, _, _ = strings.Cut(listen, " ")
	if !strings.Contains(start, `level=INFO msg="infscale activator on http://`+listen+`"`) || listen == "" {
		t.Fatalf("first line %q, want the start line with listen=", start)
	}
	if err := c.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	const want = `level=INFO msg="SIGHUP ignored: the activator has no configuration to reload (it takes flags); restart it to change them"`
	got := next("the SIGHUP line")
	for !strings.Contains(got, "SIGHUP") { // the probe's lines meanwhile
		got = next("the SIGHUP line")
	}
	if _, line, _ := strings.Cut(got, " "); line != want { // after time=...
		t.Fatalf("after SIGHUP: %q, want %q", line, want)
	}
	resp, err := http.Get("http://" + listen + "/healthz")
	if err != nil {
		t.Fatalf("after SIGHUP /healthz: %v (the activator ended?)", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok\n" {
		t.Fatalf("after SIGHUP /healthz: %d %q, want 200 \"ok\\n\"", resp.StatusCode, body)
	}
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	n := 1
	for l := range lines { // the probe's and the drain's lines, then EOF
		if strings.Contains(l, "SIGHUP") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d lines about SIGHUP for one SIGHUP, want 1", n)
	}
	err = c.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("activator ended %v after SIGHUP then SIGTERM; want exit 0", err)
	} else if err != nil {
		t.Fatal(err)
	}
}
