package activator

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/buftest"
)

// TestProbeLogsChanges: an upstream whose /health answers 404 (a wrong
// --probe-path, or not up yet) was only a counter; the activator now logs
// once that it is not ready with the probe's URL and status, and once when
// it turns ready, not once per probe (10 ms probes over about 300 ms).
func TestProbeLogsChanges(t *testing.T) {
	var ok atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ok.Load() {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	var log buftest.Buffer
	a, err := New(Config{Upstream: u, ProbeInterval: 10 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	time.Sleep(150 * time.Millisecond)
	ok.Store(true)
	time.Sleep(150 * time.Millisecond)
	cancel()
	<-done
	got := log.String()
	notReady := `msg="upstream not ready; requests are held" probe=` + up.URL + `/health reason="404 Not Found"`
	if strings.Count(got, "upstream not ready") != 1 || !strings.Contains(got, notReady) || strings.Count(got, `msg="upstream ready"`) != 1 {
		t.Errorf("log:\n%s\nwant one %q line and one upstream ready line", got, notReady)
	}
}

// TestProbeLogsOncePerKind: an upstream that resets every connection fails
// each probe with an error naming the probe's own local port ("read tcp
// 127.0.0.1:50008->...: connection reset by peer"), a new one at every
// probe. The not-ready line is logged once per change (docs/activator.md),
// so 10 ms probes over 300 ms (about 30 probes, each failing) give one
// line; before, one line per probe.
func TestProbeLogsOncePerKind(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.(*net.TCPConn).SetLinger(0) // close sends RST
			c.Close()
		}
	}()
	var log buftest.Buffer
	a, err := New(Config{Upstream: &url.URL{Scheme: "http", Host: ln.Addr().String()}, ProbeInterval: 10 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	time.Sleep(300 * time.Millisecond)
	cancel()
	<-done
	if n := accepted.Load(); n < 5 {
		t.Skipf("only %d probes in 300 ms (a loaded machine): too few to tell", n)
	}
	if got := log.String(); strings.Count(got, "upstream not ready") != 1 {
		t.Errorf("after %d probes on reset connections, log:\n%s\nwant one upstream not ready line", accepted.Load(), got)
	}
}

// TestFailureKind: the kinds of probe failures, without addresses.
func TestFailureKind(t *testing.T) {
	reset := &url.Error{Op: "Get", URL: "http://10.0.0.5:8000/health", Err: &net.OpError{Op: "read", Net: "tcp",
		Source: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50008}, Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8000},
		Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	refused := &url.Error{Op: "Get", URL: "http://10.0.0.5:8000/health", Err: &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8000}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	timeout := &url.Error{Op: "Get", URL: "http://10.0.0.5:8000/health", Err: context.DeadlineExceeded}
	for _, c := range []struct {
		err  error
		want string
	}{
		{reset, "connection reset by peer"},
		// A write's broken pipe on a reset connection is the same fault.
		{&url.Error{Op: "Get", URL: "x", Err: &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}}, "connection reset by peer"},
		{refused, "connection refused"},
		{&url.Error{Op: "Get", URL: "x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("lookup chat: no such host")}}, "dial: lookup chat: no such host"},
		{timeout, "timeout"},
		{&url.Error{Op: "Get", URL: "x", Err: io.EOF}, "EOF"},
	} {
		if got := failureKind(c.err); got != c.want {
			t.Errorf("failureKind(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestProbeLoop: --upstream pointing at the activator itself (its own
// Service by mistake). Before: its /health probe was proxied to itself and
// held, each probe a phantom held request (held 1 with no client, which
// infscale reads as demand: the target never went to zero), and the log
// said only "Client.Timeout exceeded". Now the probe comes back 508, the
// log line names the loop, nothing is held but the client's request, which
// gets 503 at the 1 s hold timeout, after which held is 0.
func TestProbeLoop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	var log buftest.Buffer
	a, err := New(Config{Upstream: self, HoldTimeout: time.Second, ProbeInterval: 20 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: a.Mux()}
	go srv.Serve(ln)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	resp, err := http.Get(self.String() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("the client's request: %d, want 503 at the hold timeout", resp.StatusCode)
	}
	time.Sleep(100 * time.Millisecond) // a few more probes
	if a.Held() != 0 {
		t.Errorf("held %d with no client waiting, want 0 (a probe held as a request)", a.Held())
	}
	want := `reason="508 Loop Detected: --upstream leads back to this activator`
	if got := log.String(); !strings.Contains(got, want) || strings.Count(got, "upstream not ready") != 1 {
		t.Errorf("log:\n%s\nwant one not-ready line with %q", got, want)
	}
}

// TestForeignProbeNotHeld: an activator in front of another sends its
// probe through it; while the second one's upstream is down, that probe
// gets 503 at once and is not counted as held (before: held until the
// front one's 2 s probe timeout, one phantom held request per probe).
func TestForeignProbeNotHeld(t *testing.T) {
	a, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, HoldTimeout: time.Minute, ProbeInterval: 50 * time.Millisecond})
	req, _ := http.NewRequest(http.MethodGet, base+"/health", nil)
	req.Header.Set(ProbeHeader, "another-activator")
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || time.Since(t0) > time.Second || a.Held() != 0 {
		t.Errorf("a foreign probe: %d after %v, held %d; want 503 at once, 0 held", resp.StatusCode, time.Since(t0), a.Held())
	}
}

// TestProbeLogsAlternatingKindsOnce: probes that fail in two ways by turns
// (here /health answers 500 and 404 alternately; for real, an h2c probe,
// --upstream-protocol h2c or the gRPC health probe, to a server that
// speaks HTTP/1.1 only: "frame too large ... looked like an HTTP/1.1
// header", then "client conn could not be established", by turns) are
// logged once per kind while not ready: two lines over 300 ms of 10 ms
// probes. Before, the line was logged at each change of kind: at every
// probe.
func TestProbeLogsAlternatingKindsOnce(t *testing.T) {
	var n atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			http.NotFound(w, r)
			return
		}
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	var log buftest.Buffer
	a, err := New(Config{Upstream: u, ProbeInterval: 10 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	time.Sleep(300 * time.Millisecond)
	cancel()
	<-done
	if n.Load() < 5 {
		t.Skipf("only %d probes in 300 ms (a loaded machine): too few to tell", n.Load())
	}
	got := log.String()
	if strings.Count(got, "upstream not ready") != 2 || strings.Count(got, `reason="404 Not Found"`) != 1 || strings.Count(got, `reason="500 Internal Server Error"`) != 1 {
		t.Errorf("after %d probes failing 500 and 404 by turns, log:\n%s\nwant two upstream not ready lines, one per status", n.Load(), got)
	}
}
