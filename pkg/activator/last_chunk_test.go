package activator

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stallListener's connections stop making progress on the write of a
// chunked answer's terminator ("0\r\n\r\n") while stall is set, as a
// client that stopped reading just before the end of a stream (its
// window full): the write fails at the connection's write deadline, or
// never returns without one (until closed). closed is sent each
// connection that is closed.
type stallListener struct {
	net.Listener
	stall  *atomic.Bool
	closed chan struct{}
}

func (l stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c, stall: l.stall, closed: l.closed, done: make(chan struct{})}, nil
}

type stallConn struct {
	net.Conn
	stall    *atomic.Bool
	closed   chan struct{}
	done     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	deadline time.Time
}

func (c *stallConn) SetDeadline(t time.Time) error {
	c.setWrite(t)
	return c.Conn.SetDeadline(t)
}

func (c *stallConn) SetWriteDeadline(t time.Time) error {
	c.setWrite(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *stallConn) setWrite(t time.Time) {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
}

func (c *stallConn) Write(p []byte) (int, error) {
	if c.stall.Load() && bytes.HasSuffix(p, []byte("0\r\n\r\n")) {
		for {
			c.mu.Lock()
			d := c.deadline
			c.mu.Unlock()
			if !d.IsZero() && time.Now().After(d) {
				return 0, os.ErrDeadlineExceeded
			}
			select {
			case <-c.done:
				return 0, net.ErrClosed
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return c.Conn.Write(p)
}

func (c *stallConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.closed <- struct{}{}
	})
	return c.Conn.Close()
}

// TestLastChunkHasDeadline: a client that stops reading just before a
// streamed answer's end is cut after --body-timeout (1 s here), as one
// that stops earlier is: net/http writes the chunked terminator after the
// handler returns, and the write deadline was lifted before it, so that
// last write waited without limit, holding the connection and its
// goroutine for as long as the client stayed connected. The deadline
// does not outlive the answer (net/http lifts it once the answer is
// written): /metrics on a keep-alive connection 1.5 s after a proxied
// answer is answered.
func TestLastChunkHasDeadline(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		io.WriteString(w, "data: the stream\n\n")
		w.(http.Flusher).Flush() // chunked: no Content-Length
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	a, err := New(Config{Upstream: u, ProbeInterval: 50 * time.Millisecond, BodyTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	var stall atomic.Bool
	closed := make(chan struct{}, 16)
	srv := httptest.NewUnstartedServer(a.Mux())
	srv.Listener = stallListener{Listener: srv.Listener, stall: &stall, closed: closed}
	srv.Start()
	defer srv.Close()
	waitFor(t, "ready", 5*time.Second, a.Ready)

	// Keep-alive: a proxied answer, then /metrics on the same connection
	// after the answer's last-write deadline has passed.
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer c.CloseIdleConnections()
	for i, path := range []string{"/v1/completions", "/metrics"} {
		if i == 1 {
			time.Sleep(1500 * time.Millisecond)
		}
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s on a keep-alive connection: %d, want 200", path, resp.StatusCode)
		}
	}
	select {
	case <-closed:
		t.Error("the keep-alive connection was closed: a deadline left from the answer before cut the next request's")
	default:
	}

	stall.Store(true)
	go func() {
		resp, err := http.Get(srv.URL + "/v1/completions")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Error("the connection of a client stalled at the stream's last write is still open 5 s later, with a 1 s body timeout")
		srv.CloseClientConnections() // or Close waits for it for good
	}
}
