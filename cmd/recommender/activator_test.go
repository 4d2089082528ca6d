package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/buftest"
)

func TestActivatorInvalid(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--upstream", "chat:8000"}, `--upstream "chat:8000": want a base URL`},
		// net/url takes any digits as a port; TCP's are 1..65535.
		{[]string{"--upstream", "http://127.0.0.1:99999"}, `--upstream "http://127.0.0.1:99999": port 99999: want 1 to 65535`},
		{[]string{"--upstream", "http://127.0.0.1:0"}, `--upstream "http://127.0.0.1:0": port 0: want 1 to 65535`},
		{[]string{"--upstream", "http://chat:8000", "--max-held", "0"}, "--max-held 0: want 1 to 100000"},
		{[]string{"--upstream", "http://chat:8000", "--max-held", "100001"}, "--max-held 100001: want 1 to 100000"},
		{[]string{"--upstream", "http://chat:8000", "--hold-timeout", "0s"}, "--hold-timeout 0s: want a duration > 0"},
		{[]string{"--upstream", "http://chat:8000", "--retry-after", "0s"}, "--retry-after 0s: want a duration > 0"},
		// 100h for 100s: accepted before, a day of holding or waiting.
		{[]string{"--upstream", "http://chat:8000", "--hold-timeout", "100h"}, "--hold-timeout 100h: want at most 24h"},
		{[]string{"--upstream", "http://chat:8000", "--retry-after", "2h"}, "--retry-after 2h: want at most 1h"},
		{[]string{"--upstream", "http://chat:8000", "--probe-interval", "0s"}, "--probe-interval 0s: want 10ms to 1h"},
		{[]string{"--upstream", "http://chat:8000", "--listen", "nope"}, `--listen "nope": must be host:port`},
		{[]string{"--upstream", "http://chat:8000", "--probe-path", "health"}, `--probe-path "health": want a path starting with /`},
		// Sent as a path, "?ready=1" became %3Fready=1: every probe 404,
		// every request held to --hold-timeout.
		{[]string{"--upstream", "http://chat:8000", "--probe-path", "/health?ready=1"}, `--probe-path "/health?ready=1": want a path alone, without a query`},
		{[]string{"--upstream", "http://chat:8000", "--probe-path", "/he alth"}, `--probe-path "/he alth": want a path alone`},
		// A base URL has no query (it would be merged into every request's
		// and the probe's) and no fragment (never sent).
		{[]string{"--upstream", "http://h:1/v1?x=1"}, `--upstream "http://h:1/v1?x=1": want a base URL without a query or fragment`},
		{[]string{"--upstream", "http://h:1?"}, `--upstream "http://h:1?": want a base URL without a query or fragment`},
		{[]string{"--upstream", "http://h:1/#top"}, `--upstream "http://h:1/#top": want a base URL without a query or fragment`},
		{[]string{"--upstream", "http://h:1#"}, `--upstream "http://h:1#": want a base URL without a query or fragment`},
		{[]string{"--upstream", "http://chat:8000", "--probe-interval", "1ns"}, "--probe-interval 1ns: want 10ms to 1h"},
		{[]string{"--upstream", "http://chat:8000", "--probe-interval", "2h"}, "--probe-interval 2h: want 10ms to 1h"},
		// A budget holds at least a prompt; a bare number is bytes, and a
		// bare fraction is no size (parseBytes would read it as GB).
		{[]string{"--upstream", "http://chat:8000", "--max-held-bytes", "4096"}, `--max-held-bytes "4096": 4096 bytes: want 1MiB to 1TiB`},
		{[]string{"--upstream", "http://chat:8000", "--max-held-bytes", "2TiB"}, `--max-held-bytes "2TiB": 2199023255552 bytes: want 1MiB to 1TiB`},
		{[]string{"--upstream", "http://chat:8000", "--max-held-bytes", "1.5"}, `--max-held-bytes "1.5": want a size such as 128MiB`},
		{[]string{"--upstream", "http://chat:8000", "--max-held-bytes", "lots"}, `--max-held-bytes "lots": want a size such as 128MiB`},
		// A size or byte count too large for its type is past the range,
		// not "no size": 1e300TB passes float64 in bytes, 1e20 int64.
		{[]string{"--upstream", "http://chat:8000", "--max-held-bytes", "1e300TB"}, `--max-held-bytes "1e300TB": too large: want 1MiB to 1TiB`},
		{[]string{"--upstream", "http://chat:8000", "--max-held-bytes", "100000000000000000000"}, `--max-held-bytes "100000000000000000000": too large: want 1MiB to 1TiB`},
		// Kubernetes' spelling of a quantity, as the container's limit
		// beside the flag in deploy/activator is written.
		{[]string{"--upstream", "http://chat:8000", "--max-held-bytes", "128Mi"}, `--max-held-bytes "128Mi": want a size such as 128MiB, 100MB or a number of bytes (Kubernetes' 128Mi is 128MiB here)`},
		// Credentials in the base URL were refused as if it were no URL.
		{[]string{"--upstream", "http://u:p@chat:8000"}, `--upstream "http://u:p@chat:8000": want a base URL without user information (user:password@)`},
		{[]string{"--upstream", "http://chat:8000", "--body-timeout", "10ms"}, "--body-timeout 10ms: want 1s to 1h"},
		// 0 would be no idle timeout at all (net/http's zero), the leak.
		{[]string{"--upstream", "http://chat:8000", "--idle-timeout", "0s"}, "--idle-timeout 0s: want 1s to 24h"},
		{[]string{"--upstream", "http://chat:8000", "--idle-timeout", "25h"}, "--idle-timeout 25h: want 1s to 24h"},
		// 0 is no timeout to keep below the server's; the reason says
		// only that (activator.Config's 0 is the 4 s default, not "for
		// good", as the message said).
		{[]string{"--upstream", "http://chat:8000", "--upstream-idle-timeout", "0s"}, "--upstream-idle-timeout 0s: want 100ms to 1h (keep it shorter than the model server's keep-alive timeout (vLLM's 5s), so that the activator closes first)\n"},
		{[]string{"--upstream", "http://chat:8000", "--upstream-idle-timeout", "2h"}, "--upstream-idle-timeout 2h: want 100ms to 1h"},
		// kong's enums, serve's values.
		{[]string{"--upstream", "http://chat:8000", "--log-format", "yaml"}, `--log-format must be one of "text","json" but got "yaml"`},
		{[]string{"--upstream", "http://chat:8000", "--log-level", "trace"}, `--log-level must be one of "debug","info","warn","error" but got "trace"`},
	} {
		var out, errb bytes.Buffer
		code := run(t.Context(), append([]string{"activator"}, tc.args...), strings.NewReader(""), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestHeldBytes: --max-held-bytes in its units (1 MiB = 1,048,576 bytes,
// 1 MB = 1,000,000) or a bare number of bytes.
func TestHeldBytes(t *testing.T) {
	for in, want := range map[string]int64{"128MiB": 134217728, "100MB": 100000000, "1048576": 1048576, " 1GiB ": 1073741824, "1.5MiB": 1572864} {
		if got, err := heldBytes(in); err != nil || got != want {
			t.Errorf("heldBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

// TestActivatorHelpHeldBytesRange: --help gives --max-held-bytes' range,
// the one its error enforces (1MiB to 1TiB).
func TestActivatorHelpHeldBytesRange(t *testing.T) {
	var out, errb bytes.Buffer
	run(t.Context(), []string{"activator", "--help"}, strings.NewReader(""), &out, &errb)
	help := strings.Join(strings.Fields(out.String()), " ") // undo the wrapping
	if !strings.Contains(help, "held in memory at once, 1MiB to 1TiB") {
		t.Errorf("activator --help lacks --max-held-bytes' range 1MiB to 1TiB:\n%s", out.String())
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestActivatorDrain: a request is held, SIGTERM comes (the context ends):
// the activator keeps listening while it holds the request, and /metrics
// still counts it (held 1: infscale scales from zero on it); the upstream
// comes up and the request is answered; then it stops accepting
// connections and exits 0.
func TestActivatorDrain(t *testing.T) {
	listen := freePort(t)
	upstream, upstreamUp := downUpstream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		code <- run(ctx, []string{"activator", "--listen", listen, "--upstream", "http://" + upstream, "--probe-interval", "50ms", "--hold-timeout", "10s"},
			strings.NewReader(""), io.Discard, &errb)
	}()
	var resp *http.Response
	got := make(chan string, 1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", listen)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("activator did not listen")
		}
		time.Sleep(20 * time.Millisecond)
	}
	go func() {
		r, err := http.Get("http://" + listen + "/v1/models")
		if err != nil {
			got <- err.Error()
			return
		}
		resp = r
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		got <- string(b)
	}()
	// The request is held once the activator reports it (poll: on a loaded
	// machine the client's request may take a while to arrive).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, body := fetchText(t, "http://"+listen+"/metrics")
		if strings.Contains(body, "infscale_activator_held_requests 1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics while holding one:\n%s", body)
		}
	}
	// A keep-alive connection opened before SIGTERM, idle.
	pooled, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Close()
	if _, err := io.WriteString(pooled, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(pooled)
	if r, err := http.ReadResponse(br, nil); err != nil || r.Close {
		t.Fatalf("before SIGTERM: %v, close %v; want a kept-alive answer", err, r != nil && r.Close)
	} else {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	cancel() // SIGTERM
	time.Sleep(300 * time.Millisecond)
	r, err := http.Get("http://" + listen + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(body), "infscale_activator_held_requests 1") {
		t.Errorf("metrics while draining with one held: want held 1 (it was gone with the listener):\n%s", body)
	}
	// No keep-alive while draining: an answer closes its connection, and
	// the idle one was closed, so that a client's next request (a retry)
	// connects anew through the Service, to another activator.
	if !r.Close {
		t.Error("an answer while draining kept its connection alive; want Connection: close")
	}
	pooled.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the idle keep-alive connection while draining: read %d, %v; want it closed (EOF)", n, err)
	}
	defer upstreamUp().Close()
	select {
	case body := <-got:
		if body != "models" || resp == nil || resp.StatusCode != 200 {
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
	if c, err := net.Dial("tcp", listen); err == nil {
		c.Close()
		t.Error("still accepting connections after draining")
	}
}

func fetchText(t *testing.T, url string) (int, string) {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

// TestActivatorHeldWithinMemoryLimit: under a 64 MiB memory limit, the
// defaults (1000 held x 22 KB = 22,528,000 B, plus 128 MiB = 134,217,728 B
// of bodies: 156,745,728 B) are refused naming both flags and the limit
// (67,108,864 B); 100 held and 32 MiB (2,252,800 + 33,554,432 B) fit and
// it starts.
func TestActivatorHeldWithinMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(64 << 20))
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"activator", "--upstream", "http://chat:8000"}, strings.NewReader(""), &out, &errb)
	if errs, want := errb.String(), "--max-held 1000 and --max-held-bytes 128MiB hold up to 156.7 MB (1000 x 22 KB + the bodies), more than the memory limit 67.11 MB (GOMEMLIMIT)"; code != 2 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q: want 2 and %q", code, errs, want)
	}
	// Within the limit it starts: a cancelled context stops it at once.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	errb.Reset()
	code = run(ctx, []string{"activator", "--upstream", "http://chat:8000", "--max-held", "100", "--max-held-bytes", "32MiB", "--listen", "127.0.0.1:0"}, strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(errb.String(), " max_held=100 max_held_bytes=32MiB") {
		t.Errorf("within the limit: exit %d, stderr %q: want 0 and the start line", code, errb.String())
	}
}

// TestActivatorIdleTimeout: with --idle-timeout 1s, a keep-alive
// connection left idle after its answer is closed by the activator 1 s
// later (not before, not never: before, it stayed open), while a request
// held for 3 s (three idle timeouts) on another connection that sends
// nothing meanwhile is answered, and its connection then carries a second
// request.
func TestActivatorIdleTimeout(t *testing.T) {
	listen := freePort(t)
	upstream, upstreamUp := downUpstream(t)
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		code <- run(ctx, []string{"activator", "--listen", listen, "--upstream", "http://" + upstream, "--probe-interval", "50ms", "--hold-timeout", "30s", "--idle-timeout", "1s"},
			strings.NewReader(""), io.Discard, &errb)
	}()
	defer func() { cancel(); <-code }()
	dial := func() (net.Conn, *bufio.Reader) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			c, err := net.Dial("tcp", listen)
			if err == nil {
				t.Cleanup(func() { c.Close() })
				return c, bufio.NewReader(c)
			}
			if time.Now().After(deadline) {
				t.Fatalf("activator did not listen: %v", err)
			}
		}
	}
	// get sends one request on c and reads its answer (from a goroutine
	// too: errors are returned, not fatal).
	get := func(c net.Conn, br *bufio.Reader, path string) (int, string, error) {
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: chat\r\n\r\n"); err != nil {
			return 0, "", fmt.Errorf("GET %s: %w", path, err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		r, err := http.ReadResponse(br, nil)
		if err != nil {
			return 0, "", fmt.Errorf("GET %s: %w", path, err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.Close {
			return 0, "", fmt.Errorf("GET %s answered with Connection: close", path)
		}
		return r.StatusCode, string(b), nil
	}

	// The held request first: upstream down, it waits on its connection.
	held, heldR := dial()
	type answer struct {
		code int
		body string
		err  error
	}
	heldGot := make(chan answer, 1)
	go func() { c, b, err := get(held, heldR, "/v1/models"); heldGot <- answer{c, b, err} }()

	idle, idleR := dial()
	if code, _, err := get(idle, idleR, "/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz: %d, %v", code, err)
	}
	answered := time.Now()
	_ = idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := idleR.Read(make([]byte, 1))
	waited := time.Since(answered)
	switch {
	case n != 0 || !errors.Is(err, io.EOF):
		t.Errorf("idle keep-alive connection after 5 s: read %d bytes, %v; want EOF (closed by the activator)", n, err)
	case waited < 500*time.Millisecond || waited > 3*time.Second: // the server's timer starts as it writes the answer, a little before it is read
		t.Errorf("idle keep-alive connection closed %v after its answer, want about 1s (--idle-timeout)", waited)
	}

	// 3 s after the first request was held, the upstream comes up.
	time.Sleep(time.Until(answered.Add(3 * time.Second)))
	select {
	case a := <-heldGot:
		t.Fatalf("held request answered %d %q (%v) before the upstream came up", a.code, a.body, a.err)
	default:
	}
	defer upstreamUp().Close()
	select {
	case a := <-heldGot:
		if a.err != nil || a.code != http.StatusOK || a.body != "models" {
			t.Fatalf("held request answered %d %q (%v), want 200 \"models\"", a.code, a.body, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("held request not answered after the upstream came up")
	}
	// Its connection was kept through the hold: a second request on it.
	if code, body, err := get(held, heldR, "/v1/models"); err != nil || code != http.StatusOK || body != "models" {
		t.Errorf("second request on the held request's connection: %d %q (%v)", code, body, err)
	}
}

// downUpstream returns the address of an upstream that is down, and up,
// which brings it up there answering "models" to every request (the fleet
// coming up behind the activator).
func downUpstream(t *testing.T) (addr string, up func() *http.Server) {
	t.Helper()
	// The port stays bound while the upstream is down (its listener
	// accepts nothing: the activator's probe gets no answer), so no other
	// test run in parallel can take it meanwhile and answer the held
	// request (a freed port was taken by another package's fake
	// Prometheus).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), func() *http.Server {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "models") })}
		go srv.Serve(ln)
		return srv
	}
}

// TestHeldBytesText: the startup line writes the budget as the flag takes
// it: 128 x 2^20 = 134217728 bytes is 128MiB, 2^30 is 1GiB, 100 x 10^6
// (100MB) is not a whole MiB (95.4) and stays in bytes.
func TestHeldBytesText(t *testing.T) {
	for n, want := range map[int64]string{134217728: "128MiB", 1 << 30: "1GiB", 100000000: "100000000 bytes", 3 << 29: "1536MiB"} {
		if got := heldBytesText(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}

// TestActivatorDrainKeepsWebSockets: a WebSocket open through the
// activator at SIGTERM carries on until its client closes it, and the
// activator exits then. http.Server's Shutdown neither waits for nor
// closes upgraded (hijacked) connections: the activator returned as soon
// as its other requests were done, and the exit cut the session (here a
// line written 300 ms after SIGTERM got no echo: EOF).
func TestActivatorDrainKeepsWebSockets(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		for {
			l, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			fmt.Fprintf(brw, "echo %s", l)
			brw.Flush()
		}
	}))
	defer up.Close()
	ws := startActivatorWebSocket(t, up.URL, "10s", 10*time.Second)
	cancel, code, c, br := ws.cancel, ws.code, ws.conn, ws.br
	errb := &ws.errb
	echo := func(s string) (string, error) {
		fmt.Fprint(c, s+"\n")
		return br.ReadString('\n')
	}
	if l, err := echo("before"); l != "echo before\n" || err != nil {
		t.Fatalf("before SIGTERM: %q %v", l, err)
	}
	cancel() // SIGTERM
	time.Sleep(300 * time.Millisecond)
	if l, err := echo("after"); l != "echo after\n" || err != nil {
		t.Errorf("300 ms after SIGTERM: %q %v; want the session going on (\"echo after\")", l, err)
	}
	select {
	case n := <-code:
		t.Fatalf("the activator exited (%d) with a WebSocket open; stderr: %s", n, errb.String())
	default:
	}
	c.Close()
	select {
	case n := <-code:
		if n != 0 {
			t.Errorf("exit %d: %s", n, errb.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the activator did not exit once the WebSocket closed")
	}
	if !strings.Contains(errb.String(), "level=INFO msg=\"draining: ") || !strings.Contains(errb.String(), " held=0 upgrades=1 ") {
		t.Errorf("stderr %q: want the drain to say one WebSocket is open", errb.String())
	}
}

// TestActivatorDrainClosesWebSocketsGoingAway: a WebSocket still open at
// the end of the drain's bound (--hold-timeout 1s + 5 s) is closed, not
// cut: its client reads a close frame with status 1001 (going away) and
// the server gets one too, and stderr says one was closed so. Before, the
// exit cut it: the client read EOF with no close frame (a browser's
// onclose says 1006, abnormal closure).
func TestActivatorDrainClosesWebSocketsGoingAway(t *testing.T) {
	serverClose := make(chan []byte, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		// Frames of at most 125 bytes: a close frame from the (masking)
		// activator is 0x88, 0x80|length, a 4-byte key, the payload.
		var h [2]byte
		if _, err := io.ReadFull(brw, h[:]); err != nil || h[0] != 0x88 || h[1]&0x80 == 0 {
			return
		}
		b := make([]byte, 4+int(h[1]&0x7f))
		if _, err := io.ReadFull(brw, b); err != nil {
			return
		}
		for i := range b[4:] {
			b[4+i] ^= b[i%4]
		}
		serverClose <- b[4:]
	}))
	defer up.Close()
	ws := startActivatorWebSocket(t, up.URL, "1s", 15*time.Second)
	cancel, code := ws.cancel, ws.code
	errb := &ws.errb
	t0 := time.Now()
	cancel() // SIGTERM
	ws.goingAway(t, t0, 4*time.Second)
	select {
	case b := <-serverClose:
		if len(b) < 2 || b[0] != 0x03 || b[1] != 0xe9 {
			t.Errorf("server's close frame payload % x, want status 1001", b)
		}
	case <-time.After(3 * time.Second):
		t.Error("the server got no close frame")
	}
	select {
	case n := <-code:
		if n != 0 {
			t.Errorf("exit %d: %s", n, errb.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the activator did not exit")
	}
	if !strings.Contains(errb.String(), "closed with a close frame 1001 (going away) to both sides") || !strings.Contains(errb.String(), " upgrades=1 closed=1 cut=0\n") {
		t.Errorf("stderr %q: want the drain to say one WebSocket was closed with 1001", errb.String())
	}
}

// TestActivatorDrainClosesWebSocketsBesideSlowAnswer: a WebSocket is
// closed with 1001 in the drain's last 2 s also while a plain request's
// answer is still in flight (a non-streamed completion taking minutes):
// Shutdown waits on that answer up to the bound, and the close window is
// the bound's last 2 s, not what is left after it. Before, Shutdown
// returned only at the bound (context deadline exceeded), the close was
// never sent, and the exit cut the WebSocket (the client read EOF).
func TestActivatorDrainClosesWebSocketsBesideSlowAnswer(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			return
		case "/slow":
			w.WriteHeader(200)
			http.NewResponseController(w).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		_, _ = io.Copy(io.Discard, brw) // until the activator closes it
	}))
	defer up.Close()
	ws := startActivatorWebSocket(t, up.URL, "1s", 15*time.Second)
	cancel, code := ws.cancel, ws.code
	errb := &ws.errb
	// The slow answer, begun before SIGTERM and still going at the bound.
	slow, err := http.Get("http://" + ws.listen + "/slow")
	if err != nil || slow.StatusCode != 200 {
		t.Fatalf("slow request: %v %v", slow, err)
	}
	defer slow.Body.Close()
	t0 := time.Now()
	cancel() // SIGTERM
	ws.goingAway(t, t0, 3500*time.Millisecond)
	select {
	case <-code:
	case <-time.After(5 * time.Second):
		t.Fatal("the activator did not exit")
	}
	if !strings.Contains(errb.String(), "closed with a close frame 1001 (going away) to both sides") {
		t.Errorf("stderr %q: want the drain to say the WebSocket was closed with 1001", errb.String())
	}
}

// goingAway reads a close frame on the client's side: status 1001 (going
// away), read between lo and 6.5 s after t0 (the drain's last 2 s of its
// 6 s bound).
func (ws *activatorWebSocket) goingAway(t *testing.T, t0 time.Time, lo time.Duration) {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(ws.br, h[:]); err != nil || h[0] != 0x88 {
		t.Fatalf("at the drain's end the client read % x %v (after %v), want a close frame (88 ...)", h, err, time.Since(t0).Round(100*time.Millisecond))
	}
	p := make([]byte, h[1]&0x7f)
	if _, err := io.ReadFull(ws.br, p); err != nil || len(p) < 2 || p[0] != 0x03 || p[1] != 0xe9 {
		t.Fatalf("close frame payload % x %v, want status 1001 (03 e9)", p, err)
	}
	if took := time.Since(t0); took < lo || took > 6500*time.Millisecond {
		t.Errorf("close frame %v after SIGTERM, want within the last 2 s of the 6 s bound", took)
	}
}

// activatorWebSocket is an `infscale activator` run by startActivatorWebSocket
// and a WebSocket opened through it.
type activatorWebSocket struct {
	listen string
	cancel context.CancelFunc // SIGTERM
	code   chan int           // the command's exit code
	errb   buftest.Buffer     // its stderr
	conn   net.Conn           // the client's connection, upgraded
	br     *bufio.Reader      // conn's reader, past the 101
}

// startActivatorWebSocket runs the activator in front of upstream with
// --hold-timeout hold, and opens a WebSocket through it (GET /ws answered
// 101), its connection's deadline d on; both end with the test.
func startActivatorWebSocket(t *testing.T, upstream, hold string, d time.Duration) *activatorWebSocket {
	t.Helper()
	ws := &activatorWebSocket{listen: freePort(t), code: make(chan int, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	ws.cancel = cancel
	t.Cleanup(cancel)
	go func() {
		ws.code <- run(ctx, []string{"activator", "--listen", ws.listen, "--upstream", upstream, "--probe-interval", "50ms", "--hold-timeout", hold}, strings.NewReader(""), io.Discard, &ws.errb)
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", ws.listen)
		if err == nil {
			ws.conn = c
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("activator did not listen")
		}
	}
	t.Cleanup(func() { ws.conn.Close() })
	_ = ws.conn.SetDeadline(time.Now().Add(d))
	fmt.Fprint(ws.conn, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	ws.br = bufio.NewReader(ws.conn)
	if resp, err := http.ReadResponse(ws.br, nil); err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v, want 101", resp, err)
	}
	return ws
}

// TestActivatorDrainCutsAnswerAtBound: an answer still streaming at the
// drain's bound (--hold-timeout 1s: 6 s after SIGTERM) is cut there, one
// WARN line says so with answers=1, its upstream request is cancelled,
// and the exit is 0, as for a drain that ends sooner: the drain did what
// it promises. Before, Shutdown's "context deadline exceeded" ended the
// command as `infscale: interrupted`, exit 130, nothing said an answer
// had been cut, and the answer was cut only by the process's exit (here,
// in the test's process, it still ran 10 s on).
func TestActivatorDrainCutsAnswerAtBound(t *testing.T) {
	cancelled := make(chan struct{}, 1) // the upstream request's end
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		defer func() { cancelled <- struct{}{} }()
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for {
			if _, err := io.WriteString(w, "data: token\n\n"); err != nil {
				return
			}
			rc.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}))
	defer up.Close()
	listen := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	var errb buftest.Buffer
	go func() {
		code <- run(ctx, []string{"activator", "--listen", listen, "--upstream", up.URL, "--probe-interval", "50ms", "--hold-timeout", "1s"}, strings.NewReader(""), io.Discard, &errb)
	}()
	var resp *http.Response
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r, err := http.Get("http://" + listen + "/v1/completions")
		if err == nil && r.StatusCode == 200 {
			resp = r
			break
		}
		if err == nil {
			r.Body.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stream through the activator: %v", err)
		}
	}
	defer resp.Body.Close()
	t0 := time.Now()
	cancel() // SIGTERM
	read := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		read <- err
	}()
	select {
	case err := <-read:
		took := time.Since(t0)
		if err == nil {
			t.Errorf("the stream ended cleanly after %v; want it cut (an unexpected EOF) at the bound", took)
		}
		if took < 5500*time.Millisecond || took > 7*time.Second {
			t.Errorf("the stream was cut %v after SIGTERM, want at the 6 s bound", took.Round(100*time.Millisecond))
		}
	case <-time.After(10 * time.Second):
		t.Error("the stream still ran 10 s after SIGTERM")
	}
	select {
	case <-cancelled:
	case <-time.After(2 * time.Second):
		t.Error("the upstream request still ran 2 s after the client's answer was cut; want it cancelled")
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d, want 0; stderr:\n%s", c, errb.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the activator did not exit")
	}
	if !strings.Contains(errb.String(), "answers still in flight at the end of the drain were cut") || !strings.Contains(errb.String(), "answers=1") {
		t.Errorf("stderr %q: want the drain's end to say one answer was cut", errb.String())
	}
}
