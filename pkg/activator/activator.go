// Package activator is a reverse proxy for a model scaled to zero: while
// the upstream's readiness probe fails it holds requests in a bounded FIFO
// queue, reading their bodies into memory within a byte budget, and
// exports how many it holds (infscale_activator_held_requests, which
// infscale reads as `held` and scales from zero on); once the probe passes
// it releases them all at once, oldest first. Each request is forwarded
// once and the upstream's answer, whatever it is (a 503 included), goes
// back to the client, as KEDA's HTTP add-on interceptor and Knative's
// activator do: readiness comes from the probe alone, and a request is
// tried again only when its connection was refused or not made (the dial
// failed) before any byte of it was sent, or when the protocol says the
// upstream did not process it (an HTTP/2 GOAWAY or REFUSED_STREAM: the
// transport sends it again, a held body from memory). A held request that waits past
// HoldTimeout gets 503 with Retry-After; one arriving at a full queue or
// byte budget gets 429 with Retry-After. Responses stream through
// unbuffered (server-sent events flush per write). Requests in flight
// upstream are not counted: the servers' own running and waiting count
// them, so `queue` does not count a request twice.
package activator

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"

	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/internal/httpurl"
)

// DefaultIdleTimeout is how long a client's keep-alive connection may stay
// open with no request on it (http.Server.IdleTimeout; between requests,
// never during one, so a held request is not cut): `infscale activator`'s
// --idle-timeout default, longer than the idle timeouts of the usual
// clients and proxies in front (Go's 90 s, nginx's and AWS ALB's 60 s).
const DefaultIdleTimeout = 2 * time.Minute

// DefaultUpstreamIdleTimeout is how long an upstream keep-alive
// connection is kept idle for the next proxied request
// (http.Transport.IdleConnTimeout): `infscale activator`'s
// --upstream-idle-timeout default, shorter than the model servers' own
// (vLLM's and SGLang's uvicorn close an idle connection after 5 s:
// VLLM_HTTP_TIMEOUT_KEEP_ALIVE, uvicorn's timeout_keep_alive). Kept
// longer, the activator sends a request on a connection the server is
// closing: the server never reads it, and the client gets a 502.
const DefaultUpstreamIdleTimeout = 4 * time.Second

// UpstreamMaxIdleConns is how many idle keep-alive connections to the
// upstream each transport keeps for the next proxied requests
// (http.Transport.MaxIdleConnsPerHost, and MaxIdleConns: the upstream is
// one host, its Service). Go's default keeps 2 per host: at 50 requests
// at a time, 80% of them (7473 of 9392 in 5 s) dialled a new connection
// and left a TIME_WAIT socket behind, where each reuses one now.
// Knative's activator keeps 100 per host (MaxIdleProxyConnsPerHost),
// KEDA's HTTP add-on interceptor 20. They are closed after
// UpstreamIdleTimeout all the same, so a burst's connections (a release
// of --max-held requests) do not stay open.
const UpstreamMaxIdleConns = 100

// DefaultUpstreamPingInterval is how long an upstream HTTP/2 connection
// may be silent (no frame read) before it is pinged, and
// DefaultUpstreamPingTimeout how long the ping's answer may take before
// the connection is closed and its requests fail (502, or an answer cut):
// a dead connection is known within 30 s of its last frame, where a model
// server's own silence (a non-streamed completion) costs a ping frame
// every 15 s. 15 s each: the ping's answer is a control frame a live
// server sends at once; Kubernetes' client-go uses 30 s and 15 s.
const (
	DefaultUpstreamPingInterval = 15 * time.Second
	DefaultUpstreamPingTimeout  = 15 * time.Second
)

// DefaultClientPingInterval and DefaultClientPingTimeout are the pings of
// client HTTP/2 connections (ServerHTTP2): a dead gateway connection's
// held requests leave the held count within 30 s of its last frame, as
// upstream connections' (DefaultUpstreamPingInterval); a live client's
// silence costs a ping frame each way every 15 s.
const (
	DefaultClientPingInterval = 15 * time.Second
	DefaultClientPingTimeout  = 15 * time.Second
)

// DefaultUpstreamGRPCPingInterval is DefaultUpstreamPingInterval for
// gRPC requests' connections: above the 5 minutes gRPC servers require
// between pings while they send no data (grpcTransport), with 10 s to
// spare.
const DefaultUpstreamGRPCPingInterval = 5*time.Minute + 10*time.Second

// DefaultMaxHeldBytes is the default byte budget for held bodies: 128 MiB,
// half of deploy/activator's 256 MiB memory limit (the rest: about 22 KB
// per held request, the runtime, and the garbage collector's headroom).
const DefaultMaxHeldBytes = 128 << 20

// MaxHeaderBytes bounds a request's header block (http.Server's
// MaxHeaderBytes; over HTTP/2, its header list): 64 KiB, Envoy's default
// is 60 KiB. Go's default, 1 MiB, of small fields takes about 8.6 MB of
// heap once parsed, per connection: a few hundred clients sending it at
// once took gigabytes.
const MaxHeaderBytes = 64 << 10

// headerFieldBytes is the heap a parsed header field takes besides its
// name's and value's bytes: map entry, slice and string headers (about
// 113 bytes measured over 7,400 small fields).
const headerFieldBytes = 128

// heldHeaderAllowance is the part of a held request's headers
// (headerBytes) that HeldRequestBytes covers; only the rest counts in
// MaxHeldBytes, so that a usual request's (a few hundred bytes to a few
// KB: an API key, a JWT, cookies) does not.
const heldHeaderAllowance = 8 << 10

// headerBytes is the heap h takes, about: beyond heldHeaderAllowance,
// what a held request's headers count in MaxHeldBytes.
func headerBytes(h http.Header) int64 {
	var n int64
	for k, vs := range h {
		for _, v := range vs {
			n += int64(len(k)+len(v)) + headerFieldBytes
		}
	}
	return n
}

// HeldRequestBytes is the memory one held request takes besides its body,
// in bytes: about 22 KB (heap and goroutine stacks, measured over 1,000
// held requests by BenchmarkHold1000; docs/evaluation/PERFORMANCE.md).
const HeldRequestBytes = 22 << 10

// MaxHeldLimit bounds Config.MaxHeld: 100,000 held requests take about
// 2.1 GiB besides their bodies, and a queue that long is 1,100 req/s
// arriving through a 90 s cold start.
const MaxHeldLimit = 100_000

// Config configures an Activator. Zero fields take the defaults noted.
type Config struct {
	// Upstream is the base URL requests are proxied to (a Service).
	Upstream *url.URL
	// HoldTimeout is the longest a request is held (default 5 min; a cold
	// start of 1.5 to 10 minutes must fit in it, or clients see 503s).
	HoldTimeout time.Duration
	// MaxHeld bounds the queue (default 1000); beyond it, 429.
	MaxHeld int
	// MaxHeldBytes bounds the bytes of the bodies held in memory (default
	// DefaultMaxHeldBytes); a request that would go beyond it gets 429,
	// one whose body alone is larger 413.
	MaxHeldBytes int64
	// BodyTimeout is the longest a held request's body may take to arrive
	// from the client (then 408), and the longest a released request may
	// take to be written upstream (then 504); a proxied body's client
	// reads have the same deadline (over HTTP/2 until the answer begins:
	// a duplex stream, gRPC's), and so has each write of an answer to
	// a client that stopped reading (then the answer is cut and the
	// upstream request cancelled) (default 60 s).
	BodyTimeout time.Duration
	// ProbePath is the upstream's readiness endpoint (default /health,
	// vLLM's; 200 means ready), or GRPCHealthPath (a gRPC health check;
	// SERVING means ready).
	ProbePath string
	// ProbeInterval is how often readiness is probed (default 500 ms).
	ProbeInterval time.Duration
	// RetryAfter is the Retry-After of a 503 or 429 (default 5 s).
	RetryAfter time.Duration
	// Client probes the upstream (default: a 2 s timeout, over h2c with
	// ProtocolH2C or a gRPC health probe on an http upstream).
	Client *http.Client
	// Transport carries proxied requests (default http.DefaultTransport's
	// clones dialing with ClientKeepAlive, with UpstreamIdleTimeout and the
	// HTTP/2 pings, gRPC requests on their own: no deadline on an answer,
	// which a non-streamed completion may take minutes to start).
	Transport http.RoundTripper
	// UpstreamIdleTimeout closes an upstream connection idle that long
	// (default DefaultUpstreamIdleTimeout); keep it shorter than the
	// model server's keep-alive timeout. Not used with Transport.
	UpstreamIdleTimeout time.Duration
	// UpstreamProtocol is how requests go upstream: ProtocolAuto (""; in
	// the client's protocol, h2c for an HTTP/2 client), ProtocolHTTP1 or
	// ProtocolH2C (CheckProtocol). Not used with Transport, except that
	// ProtocolH2C then still probes over h2c.
	UpstreamProtocol string
	// UpstreamPingInterval: an upstream HTTP/2 connection (h2c, or h2
	// by TLS) on which nothing has been read this long is pinged, and
	// closed, failing its requests, when the ping is not answered within
	// UpstreamPingTimeout: a peer gone without a FIN or reset (a pod on a
	// partitioned node) held them, and every request multiplexed on the
	// connection after them, until the clients gave up (defaults
	// DefaultUpstreamPingInterval, DefaultUpstreamPingTimeout). gRPC
	// requests go on connections of their own, pinged after
	// UpstreamGRPCPingInterval (default DefaultUpstreamGRPCPingInterval).
	// Not used with Transport.
	UpstreamPingInterval, UpstreamPingTimeout, UpstreamGRPCPingInterval time.Duration
	// Log, if set, gets a line each time the probe's answer changes
	// readiness (and the first probe's when not ready), with the failed
	// probe's status or error, each kind of failure once while not ready;
	// and a line for an upstream failure (each one counted in
	// infscale_activator_upstream_failures_total), the first and then at
	// most one each FailureLogInterval, with how many failed since the
	// last line: a failing upstream at thousands of requests a second
	// does not flood the log. Failures left out of a line are said by
	// Run's next probe once the interval has passed, so a burst that
	// stops is counted whole in the log too.
	Log *slog.Logger
}

// FailureLogInterval is the least time between two log lines of upstream
// failures (Config.Log).
const FailureLogInterval = 10 * time.Second

// Activator is the proxy. Create it with New, run its probe with Run, and
// serve it as an http.Handler.
type Activator struct {
	cfg   Config
	proxy *httputil.ReverseProxy
	reg   *prometheus.Registry
	id    string // sent in ProbeHeader: this activator's own probe

	failLog  *rate.Limiter // Config.Log's upstream-failure lines: one a FailureLogInterval
	failures atomic.Int64  // upstream failures not in a line yet
	// refusals are Config.Log's lines of requests answered 429 or 503
	// with Retry-After (refuse), by status: one a FailureLogInterval each.
	refusals map[int]*refusalLog

	held         prometheus.Gauge
	heldBytes    prometheus.Gauge
	ready        prometheus.Gauge
	released     prometheus.Counter
	timeouts     prometheus.Counter
	rejected     prometheus.Counter
	direct       prometheus.Counter
	probeFail    prometheus.Counter
	refused      prometheus.Counter
	bodyTimeouts prometheus.Counter
	badPath      prometheus.Counter
	clientLeft   prometheus.Counter
	upFailed     prometheus.Counter

	// upgrades counts the upgraded connections (WebSockets) being
	// proxied, upgradesOpen the same as a number (WaitUpgrades).
	upgrades     sync.WaitGroup
	upgradesOpen atomic.Int64
	// inFlight counts the requests being proxied now, upgraded ones
	// apart (InFlight).
	inFlight atomic.Int64
	// ws are the WebSockets among them (CloseUpgrades).
	wsMu sync.Mutex
	ws   map[*wsConn]struct{}

	mu      sync.Mutex
	up      bool      // the last probe passed; the queue is then empty
	drain   bool      // Drain was called: no new request is held
	queue   []*waiter // held, oldest first (gone ones skipped)
	count   int       // held: queued and not gone
	bytes   int64     // reserved by bodies in memory
	probeCh chan struct{}
}

// waiter is one held request: release is closed when it may go upstream.
type waiter struct {
	release chan struct{}
	gone    bool // timed out or the client left; skipped by the releaser
}

// New validates cfg and builds the Activator with its own registry.
func New(cfg Config) (*Activator, error) {
	if err := httpurl.Check(cfg.Upstream); errors.Is(err, httpurl.ErrPort) {
		return nil, fmt.Errorf("activator: upstream %s", err)
	} else if err != nil {
		return nil, errors.New("activator: upstream must be an http(s) URL such as http://chat:8000")
	}
	if cfg.HoldTimeout <= 0 {
		cfg.HoldTimeout = 5 * time.Minute
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = 1000
	}
	if cfg.MaxHeldBytes <= 0 {
		cfg.MaxHeldBytes = DefaultMaxHeldBytes
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = time.Minute
	}
	if cfg.ProbePath == "" {
		cfg.ProbePath = "/health"
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = 500 * time.Millisecond
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = 5 * time.Second
	}
	if err := CheckProtocol(cfg.UpstreamProtocol, cfg.Upstream.Scheme, cfg.ProbePath); err != nil {
		return nil, fmt.Errorf("activator: %w", err)
	}
	if cfg.UpstreamIdleTimeout <= 0 {
		cfg.UpstreamIdleTimeout = DefaultUpstreamIdleTimeout
	}
	if cfg.UpstreamPingInterval <= 0 {
		cfg.UpstreamPingInterval = DefaultUpstreamPingInterval
	}
	if cfg.UpstreamPingTimeout <= 0 {
		cfg.UpstreamPingTimeout = DefaultUpstreamPingTimeout
	}
	if cfg.UpstreamGRPCPingInterval <= 0 {
		cfg.UpstreamGRPCPingInterval = DefaultUpstreamGRPCPingInterval
	}
	if cfg.Transport == nil {
		cfg.Transport = upstreamTransport(cfg)
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 2 * time.Second}
		if cfg.Upstream.Scheme == "http" && (cfg.UpstreamProtocol == ProtocolH2C || cfg.ProbePath == GRPCHealthPath) {
			ping := cfg.UpstreamPingInterval
			if cfg.ProbePath == GRPCHealthPath {
				ping = cfg.UpstreamGRPCPingInterval
			}
			_, h2c := transports(Config{Upstream: cfg.Upstream, UpstreamIdleTimeout: cfg.UpstreamIdleTimeout, UpstreamPingInterval: ping, UpstreamPingTimeout: cfg.UpstreamPingTimeout})
			cfg.Client.Transport = h2c
		}
	}
	a := &Activator{cfg: cfg, reg: prometheus.NewRegistry(), probeCh: make(chan struct{}, 1), id: rand.Text(), ws: map[*wsConn]struct{}{},
		failLog: rate.NewLimiter(rate.Every(FailureLogInterval), 1),
		refusals: map[int]*refusalLog{
			http.StatusTooManyRequests:    {lim: rate.NewLimiter(rate.Every(FailureLogInterval), 1)},
			http.StatusServiceUnavailable: {lim: rate.NewLimiter(rate.Every(FailureLogInterval), 1)},
		}}
	a.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(cfg.Upstream)
			r.SetXForwarded()
		},
		Transport:     refusedTransport{cfg.Transport},
		FlushInterval: -1, // flush every write: token streams pass unbuffered
		ErrorLog:      proxyErrorLog(cfg.Log),
		ModifyResponse: func(resp *http.Response) error {
			// An answer cut off mid-body (a reset mid-stream, a pod gone):
			// the client's stream ends in an error; counted here. Not a
			// 101's, the upgraded connection ReverseProxy writes to: a
			// WebSocket's is followed frame by frame (CloseUpgrades).
			if resp.StatusCode == http.StatusSwitchingProtocols {
				if rwc, ok := resp.Body.(io.ReadWriteCloser); ok && isWebSocket(resp.Header) {
					resp.Body = a.newWSConn(resp.Request.Context(), rwc)
				}
				return nil
			}
			req := resp.Request
			resp.Body = &cutBody{ReadCloser: resp.Body, ctx: req.Context(), failed: func(err error) {
				a.upstreamFailed(req, resp.StatusCode, "the answer was cut off mid-body: "+err.Error())
			}}
			if at, _ := resp.Request.Context().Value(attemptKey{}).(*attempt); at != nil && at.answered != nil {
				at.answered()
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			malformed := clientMalformed(r)
			switch {
			case errors.Is(err, errRefused):
				// ServeHTTP holds it again; nothing was sent or written.
			case errors.Is(context.Cause(r.Context()), errClientBodyTimeout) || clientStalled(r):
				a.bodyTimeouts.Inc()
				closeConnection(w, r) // its body is not read to its end
				a.writeError(w, fmt.Sprintf("activator: the request body did not arrive from the client within %v", cfg.BodyTimeout), http.StatusRequestTimeout)
			case malformed != nil:
				// The client's body, not the upstream: not an upstream failure.
				closeConnection(w, r) // its body cannot be read to its end
				a.writeError(w, "activator: the request's chunked body is malformed: "+malformed.Error(), http.StatusBadRequest)
			case errors.Is(context.Cause(r.Context()), errWriteTimeout):
				why := fmt.Sprintf("upstream did not take the request within %v", cfg.BodyTimeout)
				a.upstreamFailed(r, http.StatusGatewayTimeout, why)
				closeConnection(w, r) // nor this one's
				a.writeError(w, "activator: "+why, http.StatusGatewayTimeout)
			case errors.Is(err, context.Canceled) || context.Cause(r.Context()) == context.Canceled:
				// The client left (whatever the transport's error then), or
				// shut its sending side (the same FIN): no answer, not
				// net/http's empty 200 (leave).
				panic(http.ErrAbortHandler)
			default:
				why := upstreamError(err)
				a.upstreamFailed(r, http.StatusBadGateway, why)
				// The client's body may not have been read to its end.
				closeConnection(w, r)
				a.writeError(w, "activator: upstream: "+why, http.StatusBadGateway)
			}
		},
	}
	f := prometheus.NewGauge
	c := prometheus.NewCounter
	a.held = f(prometheus.GaugeOpts{Name: "infscale_activator_held_requests", Help: "Requests held while no upstream endpoint is ready (not those in flight upstream)."})
	a.heldBytes = f(prometheus.GaugeOpts{Name: "infscale_activator_held_bytes", Help: "Bytes of held requests' bodies and headers in memory (bounded by --max-held-bytes)."})
	a.ready = f(prometheus.GaugeOpts{Name: "infscale_activator_upstream_ready", Help: "1 when the upstream's last readiness probe succeeded, else 0."})
	a.released = c(prometheus.CounterOpts{Name: "infscale_activator_released_total", Help: "Held requests released upstream once it was ready."})
	a.timeouts = c(prometheus.CounterOpts{Name: "infscale_activator_hold_timeouts_total", Help: "Held requests answered 503 after the hold timeout."})
	a.rejected = c(prometheus.CounterOpts{Name: "infscale_activator_rejected_total", Help: "Requests refused on arrival: 429 (queue or byte budget full), 413 (body larger than the byte budget), or 503 (arrived while draining, upstream not ready)."})
	a.direct = c(prometheus.CounterOpts{Name: "infscale_activator_proxied_total", Help: "Requests proxied at once (the upstream was ready)."})
	a.probeFail = c(prometheus.CounterOpts{Name: "infscale_activator_probe_failures_total", Help: "Readiness probes that failed."})
	a.refused = c(prometheus.CounterOpts{Name: "infscale_activator_upstream_refused_total", Help: "Attempts whose upstream connection was refused or not made (the dial failed: DNS, unreachable, timeout) before any byte was sent; the request was held again."})
	a.bodyTimeouts = c(prometheus.CounterOpts{Name: "infscale_activator_body_timeouts_total", Help: "Requests whose body did not arrive within the body timeout (408)."})
	a.badPath = c(prometheus.CounterOpts{Name: "infscale_activator_bad_path_total", Help: "Requests refused with 400: a dot segment in the decoded path."})
	a.clientLeft = c(prometheus.CounterOpts{Name: "infscale_activator_client_left_total", Help: "Held requests whose client went away (closed or reset its connection) before they were released or answered."})
	a.upFailed = c(prometheus.CounterOpts{Name: "infscale_activator_upstream_failures_total", Help: "Requests sent upstream that got no whole answer: 502 (the upstream failed before answering), 504 (it did not take the request), or an answer cut off mid-body (the client's stream ends in an error). Never sent again."})
	a.reg.MustRegister(a.held, a.heldBytes, a.ready, a.released, a.timeouts, a.rejected, a.direct, a.probeFail, a.refused, a.bodyTimeouts, a.badPath, a.clientLeft, a.upFailed)
	return a, nil
}

// Drain starts a drain (SIGTERM): from now on a request that arrives and
// would be held is answered 503 with Retry-After at once (its retry
// reaches another activator through the Service), so the held count only
// falls and the drain ends within HoldTimeout; requests the upstream
// takes at once are still proxied, and those held before still wait.
func (a *Activator) Drain() {
	a.mu.Lock()
	a.drain = true
	a.mu.Unlock()
}

// isUpgrade reports whether h asks to switch protocols (RFC 9110 7.8):
// an Upgrade header and "upgrade" among Connection's tokens, as
// ReverseProxy tells an upgrade.
func isUpgrade(h http.Header) bool {
	if h.Get("Upgrade") == "" {
		return false
	}
	for _, v := range h["Connection"] {
		for tok := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}

// dropH2CUpgrade removes h2c from h's Upgrade (the whole header when
// nothing else is offered) and the HTTP2-Settings that goes with it: an
// HTTP/1.1 upgrade to cleartext HTTP/2, which RFC 9113 deprecates, is not
// passed upstream. An upstream that took it (101) would be spoken to
// directly over the tunnel ReverseProxy then opens, on any path: out of
// the --upstream prefix and past checkPath (h2c smuggling). A server may
// ignore an Upgrade, so the request goes on as HTTP/1.1, as it would to an
// upstream that does not speak h2c.
func dropH2CUpgrade(h http.Header) {
	h.Del("HTTP2-Settings")
	vs := h.Values("Upgrade")
	if len(vs) == 0 {
		return
	}
	var kept []string
	for _, v := range vs {
		for tok := range strings.SplitSeq(v, ",") {
			tok = strings.TrimSpace(tok)
			name, _, _ := strings.Cut(tok, "/")
			if tok != "" && !strings.EqualFold(strings.TrimSpace(name), "h2c") {
				kept = append(kept, tok)
			}
		}
	}
	if len(kept) == 0 {
		h.Del("Upgrade")
		return
	}
	h["Upgrade"] = []string{strings.Join(kept, ", ")}
}

// Upgrades is the number of upgraded connections (WebSockets) open
// through the activator now.
func (a *Activator) Upgrades() int { return int(a.upgradesOpen.Load()) }

// InFlight is the number of requests being proxied now (sent upstream,
// their answers not yet ended), upgraded connections apart (Upgrades).
func (a *Activator) InFlight() int { return int(a.inFlight.Load()) }

// WaitUpgrades waits until every upgraded connection (a WebSocket) open
// through the activator is closed by either side, or ctx ends, and
// returns how many are still open (0 when all closed). http.Server's
// Shutdown neither waits for nor closes them (they are hijacked), so an
// exit right after it cuts them mid-session: `infscale activator` waits
// for them within its drain.
func (a *Activator) WaitUpgrades(ctx context.Context) int {
	done := make(chan struct{})
	go func() { a.upgrades.Wait(); close(done) }()
	select {
	case <-done:
		return 0
	case <-ctx.Done():
		return a.Upgrades()
	}
}

// Registry is the activator's own registry (serve it on /metrics).
func (a *Activator) Registry() *prometheus.Registry { return a.reg }

// Mux is what `infscale activator` listens with by default: its own
// endpoints (MetricsMux's) and every other request proxied by a.
func (a *Activator) Mux() *http.ServeMux {
	mux := a.MetricsMux()
	mux.Handle("/", a)
	return mux
}

// MetricsMux serves the activator's own endpoints alone: GET /metrics (the
// registry) and GET /healthz ("ok"); any other path is 404. With
// --metrics-listen it is the metrics port's, ProxyMux the proxy port's.
func (a *Activator) MetricsMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	return mux
}

// ProxyMux proxies every request by a, /metrics and /healthz included (to
// the upstream's). A ServeMux as Mux is, so that a path is cleaned and
// redirected the same way on either.
func (a *Activator) ProxyMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeldScrapeHeader) != "" {
			a.writeError(rw, "activator: this is the proxy port (--listen), which proxies /metrics to the upstream; the activator's own /metrics is on --metrics-listen: point zero.held_scrape at that port (deploy/activator: 9090)", http.StatusMisdirectedRequest)
			return
		}
		a.ServeHTTP(rw, r)
	}))
	return mux
}

// Held is the number of requests held now.
func (a *Activator) Held() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count
}

// HeldBytes is the number of body bytes held in memory now.
func (a *Activator) HeldBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bytes
}

// Ready reports the last probe's verdict.
func (a *Activator) Ready() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.up
}

// Run is the one readiness loop: it probes the upstream every
// ProbeInterval (and early, at most once a quarter interval, when a
// request comes to be held with none held before it, or a connection was
// refused) and releases every held request the moment a probe passes,
// until ctx is done.
func (a *Activator) Run(ctx context.Context) {
	tick := time.NewTicker(a.cfg.ProbeInterval)
	defer tick.Stop()
	minGap := a.cfg.ProbeInterval / 4
	was := "" // "", "ready" or the last failure's kind
	// The failure kinds logged since the upstream was last ready: each
	// once, so that probes failing in two ways by turns (an h2c probe to
	// an HTTP/1.1 server) log two lines, not one per probe.
	logged := map[string]bool{}
	for {
		last := time.Now()
		a.sayFailures()
		a.sayRefusals()
		up, why, kind := a.probe(ctx)
		now := "ready"
		if !up {
			now = kind
		}
		if a.cfg.Log != nil && now != was && ctx.Err() == nil && !logged[now] {
			if up {
				a.cfg.Log.Info("upstream ready", "probe", a.probeURL())
				clear(logged)
			} else {
				a.cfg.Log.Warn("upstream not ready; requests are held", "probe", a.probeURL(), "reason", why)
				if len(logged) >= 64 { // kinds that vary without end: bounded
					clear(logged)
				}
				logged[now] = true
			}
			was = now
		}
		a.mu.Lock()
		a.up = up
		if up {
			a.releaseAll()
		}
		a.mu.Unlock()
		if up {
			a.ready.Set(1)
		} else {
			a.ready.Set(0)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-a.probeCh:
			if d := minGap - time.Since(last); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				case <-tick.C:
					t.Stop()
				}
			}
		}
	}
}

// kick asks the loop for an early probe (coalesced).
func (a *Activator) kick() {
	select {
	case a.probeCh <- struct{}{}:
	default:
	}
}

// ProbeHeader marks an activator's readiness probe (its value: that
// activator's random id). An activator that receives its own probe answers
// 508 Loop Detected (--upstream leads back to it); one that receives
// another's while its upstream is not ready answers 503 at once: a probe
// is never held, so it never counts as a held request.
const ProbeHeader = "Infscale-Activator-Probe"

// HeldScrapeHeader marks serve's read of the held count (zero.held_scrape;
// pkg/scrape's constant of the same name). On the proxy port (ProxyMux,
// with --metrics-listen) it is answered 421 at once: held, it counted as a
// held request with no client and serve's read timed out every cycle.
const HeldScrapeHeader = "Infscale-Held-Scrape"

// scrapeTimeoutHeader is the header Prometheus sends with every scrape
// (its scrape timeout): a request carrying it is a scrape, not demand.
const scrapeTimeoutHeader = "X-Prometheus-Scrape-Timeout-Seconds"

// errLoop is the probe's reason when its request came back to this
// activator.
const errLoop = "508 Loop Detected: --upstream leads back to this activator (its own probe came back); point it at the model's Service"

// probeURL is the readiness probe's URL: the upstream's host, ProbePath.
func (a *Activator) probeURL() string {
	u := *a.cfg.Upstream
	u.Path, u.RawPath = a.cfg.ProbePath, ""
	return u.String()
}

// probe reports whether the upstream answers the probe 200, and if not why
// (the status, or the request's error) and the failure's kind (failureKind).
func (a *Activator) probe(ctx context.Context) (ok bool, why, kind string) {
	grpc := a.cfg.ProbePath == GRPCHealthPath
	var req *http.Request
	var err error
	if grpc {
		req, err = newGRPCHealthCheck(ctx, a.probeURL())
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, a.probeURL(), nil)
	}
	if err != nil {
		return false, err.Error(), err.Error()
	}
	req.Header.Set(ProbeHeader, a.id)
	resp, err := a.cfg.Client.Do(req)
	if err != nil {
		a.probeFail.Inc()
		return false, err.Error() + h2cHint(err), failureKind(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusLoopDetected && resp.Header.Get(ProbeHeader) == a.id {
		a.probeFail.Inc()
		return false, errLoop, errLoop
	}
	if resp.StatusCode != http.StatusOK {
		a.probeFail.Inc()
		return false, resp.Status, resp.Status
	}
	if grpc {
		if why, err := grpcServing(resp); err != nil {
			a.probeFail.Inc()
			return false, err.Error() + h2cHint(err), failureKind(err)
		} else if why != "" {
			a.probeFail.Inc()
			return false, why, why
		}
	}
	return true, "", ""
}

// failureKind is a failed probe's error without its connection's
// addresses, which change at every probe (a new local port each time: a
// reset connection reads "read tcp 127.0.0.1:50008->...: connection reset
// by peer"), so that the not-ready line is logged once per kind of
// failure, not once per probe: "timeout", the system's error ("connection
// reset by peer", whether the reset came while connecting, reading or
// writing, where it reads "broken pipe"; "connection refused"), or the
// failed operation and its cause.
func failureKind(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if errno == syscall.EPIPE {
			// A write on a connection the peer reset: the same fault as
			// the read's reset, which of the two is seen is timing.
			errno = syscall.ECONNRESET
		}
		return errno.Error()
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Op + ": " + op.Err.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// releaseAll lets every held request go at once, oldest first (a.mu
// held): none waits for another's write, so a slow one blocks nobody.
func (a *Activator) releaseAll() {
	for _, w := range a.queue {
		if w.gone {
			continue
		}
		close(w.release)
		a.count--
		a.held.Dec()
		// released is counted by the request itself once it goes upstream
		// (ServeHTTP), once however often it is held: one still reading
		// its body may end otherwise (the client leaves, the body stalls),
		// and is counted once, as that.
	}
	clear(a.queue)
	a.queue = a.queue[:0]
}

// ServeHTTP refuses a path with a dot segment (400); proxies r at once
// when the upstream is ready; otherwise holds it (reading its body into
// memory, so that a client that leaves frees its slot at once) until the
// upstream is ready or HoldTimeout passes, and then forwards it once. A
// request whose connection upstream is refused or not made (the dial
// failed) before any byte of it was sent is held again for a probe
// interval and tried again; any other answer or failure is the client's.
func (a *Activator) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	// The answer's last write has BodyTimeout to make progress, as each
	// proxied write has (stallWriter): net/http writes what is buffered,
	// and a chunked answer's terminator, after the handler returns, with
	// no deadline of its own, so a client that stopped reading just before
	// the end (or pipelined requests it never read the 400s of) held the
	// connection and its goroutine while it stayed connected. Deferred
	// first, so set last, after the body's linger, and for every answer;
	// net/http lifts it once the answer is written (keep-alive).
	rc := http.NewResponseController(rw)
	defer func() { _ = rc.SetWriteDeadline(time.Now().Add(a.cfg.BodyTimeout)) }()
	if err := checkPath(r.URL.Path); err != nil {
		a.badPath.Inc()
		a.writeError(rw, "activator: "+err.Error(), http.StatusBadRequest)
		return
	}
	dropH2CUpgrade(r.Header)
	// Never held, so never a phantom held request: a readiness probe (this
	// activator's own, a loop; or one of an activator in front) and a
	// Prometheus scrape proxied through (a ServiceMonitor on the proxy port
	// of an activator with --metrics-listen, or one scraping the model
	// through it), which held would count as demand with no client and
	// keep the model from zero.
	notHeld := ""
	if id := r.Header.Get(ProbeHeader); id != "" {
		if id == a.id {
			rw.Header().Set(ProbeHeader, a.id)
			a.writeError(rw, "activator: "+errLoop, http.StatusLoopDetected)
			return
		}
		notHeld = "activator: upstream not ready"
	} else if r.Header.Get(scrapeTimeoutHeader) != "" {
		notHeld = "activator: a Prometheus scrape is not held (held, it would count as demand): scrape the activator's own /metrics (on --metrics-listen when set) and the model's pods directly"
	}
	if notHeld != "" && !a.Ready() {
		a.writeError(rw, notHeld, http.StatusServiceUnavailable)
		return
	}
	// The upstream may answer (an event stream's headers) before the
	// transport's last read of the request body; net/http's HTTP/1 server
	// closes the body once the response starts unless full duplex is on,
	// and the transport then drops the upstream connection mid-stream.
	_ = rc.EnableFullDuplex()
	hasBody := r.Body != nil && r.Body != http.NoBody
	var bodyDone atomic.Bool    // the client's body was read to its end
	asked := false              // its reading into memory began (a 100 Continue sent)
	var streamAsked atomic.Bool // its streaming upstream began (a 100 Continue sent)
	if hasBody {
		// Closed here, not after the handler returns: net/http's own close
		// of an unread body, after it stopped its background read, can
		// reach the end of the body and start that read again, which then
		// races the next request's read (a recovered panic, "invalid
		// concurrent Body.Read call"). A body the transport still reads is
		// safe to close (reads after it fail).
		//
		// An unfinished body (a refusal, a failure) lingers: the close
		// reads and discards up to 256 KiB more of it (net/http's bound;
		// beyond it net/http half-closes and waits), for at most
		// lingerTimeout. Closed with the client's bytes unread, the socket
		// sent a reset, and a client still writing its body (a 100 KB
		// prompt) failed on "connection reset by peer" (Go's client reports
		// its write's error) and never read its 429, 413 or 503. A client
		// that asked for 100-continue sends no body before it is read: no
		// wait, unless it was read (held: asked for, so being sent). A
		// body streamed upstream lingers too (with 100-continue once the
		// transport began reading it): given no time, net/http's own read
		// of a rest of 256 KiB or less failed at once, so it neither read
		// it nor half-closed and waited, and a 502 after the upstream
		// dropped mid-body was lost to a reset
		// (TestStreamedBodyRestReadNotReset). r.Body stays net/http's
		// own: wrapped, a streamed body's 502 was lost to a reset in 1 of
		// 100 runs (TestUpstreamFailsMidBody under -race).
		orig := r.Body
		expect := strings.EqualFold(r.Header.Get("Expect"), "100-continue")
		defer func() {
			if !bodyDone.Load() {
				linger := min(lingerTimeout, a.cfg.BodyTimeout)
				asked := asked || streamAsked.Load()
				if expect && !asked {
					linger = 0
				}
				_ = rc.SetReadDeadline(time.Now().Add(linger))
				if expect && asked && r.ProtoMajor < 2 {
					// net/http half-closes and waits only for its own body
					// type, not one behind its 100-continue reader: it
					// closed at once past 256 KiB. The whole rest is read.
					// (Over HTTP/2 only the stream is reset: no wait.)
					_, _ = io.Copy(io.Discard, orig)
				}
			}
			orig.Close()
		}()
	}
	var held *heldBody // the body once read into memory
	defer func() {
		if held != nil {
			held.free()
		}
	}()
	deadline := time.Now().Add(a.cfg.HoldTimeout)
	var notBefore time.Time // after a refusal: not tried again before
	released := false       // counted in released_total
	a.mu.Lock()
	late := a.drain // arrived while draining: never held
	a.mu.Unlock()
	for {
		a.mu.Lock()
		if a.up && time.Now().After(notBefore) {
			a.mu.Unlock()
			a.direct.Inc()
		} else if late {
			a.mu.Unlock()
			a.rejected.Inc()
			switch {
			case r.ProtoMajor == 2:
				// Go's server sends GOAWAY: the retry opens a new connection,
				// through the Service to another activator (a gateway's
				// connection is never idle, so keep-alive being off would
				// not end it); its other streams finish.
				rw.Header().Set("Connection", "close")
			case hasBody && !bodyDone.Load():
				closeConnection(rw, r) // its body is not read to its end
			}
			a.refuse(rw, http.StatusServiceUnavailable, "activator: shutting down and the upstream is not ready; try again (another activator takes it)")
			return
		} else {
			var ok bool
			wasRead := held != nil
			if held, ok = a.hold(rw, r, rc, deadline, notBefore, held, &asked); !ok {
				return // a.hold unlocked a.mu and answered
			}
			if !released { // once a request, however often held again
				released = true
				a.released.Inc()
			}
			if hasBody && !wasRead {
				bodyDone.Store(true) // read into memory to its end
			}
			if held == nil && hasBody { // the body is read; an empty one
				r.Body = http.NoBody
			}
		}
		if a.forward(rw, r, rc, held, hasBody, &bodyDone, &streamAsked) {
			return
		}
		// Refused before anything was sent: hold it again, a probe
		// interval at least, and ask the loop to look.
		a.refused.Inc()
		a.kick()
		notBefore = time.Now().Add(a.cfg.ProbeInterval)
		if !notBefore.Before(deadline) {
			a.timeouts.Inc()
			a.refuse(rw, http.StatusServiceUnavailable, fmt.Sprintf("activator: upstream refused or could not be connected to for %v", a.cfg.HoldTimeout))
			return
		}
	}
}

// forward proxies r once, its body from held when read into memory, and
// reports whether it is done: false when the connection was refused or not
// made before any byte was sent (nothing written to rw either). A body
// streamed from the client sets bodyDone at its end, and asked at its
// first read (which sends an Expect: 100-continue client its 100 Continue).
func (a *Activator) forward(rw http.ResponseWriter, r *http.Request, rc *http.ResponseController, held *heldBody, hasBody bool, bodyDone, asked *atomic.Bool) bool {
	at := &attempt{}
	var streamed *trackedBody // the client's body, when proxied as it comes
	var onAnswer []func()     // run when the upstream's answer begins
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	ctx = context.WithValue(ctx, attemptKey{}, at)
	out := r.Clone(ctx)
	switch {
	case held != nil:
		// It may be sent again from its start until the upstream's answer
		// begins (GetBody), as the transport does when it knows the
		// upstream did not process the request: a stream above a GOAWAY's
		// last-stream-id or refused (REFUSED_STREAM), a reused HTTP/1
		// connection that failed before anything was written on it (an
		// idempotent request also when it closed before the answer).
		// Without GetBody the transport could not, and the client got
		// 502. Its memory is given back once the answer has begun and the
		// transport has read it all, or when ServeHTTP returns.
		var began, read atomic.Bool
		giveBack := func() {
			if began.Load() && read.Load() {
				held.free()
			}
		}
		body := func() (io.ReadCloser, error) {
			r, ok := held.reader()
			if !ok {
				return nil, errors.New("the held body was given back: not sent again")
			}
			read.Store(false)
			return &trackedBody{r: r, at: at, eof: func(error) { read.Store(true); giveBack() }}, nil
		}
		out.Body, _ = body()
		// The h2c connection the attempt went on, and its count of
		// PROTOCOL_ERROR resets then (resetConn).
		var conn *resetConn
		var resets int64
		out = out.WithContext(httptrace.WithClientTrace(out.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			conn, _ = i.Conn.(*resetConn)
			if conn != nil {
				resets = conn.protoResets.Load()
			}
		}}))
		out.GetBody = func() (io.ReadCloser, error) {
			// The transport sends it again when the upstream did not
			// process it: nothing of the new attempt is sent yet, and one
			// whose dial is refused (the last pod gone) is held again. Not
			// after a PROTOCOL_ERROR reset (on this connection during the
			// attempt: another stream's too, the safe side), which Go's
			// transport retries though the upstream may have processed it.
			if conn != nil && conn.protoResets.Load() != resets {
				return nil, errProtocolReset
			}
			at.sent.Store(false)
			return body()
		}
		onAnswer = append(onAnswer, func() { began.Store(true); giveBack() })
		out.ContentLength, out.TransferEncoding = held.n, nil
		out.Header.Del("Expect") // the body is here already
	case hasBody && r.Body != http.NoBody:
		// Streamed from the client: its reads have the body deadline,
		// lifted at the end of the body.
		_ = rc.SetReadDeadline(time.Now().Add(a.cfg.BodyTimeout))
		streamed = &trackedBody{r: r.Body, at: at, began: asked, eof: func(err error) {
			bodyDone.Store(err == io.EOF)
			_ = rc.SetReadDeadline(time.Time{})
		}}
		out.Body = streamed
	}
	if out.Body != nil && out.Body != http.NoBody {
		// The write upstream has its own deadline: an upstream that does
		// not take the body holds nobody else up, and not forever. At the
		// deadline, a transport waiting on the client's body is the
		// client's stall (408), not the upstream's (504).
		timer := time.AfterFunc(a.cfg.BodyTimeout, func() {
			defer crashlog.Handle(a.cfg.Log)
			if streamed != nil && streamed.reading.Load() {
				cancel(errClientBodyTimeout)
				return
			}
			cancel(errWriteTimeout)
		})
		defer timer.Stop()
		if r.ProtoMajor == 2 {
			// An HTTP/2 stream whose answer has begun is a duplex exchange
			// (a gRPC bidirectional or client stream): the client sends as
			// the conversation goes, for as long as it lasts, so the body
			// is bounded no more.
			onAnswer = append(onAnswer, func() {
				timer.Stop()
				if streamed != nil {
					_ = rc.SetReadDeadline(time.Time{})
				}
			})
		}
		out = out.WithContext(httptrace.WithClientTrace(out.Context(), &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { timer.Stop() }}))
	}
	// Each write of the answer to the client has BodyTimeout to make
	// progress: a client that stops reading (its connection open) would
	// hold the upstream request, and this goroutine, for as long as it
	// stays connected (the last one: ServeHTTP).
	if len(onAnswer) > 0 {
		at.answered = func() {
			for _, f := range onAnswer {
				f()
			}
		}
	}
	if isUpgrade(r.Header) {
		// A WebSocket, say: ReverseProxy copies both ways on the hijacked
		// connection until either side closes, here (WaitUpgrades).
		a.upgrades.Add(1)
		a.upgradesOpen.Add(1)
		defer func() { a.upgradesOpen.Add(-1); a.upgrades.Done() }()
	} else {
		a.inFlight.Add(1)
		defer a.inFlight.Add(-1)
	}
	a.proxy.ServeHTTP(&stallWriter{ResponseWriter: rw, rc: rc, d: a.cfg.BodyTimeout, h2: r.ProtoMajor == 2}, out)
	return !at.refused.Load()
}

// stallWriter sets a write deadline of d before each write to the client
// (ReverseProxy flushes after each one, through Unwrap): a write that
// makes no progress for d fails, ReverseProxy aborts the answer, and the
// upstream request is cancelled.
type stallWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
	// h2: the client's request is an HTTP/2 stream, which Go's server
	// resets when its write deadline passes, writing or not: the deadline
	// is lifted once each write is flushed, or a server stream silent for
	// d between messages (a gRPC Watch) was cut.
	h2 bool
}

func (w *stallWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	return w.ResponseWriter.Write(p)
}

// FlushError flushes what was written (http.ResponseController's Flush,
// which ReverseProxy calls after each write) within the write's deadline,
// then lifts it on HTTP/2.
func (w *stallWriter) FlushError() error {
	err := w.rc.Flush()
	if w.h2 {
		_ = w.rc.SetWriteDeadline(time.Time{})
	}
	return err
}

// Unwrap lets http.ResponseController reach the connection (Flush,
// Hijack for an upgrade).
func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// hold queues r (a.mu held on entry, released) and waits until it is
// released (true) or answered: 429 when the queue or the byte budget is
// full, 413 when its body alone is larger than the budget, 408 when its
// body does not arrive within BodyTimeout, 503 at the deadline; a client
// that left ends the handler (leave). The body is read into memory while
// r waits, once (held, if not nil, is the body read before); the result
// is it; *asked is set once a read of the body begins.
func (a *Activator) hold(rw http.ResponseWriter, r *http.Request, rc *http.ResponseController, deadline, notBefore time.Time, held *heldBody, asked *bool) (*heldBody, bool) {
	// ServeHTTP drops the connection of a refused request with a body
	// (the body is not read to its end, or not known to be), so the answer
	// says so: a keep-alive client would send its next request on a
	// connection that is going away (a POST is not retried: lost).
	closeIfBody := func() {
		if r.Body != nil && r.Body != http.NoBody {
			closeConnection(rw, r)
		}
	}
	if a.count >= a.cfg.MaxHeld {
		a.mu.Unlock()
		a.rejected.Inc()
		closeIfBody()
		a.refuse(rw, http.StatusTooManyRequests, fmt.Sprintf("activator: %d requests already held", a.cfg.MaxHeld))
		return held, false
	}
	// Its headers count while it is held, beyond what HeldRequestBytes
	// covers: a request with no body but MaxHeaderBytes of small fields
	// takes most of a megabyte of heap.
	hb := max(0, headerBytes(r.Header)-heldHeaderAllowance)
	if inUse := a.bytes; inUse+hb > a.cfg.MaxHeldBytes {
		a.mu.Unlock()
		a.rejected.Inc()
		closeIfBody()
		a.refuse(rw, http.StatusTooManyRequests, fmt.Sprintf("activator: %d bytes of bodies and headers already held (--max-held-bytes %d)", inUse, a.cfg.MaxHeldBytes))
		return held, false
	}
	read := held == nil && r.Body != nil && r.Body != http.NoBody
	if read && r.ContentLength > 0 {
		if r.ContentLength > a.cfg.MaxHeldBytes {
			a.mu.Unlock()
			a.rejected.Inc()
			closeIfBody()
			a.writeError(rw, fmt.Sprintf("activator: a body of %d bytes is larger than --max-held-bytes (%d bytes): it is never held; send it when the upstream is up, or raise --max-held-bytes", r.ContentLength, a.cfg.MaxHeldBytes), http.StatusRequestEntityTooLarge)
			return nil, false
		}
		if inUse := a.bytes; inUse+hb+r.ContentLength > a.cfg.MaxHeldBytes { // read under the lock
			a.mu.Unlock()
			a.rejected.Inc()
			closeIfBody()
			a.refuse(rw, http.StatusTooManyRequests, fmt.Sprintf("activator: %d bytes of bodies and headers already held (--max-held-bytes %d)", inUse, a.cfg.MaxHeldBytes))
			return nil, false
		}
		a.reserveLocked(r.ContentLength)
	}
	a.reserveLocked(hb)
	defer a.unreserve(hb) // released, refused or gone: no longer held
	w := &waiter{release: make(chan struct{})}
	if len(a.queue) >= 2*a.cfg.MaxHeld { // many left mid-queue: compact
		live := a.queue[:0]
		for _, q := range a.queue {
			if !q.gone {
				live = append(live, q)
			}
		}
		clear(a.queue[len(live):])
		a.queue = live
	}
	a.queue = append(a.queue, w)
	a.count++
	first := a.count == 1
	a.held.Inc()
	a.mu.Unlock()
	if first {
		a.kick() // the first held request: probe now, not a whole interval later
	}
	if read {
		b, err := a.readBody(r, rc, deadline, asked)
		if err != nil {
			a.abandon(w)
			switch {
			case errors.Is(err, errTooLarge):
				a.rejected.Inc()
				closeIfBody()
				a.writeError(rw, fmt.Sprintf("activator: a chunked body larger than --max-held-bytes (%d bytes): it is never held; send it when the upstream is up, or raise --max-held-bytes", a.cfg.MaxHeldBytes), http.StatusRequestEntityTooLarge)
			case errors.Is(err, errOverBudget):
				a.rejected.Inc()
				closeIfBody()
				a.refuse(rw, http.StatusTooManyRequests, "activator: "+err.Error())
			case time.Now().After(deadline):
				a.timeouts.Inc()
				closeIfBody()
				a.refuse(rw, http.StatusServiceUnavailable, fmt.Sprintf("activator: no upstream endpoint ready within %v", a.cfg.HoldTimeout))
			case errors.Is(err, os.ErrDeadlineExceeded):
				a.bodyTimeouts.Inc()
				closeIfBody()
				a.writeError(rw, fmt.Sprintf("activator: the request body did not arrive within %v", a.cfg.BodyTimeout), http.StatusRequestTimeout)
			case malformedBody(err):
				closeIfBody()
				a.writeError(rw, "activator: the request's chunked body is malformed: "+err.Error(), http.StatusBadRequest)
			default: // the client left: nobody to answer
				a.leave(nil)
			}
			return nil, false
		}
		held = b
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-w.release:
	case <-timer.C:
		if a.abandon(w) {
			a.timeouts.Inc()
			closeIfBody()
			a.refuse(rw, http.StatusServiceUnavailable, fmt.Sprintf("activator: no upstream endpoint ready within %v", a.cfg.HoldTimeout))
			return held, false
		}
	case <-r.Context().Done():
		if a.abandon(w) {
			a.leave(held)
		}
	}
	// Held again after a refusal: wait out the rest of the interval.
	if d := time.Until(notBefore); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			a.leave(held)
		}
	}
	return held, true
}

// leave ends the handling of a held request whose client left (held, its
// body, given back): net/http cancels the request on the connection's
// close and on its FIN alone (a client that shut only its sending side,
// CloseWrite, as `nc -N` does: the same bytes on the wire), and wrote an
// empty 200 OK once the handler returned, which such a client read as its
// request's success, never proxied. ErrAbortHandler closes the connection
// without an answer (over HTTP/2, resets the stream).
func (a *Activator) leave(held *heldBody) {
	a.clientLeft.Inc()
	if held != nil {
		held.free()
	}
	panic(http.ErrAbortHandler)
}

// abandon marks w gone if it was not released yet; false when the releaser
// got to it first (it must then be proxied).
func (a *Activator) abandon(w *waiter) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-w.release:
		return false
	default:
	}
	w.gone = true
	a.count--
	a.held.Dec()
	// Drop gone waiters from the queue's head so it does not grow.
	for len(a.queue) > 0 && a.queue[0].gone {
		a.queue[0] = nil
		a.queue = a.queue[1:]
	}
	return true
}

func (a *Activator) refuse(rw http.ResponseWriter, code int, msg string) {
	// Logged first: writeError puts the answer on the wire, and a client
	// (or a test reading the log) that has its answer finds the line.
	a.logRefusal(code, msg)
	rw.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(a.cfg.RetryAfter.Seconds()))))
	a.writeError(rw, msg, code)
}

// refusalLog is the log of one status's refusals (refuse): its limiter,
// and how many no line has counted yet.
type refusalLog struct {
	lim     *rate.Limiter
	pending atomic.Int64
}

// logRefusal logs a request answered code (429 or 503 with Retry-After) at
// warning level: the first at once, then at most one a FailureLogInterval
// per status, whose refused=N counts those since the line before (this one
// included), as upstreamFailed does. The clients' 503s after
// --hold-timeout, the 429s past --max-held or --max-held-bytes and a
// drain's 503s were counted only (infscale_activator_hold_timeouts_total,
// _rejected_total): the log said "requests are held" and then nothing
// while clients were turned away.
func (a *Activator) logRefusal(code int, msg string) {
	l := a.refusals[code]
	if a.cfg.Log == nil || l == nil {
		return
	}
	if !l.lim.Allow() {
		l.pending.Add(1)
		return
	}
	a.cfg.Log.Warn("request refused", "status", code, "error", strings.TrimPrefix(msg, "activator: "), "refused", l.pending.Swap(0)+1,
		"retry_after", a.cfg.RetryAfter)
}

// sayRefusals logs the refusals no line has counted yet, per status, once
// its interval allows a line: called by Run at each probe, so a burst of
// refusals that stops is in the log whole.
func (a *Activator) sayRefusals() {
	if a.cfg.Log == nil {
		return
	}
	for _, code := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		l := a.refusals[code]
		if l.pending.Load() == 0 || !l.lim.Allow() {
			continue
		}
		if n := l.pending.Swap(0); n > 0 {
			a.cfg.Log.Warn("request refused", "status", code, "refused", n,
				"error", "the requests since the last line, not logged one by one (at most one line each "+FailureLogInterval.String()+")")
		}
	}
}

// reserveLocked counts n more bytes of held bodies (a.mu held).
func (a *Activator) reserveLocked(n int64) {
	a.bytes += n
	a.heldBytes.Add(float64(n))
}

// reserve counts n more bytes unless that goes beyond the budget.
func (a *Activator) reserve(n int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.bytes+n > a.cfg.MaxHeldBytes {
		return false
	}
	a.reserveLocked(n)
	return true
}

func (a *Activator) unreserve(n int64) {
	if n == 0 {
		return
	}
	a.mu.Lock()
	a.bytes -= n
	a.mu.Unlock()
	a.heldBytes.Sub(float64(n))
}

// chunkSize is the unit held bodies are read in (and reserved in, when
// their length is not known in advance).
const chunkSize = 64 << 10

var errOverBudget = errors.New("held bodies reached --max-held-bytes")

// errTooLarge is a chunked body larger on its own than --max-held-bytes.
var errTooLarge = errors.New("body larger than --max-held-bytes")

// readBody reads r's body into memory while r is held, within the byte
// budget (a Content-Length was reserved on arrival; a chunked body is
// reserved a chunk at a time) and with a read deadline of BodyTimeout (or
// the hold deadline, if sooner), lifted once the body is in. An error
// when the client left (a read error), the deadline passed or the budget
// was reached; the bytes are then given back.
func (a *Activator) readBody(r *http.Request, rc *http.ResponseController, holdDeadline time.Time, asked *bool) (*heldBody, error) {
	dl := time.Now().Add(a.cfg.BodyTimeout)
	if holdDeadline.Before(dl) {
		dl = holdDeadline
	}
	_ = rc.SetReadDeadline(dl)
	defer rc.SetReadDeadline(time.Time{})
	b := &heldBody{a: a}
	known := r.ContentLength > 0
	if known {
		b.reserved = r.ContentLength
	}
	for {
		size := int64(chunkSize)
		if known {
			size = min(size, r.ContentLength-b.n)
			if size == 0 {
				break
			}
		} else {
			// A chunked body may take the whole budget, no more: one
			// that fills it and has a byte left never fits (413), a
			// retry would not help.
			room := a.cfg.MaxHeldBytes - b.reserved
			if room <= 0 {
				var one [1]byte
				n, err := io.ReadFull(r.Body, one[:])
				if n > 0 {
					err = errTooLarge
				}
				if err != io.EOF {
					b.free()
					return nil, err
				}
				break
			}
			size = min(size, room)
			if !a.reserve(size) {
				b.free()
				return nil, errOverBudget
			}
			b.reserved += size
		}
		chunk := make([]byte, size)
		*asked = true // a 100 Continue is sent now: the client sends its body
		n, err := fill(r.Body, chunk)
		if n > 0 {
			b.chunks = append(b.chunks, chunk[:n])
			b.n += int64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			b.free()
			return nil, err
		}
	}
	if !known { // give back the last chunk's unused room
		a.unreserve(b.reserved - b.n)
		b.reserved = b.n
	}
	if b.n == 0 {
		b.free()
		return nil, nil
	}
	return b, nil
}

// cutBody is an upstream answer's body that counts, once, a read that
// fails other than at its end while the client is still there (the
// upstream reset or closed the connection mid-answer).
type cutBody struct {
	io.ReadCloser
	ctx    context.Context
	failed func(error) // once, the first read error not the client's
	once   sync.Once
}

func (b *cutBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.ctx.Err() == nil {
		b.once.Do(func() { b.failed(err) })
	}
	return n, err
}

// proxyErrorLog is ReverseProxy's ErrorLog: lg's debug level, or nowhere
// without lg. ReverseProxy logs a read error of every answer cut off
// mid-body, and of every streamed answer whose client left, on the
// standard logger, one plain line each ("httputil: ReverseProxy read error
// during body copy"): 50 cut answers were 50 lines on stderr beside the
// one rate-limited "upstream failed" line that counts them (cutBody), in
// another format than the activator's key=value lines. Its default error handler's
// line is not used (ErrorHandler).
func proxyErrorLog(lg *slog.Logger) *log.Logger {
	if lg == nil {
		return log.New(io.Discard, "", 0)
	}
	return slog.NewLogLogger(lg.Handler(), slog.LevelDebug)
}

// upstreamFailed counts a request sent upstream that got no whole answer
// (status: the client's 502 or 504, or the upstream's own status when its
// answer was cut off mid-body) and logs it at warning level (Config.Log):
// the first, then at most one each FailureLogInterval, with how many
// failed since the line before (this one included).
func (a *Activator) upstreamFailed(r *http.Request, status int, why string) {
	a.upFailed.Inc()
	if a.cfg.Log == nil {
		return
	}
	if !a.failLog.Allow() {
		a.failures.Add(1) // said by the next line
		return
	}
	a.cfg.Log.Warn("upstream failed", "method", r.Method, "path", r.URL.Path, "status", status, "error", why,
		"failures", a.failures.Swap(0)+1, "upstream", a.cfg.Upstream.Redacted())
}

// sayFailures logs the upstream failures no line has counted yet (those
// after upstreamFailed's last line, within its interval), once the
// interval allows a line: called by Run at each probe.
func (a *Activator) sayFailures() {
	if a.cfg.Log == nil || a.failures.Load() == 0 || !a.failLog.Allow() {
		return
	}
	if n := a.failures.Swap(0); n > 0 {
		a.cfg.Log.Warn("upstream failed", "failures", n, "upstream", a.cfg.Upstream.Redacted(),
			"error", "the requests since the last line, not logged one by one (at most one line each "+FailureLogInterval.String()+")")
	}
}

// writeError answers code with msg and a newline, as http.Error does
// (text/plain, nosniff), with its Content-Length and flushed within
// --body-timeout (the answer's writes' deadline): the whole answer is on
// the wire when it returns. Anything after it (the linger
// over an unfinished body, up to lingerTimeout; net/http's close) then
// delays only the connection's close, never the answer, as net/http
// flushes an answer before closing the body and Envoy before its
// delayed_close_timeout. With http.Error the answer stayed in net/http's
// buffer until the handler returned: a client whose body stalled got its
// 408 --body-timeout plus up to 1 s late (TestAnswerBeforeLinger).
// Without the length, a flushed answer would be chunked and its last
// chunk still wait.
func (a *Activator) writeError(w http.ResponseWriter, msg string, code int) {
	body := msg + "\n"
	h := w.Header()
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(a.cfg.BodyTimeout)) // a client that does not read
	_ = rc.Flush()
}

// lingerTimeout bounds how long an unfinished request body is read and
// discarded before its connection is closed (ServeHTTP).
const lingerTimeout = time.Second

// fill reads into p until it is full or r fails. Unlike io.ReadFull it
// returns r's own error: a chunked body cut off (the client gone mid-body:
// io.ErrUnexpectedEOF from net/http's chunked reader) is not taken for a
// short last chunk, io.ReadFull's io.ErrUnexpectedEOF.
func fill(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// heldBody is a request body in memory, in chunks, with the bytes it has
// reserved from the budget (given back by free, once).
type heldBody struct {
	a        *Activator
	n        int64
	reserved int64
	once     sync.Once
	mu       sync.Mutex // chunks: free and a retry's reader may race
	chunks   [][]byte
	freed    bool
}

func (b *heldBody) free() {
	b.once.Do(func() {
		b.mu.Lock()
		b.chunks, b.freed = nil, true
		b.mu.Unlock()
		b.a.unreserve(b.reserved)
	})
}

// reader reads the body from its start; false once it was given back.
func (b *heldBody) reader() (io.Reader, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return nil, false
	}
	rs := make([]io.Reader, len(b.chunks))
	for i, c := range b.chunks {
		rs[i] = bytes.NewReader(c)
	}
	return io.MultiReader(rs...), true
}

// trackedBody counts what the transport read of a body (so that a refused
// attempt is known to have sent nothing) and does not close what it reads
// from (it may be sent again); eof, if set, runs at its end (io.EOF) or
// first error.
type trackedBody struct {
	r   io.Reader
	at  *attempt
	eof func(error)
	// reading is true while a Read waits on r (the client, for a body
	// streamed from it).
	reading atomic.Bool
	// began, when set, is set by the first Read.
	began *atomic.Bool
}

func (t *trackedBody) Read(p []byte) (int, error) {
	if t.began != nil {
		t.began.Store(true)
	}
	t.reading.Store(true)
	n, err := t.r.Read(p)
	t.reading.Store(false)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.at.stalled.Store(true) // the client's read deadline
	}
	if malformedBody(err) {
		t.at.malformed.Store(&err)
	}
	if n > 0 {
		t.at.sent.Store(true)
	}
	if err != nil && t.eof != nil {
		t.eof(err)
		t.eof = nil
	}
	return n, err
}

func (t *trackedBody) Close() error { return nil }

// attempt is one proxying of a request: sent once the transport read a
// byte of its body; refused when its connection was refused before that;
// stalled when the body streamed from the client did not arrive within
// the body timeout.
type attempt struct {
	sent, refused, stalled atomic.Bool
	// malformed is the client's body's framing error (malformedBody),
	// once its read failed on one.
	malformed atomic.Pointer[error]
	// answered, if set, runs when the upstream's answer begins.
	answered func()
}

// malformedBody reports whether err, a read of a client's body, is
// net/http's for a chunked body it cannot decode (a chunk size that is not
// hex, too large or too long a line, no CRLF after a chunk): the client's
// error, not a client that left (io.ErrUnexpectedEOF, a reset). net/http
// exports no type for them.
func malformedBody(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "chunk") || msg == "header line too long"
}

// clientMalformed is the framing error of r's attempt's body
// (malformedBody), or nil.
func clientMalformed(r *http.Request) error {
	if at, _ := r.Context().Value(attemptKey{}).(*attempt); at != nil {
		if err := at.malformed.Load(); err != nil {
			return *err
		}
	}
	return nil
}

// clientStalled reports whether r's attempt failed waiting on the
// client's body.
func clientStalled(r *http.Request) bool {
	at, _ := r.Context().Value(attemptKey{}).(*attempt)
	return at != nil && at.stalled.Load()
}

type attemptKey struct{}

// errRefused marks an attempt whose connection was refused or not made
// before anything was sent; errWriteTimeout one whose request was not
// written within BodyTimeout;
// errClientBodyTimeout one whose body, streamed from the client, had not
// arrived then.
var (
	errRefused           = errors.New("upstream refused the connection")
	errProtocolReset     = errors.New("the upstream reset the request's HTTP/2 stream (RST_STREAM PROTOCOL_ERROR) after it was sent: it may have been processed, so it was not sent again")
	errWriteTimeout      = errors.New("request not written upstream within the body timeout")
	errClientBodyTimeout = errors.New("request body not received from the client within the body timeout")
)

// refusedTransport turns a connection that was refused or not made (the
// dial failed), when no byte of the body was read, into errRefused; every
// answer (a 503 included) passes as is.
type refusedTransport struct{ base http.RoundTripper }

func (t refusedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if at, _ := req.Context().Value(attemptKey{}).(*attempt); err != nil && at != nil && !at.sent.Load() && req.Context().Err() == nil && notConnected(err) {
		at.refused.Store(true)
		return nil, fmt.Errorf("%w: %v", errRefused, err)
	}
	return resp, err
}

// notConnected reports whether err is a failure to connect, so that no
// byte of the request can have reached the upstream: the connection
// refused, or the dial failed (a headless Service with no endpoints has no
// DNS name, a route is gone, a SYN dropped until the dial timed out).
func notConnected(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &op) && op.Op == "dial"
}

// checkPath refuses a path (decoded, as net/http gives it) with a "." or
// ".." segment, also when a segment decodes to one again (double
// encoding), or when a backslash separates it: the upstream base URL's
// path is joined in front, and a dot segment would resolve out of it.
func checkPath(p string) error {
	if dotSegment(p) {
		return fmt.Errorf("path %q has a dot segment (. or ..) once decoded; refused", p)
	}
	return nil
}

func dotSegment(p string) bool {
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == "." || seg == ".." {
			return true
		}
		if d, err := url.PathUnescape(seg); err == nil && d != seg && dotSegment(d) {
			return true
		}
	}
	return false
}
