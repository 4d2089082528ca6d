package activator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/buftest"
)

// h2cClient speaks cleartext HTTP/2 with prior knowledge (as gRPC clients
// and HTTP/2 gateways do) and nothing else.
func h2cClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// startH2C serves the activator as `infscale activator` does: HTTP/1.x
// and h2c (Protocols).
func startH2C(t *testing.T, cfg Config) (*Activator, string) {
	t.Helper()
	a, srv := serve(t, cfg, Protocols())
	return a, srv.URL
}

// grpcLike answers each request as a gRPC server does (over HTTP/2 only:
// an HTTP/1.x request gets 505): its body echoed, with the protocol it
// came in as a header and grpc-status 0 as a trailer; /health is 200 over
// either protocol.
func grpcLike() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		w.Header().Set("X-Upstream-Proto", r.Proto)
		if r.ProtoMajor != 2 && r.Header.Get("Content-Type") == "application/grpc" {
			w.WriteHeader(http.StatusHTTPVersionNotSupported)
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Trailer", "Grpc-Status")
		w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
		w.Write(body)
		w.Header().Set("Grpc-Status", "0")
	})
}

// serveH2C serves h on addr over HTTP/1.x and h2c until the test ends.
func serveH2C(t *testing.T, addr string, h http.Handler) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: h, Protocols: Protocols()}
	go up.Serve(ln)
	t.Cleanup(func() { up.Close() })
}

// TestH2CHeldAndProxied: a gRPC-shaped call (HTTP/2 with prior knowledge,
// application/grpc, TE: trailers) to an activator whose upstream is down
// is held, and once the upstream comes up 1 s later it is proxied over
// h2c (the upstream sees HTTP/2.0) with its trailer (grpc-status 0) back
// to the client. Before, the activator spoke HTTP/1.1 only and the
// client's first bytes got 400 Bad Request.
func TestH2CHeldAndProxied(t *testing.T) {
	addr, release := downAddr(t)
	a, base := startH2C(t, Config{Upstream: &url.URL{Scheme: "http", Host: addr}, ProbeInterval: 50 * time.Millisecond, HoldTimeout: 10 * time.Second})
	type answer struct {
		resp *http.Response
		body string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/pkg.Echo/Say", strings.NewReader("\x00\x00\x00\x00\x02hi"))
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("Te", "trailers")
		resp, err := h2cClient().Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- answer{resp, string(b), err}
	}()
	waitFor(t, "the call held", 5*time.Second, func() bool { return a.Held() == 1 })
	time.Sleep(time.Second)
	release()
	serveH2C(t, addr, grpcLike())
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.resp.StatusCode != 200 || got.resp.Proto != "HTTP/2.0" || got.body != "\x00\x00\x00\x00\x02hi" {
		t.Errorf("answer %s %s %q, want 200 over HTTP/2.0 with the echoed message", got.resp.Proto, got.resp.Status, got.body)
	}
	if p := got.resp.Header.Get("X-Upstream-Proto"); p != "HTTP/2.0" {
		t.Errorf("the upstream got the call over %q, want HTTP/2.0 (h2c)", p)
	}
	if s := got.resp.Trailer.Get("Grpc-Status"); s != "0" {
		t.Errorf("trailer grpc-status %q, want 0 (proxied after the body)", s)
	}
}

// TestUpstreamProtocol: which protocol each client's request goes
// upstream in. auto: the client's (HTTP/1.1 as HTTP/1.1, h2c as h2c);
// http1: HTTP/1.1 for both (an HTTP/2 gateway in front of vLLM, whose
// uvicorn speaks HTTP/1.1 only); h2c: HTTP/2 for both.
func TestUpstreamProtocol(t *testing.T) {
	up := httptest.NewUnstartedServer(grpcLike())
	up.Config.Protocols = Protocols()
	up.Start()
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	for _, c := range []struct {
		protocol     string
		fromHTTP1    string
		fromH2C      string
		probeOverH2C bool
	}{
		{ProtocolAuto, "HTTP/1.1", "HTTP/2.0", false},
		{ProtocolHTTP1, "HTTP/1.1", "HTTP/1.1", false},
		{ProtocolH2C, "HTTP/2.0", "HTTP/2.0", true},
	} {
		t.Run(c.protocol, func(t *testing.T) {
			a, base := startH2C(t, Config{Upstream: u, UpstreamProtocol: c.protocol, ProbeInterval: 50 * time.Millisecond})
			waitFor(t, "ready", 5*time.Second, a.Ready)
			for _, k := range []struct {
				client *http.Client
				want   string
			}{{http.DefaultClient, c.fromHTTP1}, {h2cClient(), c.fromH2C}} {
				resp, err := k.client.Post(base+"/v1/completions", "application/json", strings.NewReader("{}"))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if p := resp.Header.Get("X-Upstream-Proto"); resp.StatusCode != 200 || p != k.want {
					t.Errorf("a %s client: %s, upstream got %q, want 200 and %s", resp.Proto, resp.Status, p, k.want)
				}
			}
		})
	}
}

// grpcHealth is a gRPC health server's answer to Check (over HTTP/2
// only): status (a HealthCheckResponse's field 1) in a message frame and
// grpc-status 0, or grpc-status code with no message when code is not
// "0" (a trailers-only answer).
func grpcHealth(t *testing.T, status func() (code string, serving uint64)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 || r.Method != http.MethodPost || r.URL.Path != GRPCHealthPath || r.Header.Get("Content-Type") != "application/grpc" {
			t.Errorf("probe %s %s %s content-type %q: want a gRPC call over HTTP/2", r.Proto, r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if b, _ := io.ReadAll(r.Body); string(b) != "\x00\x00\x00\x00\x00" {
			t.Errorf("probe message %q, want an empty HealthCheckRequest frame", b)
		}
		code, serving := status()
		w.Header().Set("Content-Type", "application/grpc")
		if code != "0" {
			w.Header().Set("Grpc-Status", code)
			return
		}
		w.Header().Set("Trailer", "Grpc-Status")
		msg := []byte{0x08, byte(serving)} // field 1, varint
		frame := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))
		w.Write(append(frame, msg...))
		w.Header().Set("Grpc-Status", "0")
	})
}

// TestGRPCHealthProbe: with --probe-path /grpc.health.v1.Health/Check the
// upstream is ready only when its gRPC health check answers SERVING:
// grpc-status 14 (UNAVAILABLE) and NOT_SERVING (2) are not ready, and
// each says why.
func TestGRPCHealthProbe(t *testing.T) {
	var code = "14"
	var serving uint64 = 2
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	state := func() (string, uint64) { <-mu; defer func() { mu <- struct{}{} }(); return code, serving }
	set := func(c string, s uint64) { <-mu; code, serving = c, s; mu <- struct{}{} }
	up := httptest.NewUnstartedServer(grpcHealth(t, state))
	up.Config.Protocols = Protocols()
	up.Start()
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	a, err := New(Config{Upstream: u, ProbePath: GRPCHealthPath})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		code    string
		serving uint64
		ok      bool
		why     string
	}{
		{"14", 0, false, "gRPC health check: grpc-status 14"},
		{"0", 2, false, "gRPC health check: status NOT_SERVING"},
		{"0", 0, false, "gRPC health check: status UNKNOWN"},
		{"0", 1, true, ""},
	} {
		set(c.code, c.serving)
		ok, why, _ := a.probe(context.Background())
		if ok != c.ok || !strings.HasPrefix(why, c.why) {
			t.Errorf("grpc-status %s, status %d: ready %v (%q), want %v (%q)", c.code, c.serving, ok, why, c.ok, c.why)
		}
	}
}

// TestHealthStatus decodes HealthCheckResponse frames built by hand from
// the protobuf encoding (field 1 varint: tag 0x08): SERVING, an unknown
// field before it (field 2, length-delimited "ab": 0x12 0x02), the empty
// message (status UNKNOWN, 0), and malformed frames.
func TestHealthStatus(t *testing.T) {
	for _, c := range []struct {
		frame string
		want  uint64
		err   bool
	}{
		{"\x00\x00\x00\x00\x02\x08\x01", 1, false},
		{"\x00\x00\x00\x00\x06\x12\x02ab\x08\x02", 2, false},
		{"\x00\x00\x00\x00\x00", 0, false},
		{"\x00\x00\x00\x00\x05\x08\x01", 0, true}, // 5 announced, 2 read
		{"\x01\x00\x00\x00\x02\x08\x01", 0, true}, // compressed
		{"\x00\x00\x00\x00\x01\x08", 0, true},     // a tag without its value
		{"\x00\x00", 0, true},
	} {
		got, err := healthStatus([]byte(c.frame))
		if got != c.want || (err != nil) != c.err {
			t.Errorf("healthStatus(%q) = %d, %v; want %d, error %v", c.frame, got, err, c.want, c.err)
		}
	}
}

// TestCheckProtocol: h2c to an https upstream, a gRPC health probe with
// http1, and an unknown protocol are refused; the rest pass.
func TestCheckProtocol(t *testing.T) {
	for _, c := range []struct {
		protocol, scheme, probe string
		ok                      bool
	}{
		{"", "http", "/health", true},
		{ProtocolAuto, "https", GRPCHealthPath, true},
		{ProtocolAuto, "http", GRPCHealthPath, true},
		{ProtocolH2C, "http", GRPCHealthPath, true},
		{ProtocolH2C, "https", "/health", false},
		{ProtocolHTTP1, "http", GRPCHealthPath, false},
		{"h2", "http", "/health", false},
	} {
		if err := CheckProtocol(c.protocol, c.scheme, c.probe); (err == nil) != c.ok {
			t.Errorf("CheckProtocol(%q, %q, %q) = %v, want ok %v", c.protocol, c.scheme, c.probe, err, c.ok)
		}
	}
}

// TestDrainH2CGoesAway: while draining, a request over an HTTP/2
// connection that is refused (503: the upstream is down) is the last on
// that connection, even with another request of it still held, so that
// the client's retry opens a new connection, through the Service to
// another activator: a gateway's connection carries many clients'
// requests and is never idle while traffic flows, so Go's server, which
// sends GOAWAY once an HTTP/2 connection is idle while keep-alives are
// off, would keep it.
func TestDrainH2CGoesAway(t *testing.T) {
	a, srv := serve(t, Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, ProbeInterval: 50 * time.Millisecond, HoldTimeout: 2 * time.Second}, Protocols())
	client := h2cClient()
	heldDone := make(chan struct{})
	go func() {
		defer close(heldDone)
		if resp, err := client.Get(srv.URL + "/v1/models"); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "a request held", 5*time.Second, func() bool { return a.Held() == 1 })
	a.Drain()
	srv.Config.SetKeepAlivesEnabled(false) // as `infscale activator` drains
	get := func() (int, bool) {
		var reused bool
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/models", nil)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, reused
	}
	if code, reused := get(); code != http.StatusServiceUnavailable || !reused {
		t.Fatalf("a request while draining: %d, on the held request's connection %v; want 503 on it", code, reused)
	}
	if code, reused := get(); reused {
		t.Errorf("its retry (%d) went on the same connection to the draining activator; want a new one (GOAWAY)", code)
	}
	<-heldDone
}

// TestH2CBidiStreamOutlivesBodyTimeout: a bidirectional stream over h2c
// (a gRPC bidi call: the client sends a message, reads the server's
// answer to it, sends the next) through a ready upstream lasts 1.2 s with
// --body-timeout 300ms; once the upstream has answered, the exchange is
// the two ends' own, and every message goes through. Before, the body
// timeout bounded the whole stream from its start: at 300 ms the
// activator cut it (the client's next send read EOF).
func TestH2CBidiStreamOutlivesBodyTimeout(t *testing.T) {
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		buf := make([]byte, 1)
		for {
			n, err := r.Body.Read(buf)
			if n > 0 {
				w.Write(buf[:n])
				http.NewResponseController(w).Flush()
			}
			if err != nil {
				return
			}
		}
	})
	up := httptest.NewUnstartedServer(echo)
	up.Config.Protocols = Protocols()
	up.Start()
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	a, base := startH2C(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond, BodyTimeout: 300 * time.Millisecond})
	waitFor(t, "ready", 5*time.Second, a.Ready)
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/pkg.Echo/Chat", pr)
	resp, err := h2cClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	for i := range 12 { // 12 messages, 100 ms apart: 1.2 s
		msg := []byte{'a' + byte(i)}
		if _, err := pw.Write(msg); err != nil {
			t.Fatalf("send %d after %v: %v", i, time.Since(start), err)
		}
		got := make([]byte, 1)
		if _, err := io.ReadFull(resp.Body, got); err != nil || got[0] != msg[0] {
			t.Fatalf("answer %d after %v: %q, %v; want %q", i, time.Since(start), got, err, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
	pw.Close()
	if rest, err := io.ReadAll(resp.Body); err != nil || len(rest) != 0 {
		t.Fatalf("end of the stream: %q, %v; want a clean end", rest, err)
	}
}

// TestHTTP1OverTLS: --upstream-protocol http1 with an https upstream that
// offers HTTP/2 and HTTP/1.1 (ALPN h2, http/1.1: most TLS servers and
// gateways) speaks HTTP/1.1 to it; auto negotiates HTTP/2. Before, the
// http1 transport, a clone of http.DefaultTransport, kept the clone's
// ALPN offer of h2: the server chose HTTP/2, the transport spoke HTTP/1.1
// on it, and every request failed ("malformed HTTP response", 502) while
// the probe said ready.
func TestHTTP1OverTLS(t *testing.T) {
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	up.EnableHTTP2 = true
	up.Config.Protocols = new(http.Protocols)
	up.Config.Protocols.SetHTTP1(true)
	up.Config.Protocols.SetHTTP2(true)
	up.TLS = &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
	up.StartTLS()
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	pool := x509.NewCertPool()
	pool.AddCert(up.Certificate())
	for _, c := range []struct{ protocol, want string }{{ProtocolHTTP1, "HTTP/1.1"}, {ProtocolAuto, "HTTP/2.0"}} {
		h1, h2c := transports(Config{Upstream: u, UpstreamProtocol: c.protocol, UpstreamIdleTimeout: time.Second})
		if h2c != nil {
			t.Errorf("%s: an h2c transport for an https upstream", c.protocol)
		}
		if h1.TLSClientConfig == nil {
			h1.TLSClientConfig = new(tls.Config)
		}
		h1.TLSClientConfig.RootCAs = pool
		resp, err := (&http.Client{Transport: h1, Timeout: 5 * time.Second}).Get(up.URL + "/v1/models")
		if err != nil {
			t.Errorf("%s: %v; want the upstream's answer over %s", c.protocol, err, c.want)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != c.want {
			t.Errorf("%s: the upstream got the request over %q, want %s", c.protocol, b, c.want)
		}
	}
}

// TestH2CIdleServerStream: a server stream over h2c (a gRPC Watch, a
// token stream that pauses) through a ready upstream sends a message,
// then nothing for 600 ms, then another, with --body-timeout 300ms: the
// client gets both and a clean end. The write deadline bounds each write
// to a client that stopped reading, not the upstream's silence between
// writes. Before, over HTTP/2 the deadline set for a write stayed armed
// after it, and Go's HTTP/2 server resets a stream when it passes,
// writing or not: the stream was reset (INTERNAL_ERROR) 300 ms after its
// first message.
func TestH2CIdleServerStream(t *testing.T) {
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		io.WriteString(w, "a")
		http.NewResponseController(w).Flush()
		time.Sleep(600 * time.Millisecond)
		io.WriteString(w, "b")
	}))
	up.Config.Protocols = Protocols()
	up.Start()
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	a, base := startH2C(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond, BodyTimeout: 300 * time.Millisecond})
	waitFor(t, "ready", 5*time.Second, a.Ready)
	resp, err := h2cClient().Get(base + "/pkg.Health/Watch")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != "ab" || resp.Proto != "HTTP/2.0" {
		t.Fatalf("stream over %s: %q, %v; want \"ab\" and a clean end over HTTP/2.0", resp.Proto, b, err)
	}
}

// TestH2CToHTTP1UpstreamSaysWhy: h2c to a server that speaks HTTP/1.1
// only (vLLM's uvicorn) fails, as docs/activator.md says: an h2c client's
// request with auto gets 502, and with h2c the probe never passes. Each
// now says what to do: the 502's body and the not-ready line name
// --upstream-protocol http1. Before, they said only Go's "frame too
// large, note that the frame header looked like an HTTP/1.1 header".
func TestH2CToHTTP1UpstreamSaysWhy(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	const hint = "--upstream-protocol http1"
	a, base := startH2C(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond})
	waitFor(t, "ready", 5*time.Second, a.Ready)
	resp, err := h2cClient().Post(base+"/v1/completions", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), hint) {
		t.Errorf("an h2c request with auto: %s %q; want 502 naming %s", resp.Status, b, hint)
	}
	var log buftest.Buffer
	a, err = New(Config{Upstream: u, UpstreamProtocol: ProtocolH2C, ProbeInterval: 20 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	waitFor(t, "a not-ready line on the HTTP/1.1 answer", 5*time.Second, func() bool { return strings.Contains(log.String(), "looked like an HTTP/1.1 header") })
	cancel()
	<-done
	if got := log.String(); !strings.Contains(got, hint) {
		t.Errorf("probe over h2c, log:\n%s\nwant the not-ready line to name %s", got, hint)
	}
}

// TestH2CWriteCutSaysWhy: the other way TestH2CToHTTP1UpstreamSaysWhy's
// HTTP/1.1-only upstream fails an h2c request: it answers the preface 400
// and closes before the request's frames are written, and the write fails
// "broken pipe" (or "connection reset by peer") with no HTTP/1.1 answer
// read. Over h2c that names --upstream-protocol http1 (conditionally);
// the same write error of an HTTP/1.1 request, or a read cut over h2c,
// does not (the upstream may have crashed).
func TestH2CWriteCutSaysWhy(t *testing.T) {
	const hint = "--upstream-protocol http1"
	cut := func(op string, errno syscall.Errno) error {
		return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"h2c write EPIPE", h2cError{cut("write", syscall.EPIPE)}, true},
		{"h2c write ECONNRESET", h2cError{cut("write", syscall.ECONNRESET)}, true},
		{"HTTP/1.1 write EPIPE", cut("write", syscall.EPIPE), false},
		{"h2c read ECONNRESET", h2cError{cut("read", syscall.ECONNRESET)}, false},
	} {
		msg := upstreamError(tc.err)
		if strings.Contains(msg, hint) != tc.want {
			t.Errorf("%s: %q; want the hint %v", tc.name, msg, tc.want)
		}
		if !strings.HasPrefix(msg, tc.err.Error()) {
			t.Errorf("%s: %q does not start with the error %q", tc.name, msg, tc.err)
		}
	}
}
