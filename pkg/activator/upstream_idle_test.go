package activator

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// keepAliveUpstream is a model server whose keep-alive timeout is idle
// (uvicorn's timeout_keep_alive, 5 s in vLLM and SGLang; shorter here):
// a request that comes on a connection idle that long is the one that
// crossed the server's close on the wire, so the connection is closed
// without an answer, as the closed socket would. It answers every other
// request 200 "ok" and keeps the connection.
func keepAliveUpstream(t *testing.T, idle time.Duration) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				last := time.Now()
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if time.Since(last) >= idle {
						return // closed at the keep-alive timeout: never answered
					}
					if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
						return
					}
					last = time.Now()
				}
			}()
		}
	}()
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

// TestUpstreamIdleBelowServerKeepAlive: the activator keeps an idle
// upstream connection for less than the model server's keep-alive
// timeout, so it never sends a request on a connection the server is
// closing. Scaled down: the server closes connections idle 1 s; a request
// 1.2 s after the last one goes on a new connection with an upstream idle
// timeout of 500 ms and gets its 200. With Go's default 90 s (the
// activator's before) it went on the old connection, the server closed
// it unanswered, and the client got a 502; vLLM closes after 5 s, so
// every request after a pause of 5 s to 90 s could meet that race.
func TestUpstreamIdleBelowServerKeepAlive(t *testing.T) {
	if DefaultUpstreamIdleTimeout >= 5*time.Second {
		t.Errorf("DefaultUpstreamIdleTimeout %v: want below vLLM's and SGLang's 5 s keep-alive (VLLM_HTTP_TIMEOUT_KEEP_ALIVE's default)", DefaultUpstreamIdleTimeout)
	}
	for _, c := range []struct {
		name string
		cfg  func(*Config)
		want int
	}{
		{"idle 500ms", func(c *Config) { c.UpstreamIdleTimeout = 500 * time.Millisecond }, 200},
		{"Go's default 90s", func(c *Config) {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.IdleConnTimeout = 90 * time.Second
			c.Transport = tr
		}, http.StatusBadGateway},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Upstream: keepAliveUpstream(t, time.Second), ProbeInterval: 50 * time.Millisecond, HoldTimeout: 2 * time.Second}
			c.cfg(&cfg)
			a, base := start(t, cfg)
			waitFor(t, "ready", 5*time.Second, a.Ready)
			if code, body := post(t, base+"/v1/completions", "first", "prompt"); code != 200 || body != "ok" {
				t.Fatalf("first request: %d %q, want 200 ok", code, body)
			}
			time.Sleep(1200 * time.Millisecond)
			if code, _ := post(t, base+"/v1/completions", "after a pause", "prompt"); code != c.want {
				t.Errorf("a request 1.2 s later: %d, want %d", code, c.want)
			}
		})
	}
}
