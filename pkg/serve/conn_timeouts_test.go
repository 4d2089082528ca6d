package serve

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/config"
)

// TestServeClosesIdleAndStalledConnections: serve's HTTP server closes a
// keep-alive connection idle past serverIdleTimeout, and one whose request
// body stalls past serverReadTimeout. Before, it had ReadHeaderTimeout
// alone: a client that sent one request and kept its connection open, or
// sent a Content-Length and no body, held a descriptor and a goroutine
// for as long as it stayed connected (thousands of them: serve's memory,
// and descriptors it needs for Prometheus and the Kubernetes API).
func TestServeClosesIdleAndStalledConnections(t *testing.T) {
	defer func(idle, read time.Duration) { serverIdleTimeout, serverReadTimeout = idle, read }(serverIdleTimeout, serverReadTimeout)
	serverIdleTimeout, serverReadTimeout = 300*time.Millisecond, 300*time.Millisecond
	path := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(path, []byte("interval: 1s\n"+loopConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	src.set("chat", load(1, 50, 10))
	src.set("other", load(1, 5, 0))
	base, cancel, done := startRun(t, cfg, Options{ConfigPath: path, Source: src, Version: "test"})
	defer func() { cancel(); <-done }()
	for _, c := range []struct{ name, req string }{
		{"idle after a request", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"a body that never comes", "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"},
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(c.req))
		conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		buf := make([]byte, 4096)
		var err2 error
		for err2 == nil {
			_, err2 = conn.Read(buf)
		}
		conn.Close()
		if ne, ok := err2.(net.Error); ok && ne.Timeout() {
			t.Errorf("%s: connection still open after 3 s; want it closed after 300 ms", c.name)
		}
	}
}
