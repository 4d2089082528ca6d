package activator

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/infscale/infscale/internal/tcplisten"
)

// The upstream protocols (Config.UpstreamProtocol, `infscale activator
// --upstream-protocol`).
const (
	// ProtocolAuto proxies each request in the protocol it came in: a
	// client's cleartext HTTP/2 (h2c, as gRPC speaks it) goes upstream as
	// h2c, HTTP/1.x as HTTP/1.1 (KEDA's HTTP add-on interceptor's rule).
	// An https upstream negotiates HTTP/2 or HTTP/1.1 by TLS (ALPN)
	// whatever the client spoke.
	ProtocolAuto = "auto"
	// ProtocolHTTP1 proxies every request as HTTP/1.1: an HTTP/2 gateway
	// in front of a server that speaks HTTP/1.1 only (vLLM's, SGLang's
	// and llama.cpp's servers).
	ProtocolHTTP1 = "http1"
	// ProtocolH2C proxies every request as cleartext HTTP/2 (an http
	// upstream that speaks only HTTP/2: a gRPC server); the readiness
	// probe goes over h2c too.
	ProtocolH2C = "h2c"
)

// Protocols are the protocols the activator's server speaks to clients:
// HTTP/1.x, and cleartext HTTP/2 with prior knowledge (h2c, as gRPC
// clients and HTTP/2 gateways speak it; an HTTP/1.1 Upgrade to h2c, which
// RFC 9113 deprecates, is not taken). Set them as http.Server.Protocols.
func Protocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// GRPCHealthPath is the gRPC health checking protocol's method
// (grpc.health.v1.Health/Check, github.com/grpc/grpc/blob/master/doc/health-checking.md)
// as an HTTP/2 path. As ProbePath it makes the readiness probe a gRPC
// health check of the whole server (service ""): ready when the answer
// is grpc-status 0 with status SERVING.
const GRPCHealthPath = "/grpc.health.v1.Health/Check"

// CheckProtocol returns an error when protocol is not one of "",
// ProtocolAuto, ProtocolHTTP1 and ProtocolH2C, or cannot carry a probe at
// probePath to an upstream of scheme (h2c is cleartext: an https upstream
// negotiates HTTP/2 by TLS; a gRPC health probe, sent over h2c to an http
// upstream, needs HTTP/2).
func CheckProtocol(protocol, scheme, probePath string) error {
	switch protocol {
	case "", ProtocolAuto, ProtocolHTTP1, ProtocolH2C:
	default:
		return fmt.Errorf("upstream protocol %q: want auto, http1 or h2c", protocol)
	}
	if protocol == ProtocolH2C && scheme == "https" {
		return errors.New("upstream protocol h2c is cleartext HTTP/2: an https upstream negotiates HTTP/2 by TLS (ALPN); use auto")
	}
	if probePath == GRPCHealthPath && protocol == ProtocolHTTP1 {
		return fmt.Errorf("probe path %s is a gRPC health check, which needs HTTP/2, and gRPC requests too: use upstream protocol auto or h2c, not http1", GRPCHealthPath)
	}
	return nil
}

// transports builds the transports for cfg (Transport unset): the one
// for HTTP/1.x requests (over TLS, HTTP/2 when the upstream offers it,
// unless cfg.UpstreamProtocol is http1) and, for an http upstream, the h2c
// one (nil when the protocol is http1 or the upstream https). Each keeps
// up to UpstreamMaxIdleConns idle connections, closes them after
// cfg.UpstreamIdleTimeout, and pings an HTTP/2
// connection silent for cfg.UpstreamPingInterval (none when 0).
func transports(cfg Config) (h1, h2c *http.Transport) {
	h2 := &http.HTTP2Config{SendPingTimeout: cfg.UpstreamPingInterval, PingTimeout: cfg.UpstreamPingTimeout}
	// http.DefaultTransport's dial timeout, with ClientKeepAlive: an
	// upstream pod whose node is lost while its answer streams (nothing
	// unacknowledged on this side, so keep-alive runs) fails the request
	// 30 s after its last segment, not after the default's 165 s (30 s,
	// then 9 probes 15 s apart).
	dial := (&net.Dialer{Timeout: 30 * time.Second, KeepAliveConfig: ClientKeepAlive()}).DialContext
	h1 = http.DefaultTransport.(*http.Transport).Clone()
	h1.DialContext = dial
	h1.IdleConnTimeout = cfg.UpstreamIdleTimeout
	h1.MaxIdleConns, h1.MaxIdleConnsPerHost = UpstreamMaxIdleConns, UpstreamMaxIdleConns
	h1.HTTP2 = h2
	if cfg.UpstreamProtocol == ProtocolHTTP1 {
		h1.Protocols = new(http.Protocols)
		h1.Protocols.SetHTTP1(true)
		h1.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // no HTTP/2 over TLS either
		// Nor offered: the clone keeps http.DefaultTransport's ALPN offer
		// of h2, and a server that took it got HTTP/1.1 on an HTTP/2
		// connection (every request failed, 502).
		if h1.TLSClientConfig == nil { // Clone gave it its own otherwise
			h1.TLSClientConfig = new(tls.Config)
		}
		h1.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	if cfg.UpstreamProtocol == ProtocolHTTP1 || cfg.Upstream.Scheme == "https" {
		return h1, nil
	}
	h2c = http.DefaultTransport.(*http.Transport).Clone()
	h2c.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &resetConn{Conn: c}, nil
	}
	h2c.IdleConnTimeout = cfg.UpstreamIdleTimeout
	h2c.MaxIdleConns, h2c.MaxIdleConnsPerHost = UpstreamMaxIdleConns, UpstreamMaxIdleConns
	h2c.HTTP2 = h2
	h2c.Protocols = new(http.Protocols)
	h2c.Protocols.SetUnencryptedHTTP2(true)
	return h1, h2c
}

// upstreamTransport is the transport for cfg (Transport unset): gRPC
// requests on connections of their own, pinged after
// cfg.UpstreamGRPCPingInterval (grpcTransport), the others pinged after
// cfg.UpstreamPingInterval.
func upstreamTransport(cfg Config) http.RoundTripper {
	build := func(cfg Config) http.RoundTripper {
		h1, h2c := transports(cfg)
		if h2c == nil {
			return h1
		}
		return protocolTransport{h1: h1, h2c: h2c, always: cfg.UpstreamProtocol == ProtocolH2C}
	}
	other := build(cfg)
	cfg.UpstreamPingInterval = cfg.UpstreamGRPCPingInterval
	return grpcTransport{grpc: build(cfg), other: other}
}

// grpcTransport sends gRPC requests (Content-Type application/grpc...)
// by grpc, the others by other. gRPC servers count a ping that comes
// less than 5 minutes after the last one, while they sent no data, as a
// strike, and at the third close the connection with GOAWAY
// ENHANCE_YOUR_CALM "too_many_pings" (grpc-go's and gRPC C-core's default
// keepalive enforcement: MinTime, GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS;
// Triton's too): a unary call computing for minutes, or a Watch stream
// with nothing to say, would be cut by pings every 15 s.
type grpcTransport struct{ grpc, other http.RoundTripper }

func (t grpcTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if isGRPC(req.Header) {
		return t.grpc.RoundTrip(req)
	}
	return t.other.RoundTrip(req)
}

// isGRPC reports whether h is a gRPC request's: Content-Type
// application/grpc, alone or with a suffix (+proto, ;charset).
func isGRPC(h http.Header) bool {
	ct := h.Get("Content-Type")
	return ct == "application/grpc" || strings.HasPrefix(ct, "application/grpc+") || strings.HasPrefix(ct, "application/grpc;")
}

// protocolTransport sends each request over h2c or h1 as the upstream
// protocol says: h2c always (ProtocolH2C), for a request that came in
// over HTTP/2 (ProtocolAuto), never when h2c is nil.
type protocolTransport struct {
	h1, h2c http.RoundTripper
	always  bool // ProtocolH2C
}

func (t protocolTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.h2c != nil && (t.always || req.ProtoMajor == 2) {
		resp, err := t.h2c.RoundTrip(req)
		if err != nil {
			err = h2cError{err}
		}
		return resp, err
	}
	return t.h1.RoundTrip(req)
}

// h2cError is the error of a request sent upstream over h2c (its text
// and chain err's), so that upstreamError can tell what it means there.
type h2cError struct{ error }

func (e h2cError) Unwrap() error { return e.error }

// closedMidWrite reports a write the upstream's close cut (EPIPE, or
// ECONNRESET on a write): over h2c, what a server that speaks HTTP/1.1
// only does to the HTTP/2 preface (400, then close) when the close wins
// the race with the request's frames (TestH2CToHTTP1UpstreamSaysWhy failed
// so once in CI under -race: "write: broken pipe", no hint).
func closedMidWrite(err error) bool {
	op, ok := errors.AsType[*net.OpError](err)
	return ok && op.Op == "write" && (errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET))
}

// closeConnection makes the answer to an HTTP/1.x request r the last on
// its connection (a body not read to its end cannot be followed by
// another request). Not over HTTP/2, where the connection's other streams
// are other clients' requests (a gateway's) and a stream's unread body is
// reset with the stream alone; Go's server would send GOAWAY.
func closeConnection(rw http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor < 2 {
		rw.Header().Set("Connection", "close")
	}
}

// http1Answer is what h2c to a server that speaks HTTP/1.1 only (vLLM's,
// SGLang's, llama.cpp's) fails with: Go's HTTP/2 framer read an HTTP/1.1
// answer ("... note that the frame header looked like an HTTP/1.1
// header").
const http1Answer = "looked like an HTTP/1.1 header"

// h2cHint is the advice added to an error that is an HTTP/1.1 answer to
// h2c (http1Answer), else "".
func h2cHint(err error) string {
	if err == nil || !strings.Contains(err.Error(), http1Answer) {
		return ""
	}
	return "; the upstream speaks HTTP/1.1, not cleartext HTTP/2 (h2c): set --upstream-protocol http1 for it (a gRPC health --probe-path needs an HTTP/2 server)"
}

// notEstablished is Go's HTTP/2 transport's error when a new connection
// closed before its first request could go out: over h2c, what a server
// that speaks HTTP/1.1 only does to the HTTP/2 preface (it answers 400
// and closes), when the close is seen before the answer is read (3 runs
// of 10 of TestH2CToHTTP1UpstreamSaysWhy under -race on a loaded machine).
const notEstablished = "client conn could not be established"

// upstreamError is a failed proxied request's error for the client's 502:
// err, with h2cHint's advice (also, for a request sent over h2c (an
// h2cError), for notEstablished and for a write its upstream cut,
// closedMidWrite); or, when Go's HTTP/2 transport could
// not send again a request the upstream refused unprocessed ("cannot
// retry err [...] after Request.Body was written; define
// Request.GetBody"), why in the client's terms: a body streamed from the
// client is not kept; or, after a PROTOCOL_ERROR reset, that the upstream
// may have processed it.
func upstreamError(err error) string {
	msg := err.Error()
	if _, viaH2C := errors.AsType[h2cError](err); viaH2C {
		switch {
		case strings.Contains(msg, notEstablished):
			return msg + "; the upstream closed the cleartext HTTP/2 (h2c) connection before its first request: if it speaks HTTP/1.1 only, set --upstream-protocol http1 for it"
		case closedMidWrite(err):
			return msg + "; the upstream closed the cleartext HTTP/2 (h2c) connection while the request was sent: if it speaks HTTP/1.1 only, set --upstream-protocol http1 for it"
		}
	}
	if !strings.Contains(msg, "define Request.GetBody") {
		return msg + h2cHint(err)
	}
	why := msg
	if i, j := strings.Index(msg, "err ["), strings.LastIndex(msg, "] after"); i >= 0 && j > i {
		why = msg[i+len("err [") : j]
	}
	if strings.Contains(why, "PROTOCOL_ERROR") {
		// Retried by Go's transport as if refused, but it does not say
		// the upstream left the request unprocessed (resetConn).
		return "the upstream reset the request's HTTP/2 stream (" + why + ") after its body had begun to be sent: it may have been processed, so it was not sent again"
	}
	return "the upstream refused the request unprocessed (" + why + "), after its body had begun to be sent; the body was streamed from the client, not held, so it could not be sent again: send the request again"
}

// grpcHealthRequest is a grpc.health.v1.HealthCheckRequest for the whole
// server (service "": an empty message) in a gRPC message frame: not
// compressed, length 0.
var grpcHealthRequest = []byte{0, 0, 0, 0, 0}

// grpcServingStatus is grpc.health.v1.HealthCheckResponse.ServingStatus
// SERVING.
const grpcServingStatus = 1

// newGRPCHealthCheck is a gRPC health check of the whole server at url (a
// POST of grpcHealthRequest, GRPCHealthPath's).
func newGRPCHealthCheck(ctx context.Context, url string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(grpcHealthRequest))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	return req, nil
}

// grpcServing reads a 200 answer to newGRPCHealthCheck: "" when the
// server is SERVING, else why not; an error when its body could not be
// read.
func grpcServing(resp *http.Response) (why string, err error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", err
	}
	// grpc-status is a trailer (set once the body is read), or a header
	// in a trailers-only answer.
	st := resp.Trailer.Get("Grpc-Status")
	if st == "" {
		st = resp.Header.Get("Grpc-Status")
	}
	if st != "0" {
		if st == "" {
			return "gRPC health check: no grpc-status in the answer (not a gRPC server?)", nil
		}
		return fmt.Sprintf("gRPC health check: grpc-status %s %s", st, resp.Trailer.Get("Grpc-Message")+resp.Header.Get("Grpc-Message")), nil
	}
	status, err := healthStatus(body)
	if err != nil {
		return "gRPC health check: " + err.Error(), nil
	}
	if status != grpcServingStatus {
		return fmt.Sprintf("gRPC health check: status %s", servingStatus(status)), nil
	}
	return "", nil
}

// healthStatus reads a HealthCheckResponse's status (field 1, a varint;
// absent: 0, UNKNOWN) from one uncompressed gRPC message frame.
func healthStatus(frame []byte) (uint64, error) {
	if len(frame) < 5 {
		return 0, fmt.Errorf("answer of %d bytes, not a gRPC message", len(frame))
	}
	if frame[0] != 0 {
		return 0, errors.New("compressed answer (the probe asks for none)")
	}
	msg := frame[5:]
	if n := binary.BigEndian.Uint32(frame[1:5]); uint64(n) != uint64(len(msg)) {
		return 0, fmt.Errorf("message of %d bytes announced, %d read", n, len(msg))
	}
	var status uint64
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return 0, fmt.Errorf("malformed HealthCheckResponse: %v", protowire.ParseError(n))
		}
		msg = msg[n:]
		if num == 1 && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(msg)
			if m < 0 {
				return 0, fmt.Errorf("malformed HealthCheckResponse: %v", protowire.ParseError(m))
			}
			status, msg = v, msg[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, msg)
		if m < 0 {
			return 0, fmt.Errorf("malformed HealthCheckResponse: %v", protowire.ParseError(m))
		}
		msg = msg[m:]
	}
	return status, nil
}

// servingStatus names a HealthCheckResponse.ServingStatus.
func servingStatus(s uint64) string {
	switch s {
	case 0:
		return "UNKNOWN"
	case 1:
		return "SERVING"
	case 2:
		return "NOT_SERVING"
	case 3:
		return "SERVICE_UNKNOWN"
	}
	return strconv.FormatUint(s, 10)
}

// ClientKeepAlive is the TCP keep-alive of the connections clients open
// to the activator (Listen), and of those it dials upstream: a connection silent for 15 s is probed every
// 5 s, and closed after 3 probes go unanswered, which ends its requests (a
// held one leaves the held count as a client that left). So a client whose
// node was lost (no FIN or reset; its kernel answers nothing) is known 30 s
// after its last segment, over HTTP/1.1 too, where nothing else can ask a
// client that sends nothing; Go's default (15 s, then every 15 s, 9 probes)
// took 150 s. A live client's kernel answers the probes whatever its
// request's silence. A peer whose kernel lives on (a hung gateway process,
// a TCP proxy in between) answers them: over HTTP/2 the pings
// (ServerHTTP2) find it, over HTTP/1.1 nothing does before --hold-timeout.
func ClientKeepAlive() net.KeepAliveConfig {
	return net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3}
}

// ClientUserTimeout is the TCP user timeout (TCP_USER_TIMEOUT, Linux) of
// the connections clients open to the activator (Listen): data the client
// has not acknowledged for that long closes the connection, which fails
// the answer's next write and cancels the upstream request. It is the
// keep-alive's own bound (ClientKeepAlive: 15 s + 3 x 5 s), for a client
// lost while the answer streams to it: keep-alive probes only a connection
// with nothing in flight, so a dead client's unacknowledged chunks were
// retransmitted for about 15 min (tcp_retries2), the upstream request
// generating for nobody all along (the write blocks only once the socket
// buffers fill, then --body-timeout cuts it). A live client acknowledges
// each segment within a round trip, however slowly it reads; one whose
// receive window stays shut (it reads nothing) is cut after the same 30 s
// (Linux 5.11 or later), or by --body-timeout once the buffers are full if
// that comes first. On an idle connection Linux closes at the user timeout
// after the last segment received, once a probe went unanswered: 30 s, as
// the probes' count alone did. Not set elsewhere than Linux.
func ClientUserTimeout() time.Duration {
	ka := ClientKeepAlive()
	return ka.Idle + time.Duration(ka.Count)*ka.Interval
}

// Listen binds addr (host:port, TCP) for clients as tcplisten.Listen does
// (from and flag word a failure), with ClientKeepAlive and
// ClientUserTimeout on every accepted connection.
func Listen(addr, from, flag string) (net.Listener, error) {
	return listen(addr, from, flag, ClientUserTimeout())
}

// listen is Listen with a user timeout of userTimeout (none when 0): set on
// the listening socket, which the accepted ones inherit.
func listen(addr, from, flag string, userTimeout time.Duration) (net.Listener, error) {
	lc := net.ListenConfig{KeepAliveConfig: ClientKeepAlive()}
	if userTimeout > 0 {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var err error
			if cerr := c.Control(func(fd uintptr) { err = setUserTimeout(fd, userTimeout) }); cerr != nil {
				return cerr
			}
			return err
		}
	}
	return tcplisten.ListenConfig(lc, addr, from, flag)
}

// ServerHTTP2 is the HTTP/2 configuration of the server clients connect
// to (http.Server.HTTP2; `infscale activator` gives it
// DefaultClientPingInterval and DefaultClientPingTimeout): a client
// connection (h2c: a gateway's, a gRPC client's) on which nothing has been
// read for pingInterval is pinged, and closed when the ping is not
// answered within pingTimeout, which ends its requests (a held one leaves
// the held count as a client that left). Without it a client gone without
// a FIN or reset kept its held requests counted as demand: a hung gateway
// or sidecar (its kernel still acknowledges) until --hold-timeout, a lost
// node until TCP keep-alive found it (ClientKeepAlive). A live client
// answers a ping at once, however long its request is silent; gRPC
// clients answer server pings without counting them (keepalive
// enforcement is a server's, against clients' pings).
func ServerHTTP2(pingInterval, pingTimeout time.Duration) *http.HTTP2Config {
	return &http.HTTP2Config{SendPingTimeout: pingInterval, PingTimeout: pingTimeout}
}

// resetConn is an upstream h2c connection that counts the RST_STREAM
// frames with PROTOCOL_ERROR read on it. Go's HTTP/2 transport sends a
// request again after one (golang/go#47635) as after REFUSED_STREAM, but
// unlike REFUSED_STREAM or a GOAWAY below its stream it does not say the
// upstream left the request unprocessed: a held body is then not given
// to the transport again (forward), or a POST was sent up to 9 times.
type resetConn struct {
	net.Conn
	protoResets atomic.Int64
	// The frame being read (only the transport's read loop reads): its
	// 9-byte header, hn bytes of it so far; then left bytes of payload,
	// the first 4 of a RST_STREAM's its error code.
	hdr      [9]byte
	hn, left int
	code     [4]byte
	cn       int
}

func (c *resetConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.scan(p[:n])
	return n, err
}

// scan follows the frames in b (RFC 9113 4.1: length 24 bits, type,
// flags, stream; a server's first bytes are its SETTINGS frame).
func (c *resetConn) scan(b []byte) {
	const rstStream, protocolError = 0x3, 0x1
	for len(b) > 0 {
		if c.hn < len(c.hdr) {
			k := copy(c.hdr[c.hn:], b)
			c.hn, b = c.hn+k, b[k:]
			if c.hn == len(c.hdr) {
				c.left, c.cn = int(c.hdr[0])<<16|int(c.hdr[1])<<8|int(c.hdr[2]), 0
			}
		} else {
			k := min(c.left, len(b))
			if c.hdr[3] == rstStream {
				c.cn += copy(c.code[min(c.cn, 4):], b[:k])
			}
			c.left, b = c.left-k, b[k:]
		}
		if c.hn == len(c.hdr) && c.left == 0 {
			if c.hdr[3] == rstStream && c.cn == 4 && binary.BigEndian.Uint32(c.code[:]) == protocolError {
				c.protoResets.Add(1)
			}
			c.hn = 0
		}
	}
}
