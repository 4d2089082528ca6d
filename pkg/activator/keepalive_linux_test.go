package activator

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"
	"time"
)

// TestClientKeepAlive: a client connection accepted by Listen (the
// command's listener) has TCP keep-alive that finds a peer whose kernel
// answers nothing (a lost node, no FIN or reset: nothing else tells an
// HTTP/1.1 server whose client sends nothing) within 30 s of its last
// segment: the idle time before the first probe plus the probes' interval
// times their count. Before, Go's default: 15 s + 9 x 15 s = 150 s, the
// held request counted as demand that long.
func TestClientKeepAlive(t *testing.T) {
	on, idle, dead := keepAliveOf(t, acceptedClient(t))
	if !on || dead > 30*time.Second {
		t.Errorf("a client whose node is lost is known after %v (keep-alive %v), want within 30 s", dead, on)
	}
	if idle < 10*time.Second {
		t.Errorf("keep-alive idle %v: want 10 s or more (a live client's probes are cheap, not free)", idle)
	}
}

// TestUpstreamKeepAlive: a connection the activator dials to the upstream
// has the same keep-alive, so a proxied answer whose pod's node is lost
// mid-stream (nothing unacknowledged on the activator's side: keep-alive
// runs) fails within 30 s of the last segment, and the client can retry.
// Before, http.DefaultTransport's dialer: 30 s, then 9 probes 15 s apart
// on Linux, 165 s.
func TestUpstreamKeepAlive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	u, _ := url.Parse("http://" + ln.Addr().String())
	h1, h2c := transports(Config{Upstream: u})
	for name, tr := range map[string]*http.Transport{"http/1.1": h1, "h2c": h2c} {
		c, err := tr.DialContext(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := c.(*resetConn); ok { // h2c's, which follows the frames read
			c = r.Conn
		}
		on, _, dead := keepAliveOf(t, c.(*net.TCPConn))
		if !on || dead > 30*time.Second {
			t.Errorf("%s: an upstream whose node is lost is known after %v (keep-alive %v), want within 30 s", name, dead, on)
		}
		c.Close()
		s.Close()
	}
}

// keepAliveOf reads c's TCP keep-alive: on, the idle time before the first
// probe, and when a peer that answers nothing is known dead (idle + the
// probes' interval x their count).
func keepAliveOf(t *testing.T, c *net.TCPConn) (on bool, idle, dead time.Duration) {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var o, i, intvl, cnt int
	var errs [4]error
	if err := raw.Control(func(fd uintptr) {
		o, errs[0] = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
		i, errs[1] = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
		intvl, errs[2] = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL)
		cnt, errs[3] = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT)
	}); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("SO_KEEPALIVE %d, idle %d s, interval %d s, count %d", o, i, intvl, cnt)
	return o != 0, time.Duration(i) * time.Second, time.Duration(i+intvl*cnt) * time.Second
}

// acceptedClient is the server side of a client connection accepted by
// Listen (the command's listener), closed with the test.
func acceptedClient(t *testing.T) *net.TCPConn {
	t.Helper()
	ln, err := Listen("127.0.0.1:0", "--listen 127.0.0.1:0", "--listen")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*net.TCPConn)
}
