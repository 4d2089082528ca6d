package activator

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestH2CUpgradeNotPassedOn: an HTTP/1.1 Upgrade: h2c (RFC 9113 deprecates
// it) is not passed upstream. An upstream that takes it (Hypercorn does,
// on the Upgrade and HTTP2-Settings headers) answers 101, and the
// activator then copied raw bytes both ways: the client spoke to the
// upstream directly, any path, out of the --upstream prefix and past the
// dot-segment check (h2c smuggling). The request is proxied as the
// HTTP/1.1 request it also is, without the Upgrade.
func TestH2CUpgradeNotPassedOn(t *testing.T) {
	var mu sync.Mutex
	var tunneled []byte
	var seen http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		mu.Lock()
		seen = r.Header.Clone()
		mu.Unlock()
		if !strings.EqualFold(r.Header.Get("Upgrade"), "h2c") || r.Header.Get("HTTP2-Settings") == "" {
			w.Write([]byte("http/1.1"))
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
		brw.Flush()
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		b, _ := io.ReadAll(brw)
		mu.Lock()
		tunneled = b
		mu.Unlock()
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL + "/chat")
	_, base := start(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond})
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	// Without HTTP2-Settings among Connection's tokens: ReverseProxy drops
	// the headers Connection names, not the others.
	c.Write([]byte("GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n"))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusSwitchingProtocols {
		c.Write([]byte("GET /admin HTTP/1.1\r\nHost: internal\r\n\r\n"))
		time.Sleep(300 * time.Millisecond)
		c.Close()
		time.Sleep(300 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if resp.StatusCode != http.StatusOK || string(body) != "http/1.1" {
		t.Errorf("Upgrade: h2c answered %s %q (the upstream got %q through the tunnel); want 200 \"http/1.1\": proxied as HTTP/1.1", resp.Status, body, tunneled)
	}
	if seen.Get("Upgrade") != "" || seen.Get("HTTP2-Settings") != "" {
		t.Errorf("upstream got Upgrade %q, HTTP2-Settings %q; want neither", seen.Get("Upgrade"), seen.Get("HTTP2-Settings"))
	}
}
