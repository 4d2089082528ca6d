package activator

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blackhole is a TCP proxy to target that, once cut, stops passing bytes
// either way and keeps both connections open: a peer gone without a FIN
// or reset (a pod on a partitioned node, a hung sidecar).
type blackhole struct {
	ln    net.Listener
	cut   atomic.Bool
	mu    sync.Mutex
	conns []net.Conn
	dials atomic.Int64
}

func newBlackhole(t *testing.T, target string) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln}
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.dials.Add(1)
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			b.mu.Lock()
			b.conns = append(b.conns, c, u)
			b.mu.Unlock()
			go b.pipe(u, c)
			go b.pipe(c, u)
		}
	}()
	return b
}

// pipe copies src to dst until cut, then reads and drops what comes.
func (b *blackhole) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !b.cut.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (b *blackhole) url() *url.URL { return &url.URL{Scheme: "http", Host: b.ln.Addr().String()} }

// TestH2CDeadConnectionPinged: a request waits on an h2c upstream
// connection whose peer then goes silent without closing it (the proxy
// in between blackholes every byte). The activator pings a connection
// silent for UpstreamPingInterval and closes it when the ping is not
// answered within UpstreamPingTimeout (200 ms each here): the client gets
// 502 within about 0.4 s of the cut. Before, the transport had no health
// check: the request hung until the client's own timeout (5 s here;
// forever for a client without one), and so did every request sent on
// that connection after it.
func TestH2CDeadConnectionPinged(t *testing.T) {
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upAddr := upLn.Addr().String()
	upLn.Close()
	serveH2C(t, upAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		select { // a long completion: no byte before it is done
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	bh := newBlackhole(t, upAddr)
	_, base := start(t, Config{Upstream: bh.url(), UpstreamProtocol: ProtocolH2C, ProbeInterval: 50 * time.Millisecond,
		UpstreamPingInterval: 200 * time.Millisecond, UpstreamPingTimeout: 200 * time.Millisecond})
	client := &http.Client{Timeout: 5 * time.Second}
	waitFor(t, "ready", 5*time.Second, func() bool {
		resp, err := client.Get(base + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	time.AfterFunc(500*time.Millisecond, func() { bh.cut.Store(true) })
	t0 := time.Now()
	resp, err := client.Get(base + "/v1/completions")
	took := time.Since(t0)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("request on a dead upstream connection: no answer within the client's %v (%v)", client.Timeout, err)
		}
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("request on a dead upstream connection: %d %s, want 502", resp.StatusCode, body)
	}
	// The cut at 0.5 s, the ping at most 0.2 s of silence later (the
	// last frame read was the previous ping's answer), its answer due
	// 0.2 s after that: 0.9 s, and slack for a loaded machine.
	t.Logf("502 after %v (the cut at 0.5 s)", took)
	if took > 2500*time.Millisecond {
		t.Errorf("502 after %v, want within about 0.9 s", took)
	}
}

// TestPingDefaults: a dead HTTP/2 upstream connection is known within
// 30 s of its last frame, and gRPC requests' connections are pinged no
// more often than gRPC servers allow by default (keepalive MinTime,
// 5 min: three pings sooner close the connection).
func TestPingDefaults(t *testing.T) {
	if d := DefaultUpstreamPingInterval + DefaultUpstreamPingTimeout; d > 30*time.Second {
		t.Errorf("ping interval + timeout %v: want a dead connection known within 30 s", d)
	}
	if DefaultUpstreamGRPCPingInterval <= 5*time.Minute {
		t.Errorf("gRPC ping interval %v: want above gRPC servers' 5 min keepalive MinTime", DefaultUpstreamGRPCPingInterval)
	}
	for ct, want := range map[string]bool{"application/grpc": true, "application/grpc+proto": true, "application/grpc;charset=utf-8": true,
		"application/grpc-web": false, "application/json": false, "": false} {
		if got := isGRPC(http.Header{"Content-Type": {ct}}); got != want {
			t.Errorf("isGRPC(Content-Type %q) = %v, want %v", ct, got, want)
		}
	}
}
