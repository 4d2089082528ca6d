package activator

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// stallAnswerListener's connections stop making progress on the write
// of an answer that starts with status while stall is set, as a client
// that stopped reading (its window full): the write fails at the
// connection's write deadline, or never returns without one. closed is
// sent each connection that is closed.
type stallAnswerListener struct {
	net.Listener
	status []byte
	stall  *atomic.Bool
	closed chan struct{}
}

func (l stallAnswerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &stallConn{Conn: c, stall: l.stall, closed: l.closed, done: make(chan struct{})}
	return &stallAnswerConn{stallConn: sc, status: l.status}, nil
}

type stallAnswerConn struct {
	*stallConn
	status []byte
}

func (c *stallAnswerConn) Write(p []byte) (int, error) {
	if c.stall.Load() && bytes.HasPrefix(p, c.status) {
		for {
			c.mu.Lock()
			d := c.deadline
			c.mu.Unlock()
			if !d.IsZero() && time.Now().After(d) {
				return 0, errDeadline{}
			}
			select {
			case <-c.done:
				return 0, net.ErrClosed
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return c.stallConn.Conn.Write(p)
}

type errDeadline struct{}

func (errDeadline) Error() string   { return "i/o timeout" }
func (errDeadline) Timeout() bool   { return true }
func (errDeadline) Temporary() bool { return true }

// TestRefusalHasDeadline: the answers ServeHTTP gives before it proxies
// or holds anything (400 for a dot segment; 508 for its own probe, a
// loop) are written after it returns too, and have --body-timeout (1 s
// here) as a proxied answer's last write has: a client that stopped
// reading (pipelined requests it never reads the answers of) held the
// connection and its goroutine while it stayed connected.
func TestRefusalHasDeadline(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	a, err := New(Config{Upstream: u, ProbeInterval: 50 * time.Millisecond, BodyTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	for _, tc := range []struct {
		name, status string
		req          func(string) *http.Request
	}{
		{"dot segment", "HTTP/1.1 400", func(base string) *http.Request {
			r, _ := http.NewRequest("GET", base+"/v1/x", nil)
			r.URL.RawPath, r.URL.Path = "/v1/%2e%2e/x", "/v1/../x"
			return r
		}},
		{"own probe", "HTTP/1.1 508", func(base string) *http.Request {
			r, _ := http.NewRequest("GET", base+"/health", nil)
			r.Header.Set(ProbeHeader, a.id)
			return r
		}},
	} {
		var stall atomic.Bool
		closed := make(chan struct{}, 16)
		srv := httptest.NewUnstartedServer(a.Mux())
		srv.Listener = stallAnswerListener{Listener: srv.Listener, status: []byte(tc.status), stall: &stall, closed: closed}
		srv.Start()
		stall.Store(true)
		got := make(chan int, 1)
		go func() {
			resp, err := http.DefaultClient.Do(tc.req(srv.URL))
			if err == nil {
				resp.Body.Close()
				got <- resp.StatusCode
			}
		}()
		select {
		case code := <-got:
			t.Errorf("%s: answered %d: want %s, stalled", tc.name, code, tc.status)
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Errorf("%s: the connection of a client that does not read its %s is still open 5 s later, with a 1 s body timeout", tc.name, tc.status)
			srv.CloseClientConnections()
		}
		srv.Close()
	}
}
