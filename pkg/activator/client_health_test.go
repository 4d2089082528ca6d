package activator

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestH2CDeadClientNotHeld: an h2c client (a gateway's connection) whose
// request is held goes silent without closing its connection (the TCP
// proxy in between blackholes every byte both ways: a hung gateway or
// sidecar). The activator's server pings a client connection silent for
// its ping interval and closes it when the ping is not answered within
// its timeout (200 ms each here): the held request leaves the held count
// within about 0.4 s of the cut, counted as a client that left. Before,
// the server had no ping: the request stayed counted as demand until
// --hold-timeout (10 s here; 5 min by default). A live client held on
// another connection through many ping intervals is still answered once
// the upstream comes up.
func TestH2CDeadClientNotHeld(t *testing.T) {
	addr, release := downAddr(t)
	a, srv := serve(t, Config{Upstream: &url.URL{Scheme: "http", Host: addr}, ProbeInterval: 50 * time.Millisecond, HoldTimeout: 10 * time.Second, UpstreamProtocol: ProtocolHTTP1}, Protocols())
	srv.Config.HTTP2 = ServerHTTP2(200*time.Millisecond, 200*time.Millisecond)
	front, _ := url.Parse(srv.URL)
	bh := newBlackhole(t, front.Host)

	live := make(chan error, 1)
	go func() { // a live client, directly, held for 1.5 s
		resp, err := h2cClient().Get(srv.URL + "/v1/models")
		if err == nil {
			var b []byte
			b, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s %s", resp.Status, b)
			}
		}
		live <- err
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the dying one, through the blackhole
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+bh.ln.Addr().String()+"/v1/completions", nil)
		if resp, err := h2cClient().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "both held", 5*time.Second, func() bool { return a.Held() == 2 })
	bh.cut.Store(true)
	t0 := time.Now()
	for a.Held() > 1 && time.Since(t0) < 5*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(t0)
	t.Logf("held 2 -> %d after %v", a.Held(), took)
	// The ping at most 0.2 s after the last frame read (before the cut),
	// its answer due 0.2 s later: 0.4 s, and slack for a loaded machine.
	if a.Held() != 1 || took > 2500*time.Millisecond {
		t.Fatalf("a dead client's request still held %v after its connection went silent (held %d), want out within about 0.4 s", took, a.Held())
	}
	if n := testutil.ToFloat64(a.clientLeft); n != 1 {
		t.Errorf("client_left_total %v, want 1", n)
	}
	time.Sleep(time.Second) // the live one through more pings
	comeUp(t, addr, release, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	select {
	case err := <-live:
		if err != nil {
			t.Errorf("live client held through pings: %v, want 200", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("live client not answered 5 s after the upstream came up")
	}
}

// TestClientPingDefaults: a dead client HTTP/2 connection is known within
// 30 s of its last frame, as an upstream one.
func TestClientPingDefaults(t *testing.T) {
	if d := DefaultClientPingInterval + DefaultClientPingTimeout; d > 30*time.Second {
		t.Errorf("client ping interval + timeout %v: want a dead connection known within 30 s", d)
	}
	h2 := ServerHTTP2(DefaultClientPingInterval, DefaultClientPingTimeout)
	if h2.SendPingTimeout != DefaultClientPingInterval || h2.PingTimeout != DefaultClientPingTimeout {
		t.Errorf("ServerHTTP2: %+v", h2)
	}
}
