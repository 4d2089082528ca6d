package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// startActivator runs `infscale activator args...` until ctx ends; its
// exit code arrives on the channel. It returns once addr accepts.
func startActivator(t *testing.T, ctx context.Context, addr string, errb io.Writer, args ...string) <-chan int {
	t.Helper()
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, append([]string{"activator"}, args...), strings.NewReader(""), io.Discard, errb)
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return code
		}
		if time.Now().After(deadline) {
			t.Fatalf("activator did not listen on %s", addr)
		}
	}
}

// TestActivatorMetricsListen: with --metrics-listen the proxy port proxies
// every path, /metrics and /healthz included (before, the activator
// answered them itself and shadowed the upstream's), and the metrics port
// serves the activator's own /metrics and /healthz and nothing else (a
// model path there is 404, never proxied).
func TestActivatorMetricsListen(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "upstream "+r.URL.Path)
	}))
	defer up.Close()
	listen, metrics := freePort(t), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb bytes.Buffer
	code := startActivator(t, ctx, listen, &errb, "--listen", listen, "--metrics-listen", metrics, "--upstream", up.URL, "--probe-interval", "50ms")
	for _, tc := range []struct{ url, want string }{
		{"http://" + listen + "/metrics", "upstream /metrics"},
		{"http://" + listen + "/healthz", "upstream /healthz"},
		{"http://" + listen + "/v1/models", "upstream /v1/models"},
		{"http://" + metrics + "/healthz", "ok\n"},
	} {
		if status, body := fetchText(t, tc.url); status != 200 || body != tc.want {
			t.Errorf("GET %s: %d %q; want 200 %q", tc.url, status, body, tc.want)
		}
	}
	if status, body := fetchText(t, "http://"+metrics+"/metrics"); status != 200 || !strings.Contains(body, "infscale_activator_held_requests 0") {
		t.Errorf("GET /metrics on --metrics-listen: %d; want 200 with infscale_activator_held_requests 0:\n%s", status, body)
	}
	if status, body := fetchText(t, "http://"+metrics+"/v1/models"); status != 404 || strings.Contains(body, "upstream") {
		t.Errorf("GET /v1/models on --metrics-listen: %d %q; want 404, not proxied", status, body)
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d: %s", c, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("activator did not exit")
	}
	if !strings.Contains(errb.String(), " metrics_listen="+metrics+"\n") {
		t.Errorf("stderr does not name the metrics address %s:\n%s", metrics, errb.String())
	}
	for _, addr := range []string{listen, metrics} {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Errorf("%s still accepting after the exit", addr)
		}
	}
}

// TestActivatorMetricsListenDrain: SIGTERM while a request is held: the
// metrics port still answers and counts it (held 1: infscale scales from
// zero on it), until the upstream comes up and it is answered; then both
// listeners close and the exit is 0.
func TestActivatorMetricsListenDrain(t *testing.T) {
	listen, metrics := freePort(t), freePort(t)
	upstream, upstreamUp := downUpstream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb bytes.Buffer
	code := startActivator(t, ctx, listen, &errb, "--listen", listen, "--metrics-listen", metrics, "--upstream", "http://"+upstream, "--probe-interval", "50ms", "--hold-timeout", "10s")
	got := make(chan string, 1)
	go func() {
		r, err := http.Get("http://" + listen + "/v1/models")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		got <- string(b)
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, body := fetchText(t, "http://"+metrics+"/metrics")
		if strings.Contains(body, "infscale_activator_held_requests 1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics port while holding one:\n%s", body)
		}
	}
	cancel() // SIGTERM
	time.Sleep(300 * time.Millisecond)
	if _, body := fetchText(t, "http://"+metrics+"/metrics"); !strings.Contains(body, "infscale_activator_held_requests 1") {
		t.Errorf("metrics port while draining with one held: want held 1:\n%s", body)
	}
	defer upstreamUp().Close()
	select {
	case body := <-got:
		if body != "models" {
			t.Errorf("held request answered %q, want the upstream's", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("held request not answered after the upstream came up")
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d: %s", c, errb.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("activator did not exit after draining")
	}
	for _, addr := range []string{listen, metrics} {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Errorf("%s still accepting after draining", addr)
		}
	}
}

// TestActivatorMetricsListenRefused: the address of --listen for
// --metrics-listen (or one binding the same port: a wildcard host) is
// refused naming both flags, exit 2; a bad address exit 2 naming the
// flag; a port another process holds exit 1 naming --metrics-listen, with
// --listen's port released (nothing half-started: it can be bound again).
func TestActivatorMetricsListenRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "127.0.0.1:8080", "--metrics-listen", "127.0.0.1:8080"}, "--metrics-listen 127.0.0.1:8080: the port of --listen 127.0.0.1:8080: give each its own"},
		{[]string{"--listen", "0.0.0.0:8080", "--metrics-listen", "127.0.0.1:8080"}, "--metrics-listen 127.0.0.1:8080: the port of --listen 0.0.0.0:8080: give each its own"},
		{[]string{"--metrics-listen", "nope"}, `--metrics-listen "nope": must be host:port`},
	} {
		var out, errb bytes.Buffer
		code := run(t.Context(), append([]string{"activator", "--upstream", "http://chat:8000"}, tc.args...), strings.NewReader(""), &out, &errb)
		if code != exitInvalid || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}

	held := heldPort(t)
	listen := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"activator", "--listen", listen, "--metrics-listen", held, "--upstream", "http://127.0.0.1:1"}, strings.NewReader(""), &out, &errb)
	want := "infscale: --metrics-listen " + held + ": address already in use: another process holds the port (an infscale already running?); stop it, or give another with --metrics-listen HOST:PORT (port 0: any free one)\n"
	if code != exitRuntime || errb.String() != want || out.Len() != 0 {
		t.Errorf("--metrics-listen on a held port: exit %d, stdout %q, stderr %q; want 1 and %q", code, out.String(), errb.String(), want)
	}
	if ctx.Err() != nil {
		t.Fatal("did not exit on the bind error")
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatalf("--listen %s still bound after the refusal: %v", listen, err)
	}
	ln.Close()
}
