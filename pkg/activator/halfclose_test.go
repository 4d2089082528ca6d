package activator

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestHalfClosedClientGetsNoFalseAnswer: an HTTP/1.1 client sends a GET
// and shuts its sending side (CloseWrite, as `nc -N` does) while the
// request is held, or while it is proxied to an upstream still computing.
// The FIN reads the same as a client that closed its connection (net/http
// cancels the request: it is taken as gone, its held slot freed at once),
// so it is not sent upstream, or its upstream request is cancelled; the
// connection is then closed without an answer. Before, net/http wrote an
// empty 200 OK once the handler returned, which the client read as its
// request's success though it was never proxied, or cut upstream.
func TestHalfClosedClientGetsNoFalseAnswer(t *testing.T) {
	halfClose := func(t *testing.T, base string, held func() bool) (string, error) {
		t.Helper()
		u, _ := url.Parse(base)
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "held or proxied", 5*time.Second, held)
		c.(*net.TCPConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return "", err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.Status + " " + string(b), nil
	}
	check := func(t *testing.T, answer string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("half-closed client read %q: an answer to a request that was not carried out, want the connection closed without one", answer)
		} else if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("half-closed client: %v, want the connection closed (EOF)", err)
		}
	}
	t.Run("held", func(t *testing.T) {
		addr, release := downAddr(t)
		a, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: addr}, ProbeInterval: 50 * time.Millisecond, HoldTimeout: 10 * time.Second})
		answer, err := halfClose(t, base, func() bool { return a.Held() == 1 })
		check(t, answer, err)
		if a.Held() != 0 || testutil.ToFloat64(a.clientLeft) != 1 {
			t.Errorf("held %d, client_left_total %v; want 0 and 1", a.Held(), testutil.ToFloat64(a.clientLeft))
		}
		var sent atomic.Int64
		comeUp(t, addr, release, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/health" {
				sent.Add(1)
			}
		}))
		time.Sleep(300 * time.Millisecond)
		if n := sent.Load(); n != 0 {
			t.Errorf("sent upstream %d times after its client left, want 0", n)
		}
	})
	t.Run("proxied", func(t *testing.T) {
		var started, cancelled atomic.Int64
		up := httpServe(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/health" {
				return
			}
			started.Add(1)
			select { // a completion computing
			case <-r.Context().Done():
				cancelled.Add(1)
			case <-time.After(3 * time.Second):
				io.WriteString(w, "answer")
			}
		}))
		a, base := start(t, Config{Upstream: up, ProbeInterval: 50 * time.Millisecond})
		waitFor(t, "ready", 5*time.Second, func() bool { a.mu.Lock(); defer a.mu.Unlock(); return a.up })
		answer, err := halfClose(t, base, func() bool { return started.Load() == 1 })
		check(t, answer, err)
		// The upstream sees the cancel once its connection closes: soon
		// after the client's, not before (1 run of 3 under -race).
		waitFor(t, "upstream request cancelled", 5*time.Second, func() bool { return cancelled.Load() == 1 })
	})
}

// httpServe serves h over HTTP/1.1 until the test ends; its base URL.
func httpServe(t *testing.T, h http.Handler) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}
