package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/internal/httpurl"
	"github.com/infscale/infscale/internal/membudget"
	"github.com/infscale/infscale/pkg/activator"
	"github.com/infscale/infscale/pkg/config"
)

// minProbeInterval bounds --probe-interval from below: a readiness probe
// more often than every 10ms is a busy loop against the upstream.
const minProbeInterval = 10 * time.Millisecond

// ActivatorCmd is `infscale activator`: hold requests while the upstream
// has no ready endpoint, release them in order once it has (docs/keda.md,
// "Scale to zero with infscale activator").
type ActivatorCmd struct {
	Listen              string        `name:"listen" default:"127.0.0.1:8080" help:"Address to serve on (host:port; in a pod, 0.0.0.0:8080). /metrics and /healthz are the activator's own (unless --metrics-listen); every other path is proxied."`
	MetricsListen       string        `name:"metrics-listen" placeholder:"HOST:PORT" help:"Serve the activator's own /metrics and /healthz on this address (host:port; in a pod, 0.0.0.0:9090) instead of --listen's, which then proxies every path, /metrics and /healthz included: clients of the proxy no longer read the activator's metrics, and reach the upstream's. Default: none (both on --listen)."`
	Upstream            string        `name:"upstream" required:"" placeholder:"URL" help:"Base URL of the model's Service, e.g. http://chat:8000: no query or fragment; a path prefixes every proxied path (not --probe-path)."`
	HoldTimeout         time.Duration `name:"hold-timeout" default:"5m" help:"Longest a request is held waiting for a ready upstream, at most 24h; then 503 with Retry-After. Make it longer than a cold start."`
	MaxHeld             int           `name:"max-held" default:"1000" help:"Most requests held at once, 1 to 100000 (each takes about 22 KB besides its body; with --max-held-bytes within the memory limit); beyond it, 429 with Retry-After."`
	MaxHeldBytes        string        `name:"max-held-bytes" default:"128MiB" help:"Most bytes of request bodies (and held requests' headers beyond 8 KiB each) held in memory at once, 1MiB to 1TiB (128MiB, 100MB, or a bare number of bytes); beyond it, 429 with Retry-After; a body larger on its own, 413. Keep it well under the container's memory limit."`
	BodyTimeout         time.Duration `name:"body-timeout" default:"60s" help:"Longest a held request's body may take to arrive from the client (then 408), any request with a body to be written upstream (then 504; over HTTP/2 only until the answer begins: a gRPC bidirectional stream), and a write of an answer to a client that stopped reading (then the answer is cut and the upstream request cancelled; on Linux also 30s after its receive window shut, the client connections' TCP user timeout), 1s to 1h."`
	ProbePath           string        `name:"probe-path" default:"/health" help:"Upstream readiness endpoint (200: ready), vLLM's /health by default; /grpc.health.v1.Health/Check makes it a gRPC health check of the whole server (SERVING: ready)."`
	ProbeInterval       time.Duration `name:"probe-interval" default:"500ms" help:"How often the upstream's readiness is probed, 10ms to 1h (at once when a request comes to be held)."`
	RetryAfter          time.Duration `name:"retry-after" default:"5s" help:"Retry-After of a 503 (hold timeout) or 429 (queue full), rounded up to seconds, at most 1h."`
	IdleTimeout         time.Duration `name:"idle-timeout" default:"${idle_timeout}" help:"Longest a client's keep-alive connection may stay open with no request on it (between requests, never during one: a held request is not cut), 1s to 24h. Keep it longer than the idle timeout of the client or proxy in front (Go's 90s, nginx's and AWS ALB's 60s; GCP's load balancer's 600s, Envoy's 1h: raise it behind those)."`
	UpstreamProtocol    string        `name:"upstream-protocol" default:"auto" enum:"auto,http1,h2c" help:"How requests go upstream: auto (each in the client's protocol: a cleartext HTTP/2 (h2c) client's, gRPC's, as h2c; HTTP/1.x as HTTP/1.1; an https upstream negotiates by TLS), http1 (always HTTP/1.1: an HTTP/2 gateway in front of vLLM, SGLang or llama.cpp, which speak HTTP/1.1 only) or h2c (always cleartext HTTP/2, the probe too: a gRPC server). Clients may speak HTTP/1.x or h2c in every case."`
	UpstreamIdleTimeout time.Duration `name:"upstream-idle-timeout" default:"${upstream_idle_timeout}" help:"Longest an upstream keep-alive connection is kept idle for the next request, 100ms to 1h. Keep it shorter than the model server's keep-alive timeout (vLLM's and SGLang's 5s: VLLM_HTTP_TIMEOUT_KEEP_ALIVE, uvicorn's --timeout-keep-alive), or a request sent as the server closes the connection gets a 502."`
	LogFlags            LogFlags      `embed:""` // serve's --log-level and --log-format: every line on stderr is one record
}

// minIdleTimeout and maxIdleTimeout bound --idle-timeout: below a second a
// client's next request races the close on every reuse; above a day an
// abandoned connection holds its descriptor for nothing.
const (
	minIdleTimeout = time.Second
	maxIdleTimeout = 24 * time.Hour
)

// maxHoldTimeout bounds --hold-timeout (a cold start takes minutes, a
// large image pull tens of them) and maxRetryAfter --retry-after: beyond
// them a typo (100h for 100s) would hold requests or clients for days.
const (
	maxHoldTimeout = 24 * time.Hour
	maxRetryAfter  = time.Hour
)

// Run serves the activator until the context ends (SIGTERM), then drains
// for at most --hold-timeout + 5 s: while requests are held it keeps
// serving, without keep-alive (its /metrics still counts them; a new
// request that would be held gets 503) until they are released or time
// out, then stops accepting connections and lets the in-flight requests
// and the upgraded connections (WebSockets) finish; WebSockets still open
// in the bound's last UpgradeCloseGrace are closed with 1001 going away.
func (c *ActivatorCmd) Run(e *env) error {
	survivePipes()
	if err := config.CheckListen(c.Listen); err != nil {
		return invalidf("--listen %q: %v", c.Listen, err)
	}
	if c.MetricsListen != "" {
		if err := config.CheckListen(c.MetricsListen); err != nil {
			return invalidf("--metrics-listen %q: %v", c.MetricsListen, err)
		}
		if sameListen(c.MetricsListen, c.Listen) {
			// Binding it failed as "another process holds the port".
			return invalidf("--metrics-listen %s: the port of --listen %s: give each its own (port 0: any free one), or leave --metrics-listen out to serve /metrics and /healthz on --listen", c.MetricsListen, c.Listen)
		}
	}
	u, err := httpurl.Parse(c.Upstream)
	if errors.Is(err, httpurl.ErrPort) {
		return invalidf("--upstream %q: %v", c.Upstream, err)
	}
	if err == nil && u.User != nil {
		// The credentials would not be sent (the proxy takes the base
		// URL's scheme, host and path alone), and they would be printed.
		return invalidf("--upstream %q: want a base URL without user information (user:password@), such as http://chat:8000", c.Upstream)
	}
	if err != nil {
		return invalidf("--upstream %q: want a base URL such as http://chat:8000", c.Upstream)
	}
	// A path prefixes every proxied path (the proxy joins them); a query
	// would be merged into every request's and the probe's, and a
	// fragment is never sent: neither belongs to a base URL.
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(c.Upstream, "#") {
		return invalidf("--upstream %q: want a base URL without a query or fragment, such as http://chat:8000 (a path, if any, prefixes every proxied path)", c.Upstream)
	}
	switch {
	case c.HoldTimeout <= 0:
		return invalidf("--hold-timeout %s: want a duration > 0, longer than a cold start (a held request gets 503 after it)", c.HoldTimeout)
	case c.HoldTimeout > maxHoldTimeout:
		return invalidf("--hold-timeout %s: want at most %s (a SIGTERM drain waits for it, and a pod's grace period must cover it; a client gives up long before)", shortDuration(c.HoldTimeout), shortDuration(maxHoldTimeout))
	case c.RetryAfter <= 0:
		return invalidf("--retry-after %s: want a duration > 0 (the Retry-After of a 503 or 429, rounded up to seconds)", c.RetryAfter)
	case c.RetryAfter > maxRetryAfter:
		return invalidf("--retry-after %s: want at most %s (clients that honour Retry-After would wait that long before trying again)", shortDuration(c.RetryAfter), shortDuration(maxRetryAfter))
	case c.ProbeInterval < minProbeInterval || c.ProbeInterval > time.Hour:
		return durationIn("probe-interval", c.ProbeInterval, minProbeInterval, time.Hour, "probing more often busy-loops against the upstream; rarer delays every activation")
	case c.MaxHeld < 1 || c.MaxHeld > activator.MaxHeldLimit:
		return invalidf("--max-held %d: want 1 to %d (each held request takes about 22 KB besides its body)", c.MaxHeld, activator.MaxHeldLimit)
	case len(c.ProbePath) == 0 || c.ProbePath[0] != '/':
		return invalidf("--probe-path %q: want a path starting with /", c.ProbePath)
	case strings.ContainsAny(c.ProbePath, "?# \t"):
		// The probe sends the path as a path: a ? would be escaped to %3F,
		// every probe would fail and every request wait out --hold-timeout.
		return invalidf("--probe-path %q: want a path alone, without a query, fragment or space (e.g. /health)", c.ProbePath)
	case c.BodyTimeout < time.Second || c.BodyTimeout > time.Hour:
		return durationIn("body-timeout", c.BodyTimeout, time.Second, time.Hour, "a body read or write upstream needs a deadline, and one longer than an hour holds memory for nothing")
	case c.IdleTimeout < minIdleTimeout || c.IdleTimeout > maxIdleTimeout:
		return durationIn("idle-timeout", c.IdleTimeout, minIdleTimeout, maxIdleTimeout, "keep it longer than the idle timeout of the client or proxy in front, so that the client closes first")
	case c.UpstreamIdleTimeout < 100*time.Millisecond || c.UpstreamIdleTimeout > time.Hour:
		return durationIn("upstream-idle-timeout", c.UpstreamIdleTimeout, 100*time.Millisecond, time.Hour, "keep it shorter than the model server's keep-alive timeout (vLLM's 5s), so that the activator closes first")
	}
	if err := activator.CheckProtocol(c.UpstreamProtocol, u.Scheme, c.ProbePath); err != nil {
		return invalidf("--upstream-protocol %s with --upstream %s and --probe-path %s: %v", c.UpstreamProtocol, c.Upstream, c.ProbePath, err)
	}
	maxBytes, err := heldBytes(c.MaxHeldBytes)
	if err != nil {
		return invalidf("--max-held-bytes %q: %v", c.MaxHeldBytes, err)
	}
	// Full, the activator holds the bodies and each request's own memory:
	// within the process's memory limit (GOMEMLIMIT, set from the
	// container's), or the kernel kills it with every held request.
	if b, need := membudget.Now(), int64(c.MaxHeld)*activator.HeldRequestBytes+maxBytes; b.Limit > 0 && need > b.Limit {
		return invalidf("--max-held %d and --max-held-bytes %s hold up to %s (%d x 22 KB + the bodies), more than the memory limit %s (GOMEMLIMIT): lower them, or raise the container's limit",
			c.MaxHeld, c.MaxHeldBytes, formatBytes(float64(need)), c.MaxHeld, formatBytes(float64(b.Limit)))
	}
	// Every line the activator writes on stderr is a record of this
	// logger (the start, the drain, the probe's, the refusals, net/http's
	// own): one format, one JSON object a line with --log-format json.
	// slog's handler serialises the writes of all of them.
	log := c.LogFlags.Logger(e.stderr)
	defer crashlog.Handle(log) // a panic ends the activator as before, its trace one record (docs/serve.md)
	crashlog.SetLogger(log)
	c.LogFlags.monitorCrashes(e.ctx, e.stderr, log) // Go's fatal errors as one record too
	defer ignoreHangup(log)()
	a, err := activator.New(activator.Config{Upstream: u, HoldTimeout: c.HoldTimeout, MaxHeld: c.MaxHeld, MaxHeldBytes: maxBytes, BodyTimeout: c.BodyTimeout,
		ProbePath: c.ProbePath, ProbeInterval: c.ProbeInterval, RetryAfter: c.RetryAfter, UpstreamIdleTimeout: c.UpstreamIdleTimeout, UpstreamProtocol: c.UpstreamProtocol, Log: log})
	if err != nil {
		return invalid(err)
	}
	ln, err := activator.Listen(c.Listen, "--listen "+c.Listen, "--listen") // with ClientKeepAlive
	if err != nil {
		return err // runtime: exit 1
	}
	// Both listeners are bound before either serves: a port in use on
	// --metrics-listen exits 1 with --listen's released, nothing served.
	handler := a.Mux()
	var mln net.Listener
	if c.MetricsListen != "" {
		if mln, err = activator.Listen(c.MetricsListen, "--metrics-listen "+c.MetricsListen, "--metrics-listen"); err != nil {
			ln.Close()
			return err // runtime: exit 1
		}
		handler = a.ProxyMux()
	}
	probeCtx, stopProbe := context.WithCancel(context.WithoutCancel(e.ctx))
	probeDone := make(chan struct{})
	defer func() { stopProbe(); <-probeDone }() // its last line written before Run returns
	go func() { defer close(probeDone); defer crashlog.Handle(log); a.Run(probeCtx) }()
	// ReadHeaderTimeout bounds each request's headers (a connection that
	// sends none is closed after it); IdleTimeout the wait for the next
	// request on a keep-alive connection, which without it (and without a
	// ReadTimeout, which would cut held requests and streamed bodies) is
	// forever: a leaky or slowloris client holds its descriptor. Neither
	// runs while a request is being handled, so a held request is not cut.
	// HTTP2 pings client connections (ServerHTTP2): a dead gateway's held
	// requests do not stay counted as demand until --hold-timeout.
	// MaxHeaderBytes: 64 KiB of headers, not net/http's 1 MiB (8.6 MB of
	// heap parsed, per connection).
	// ErrorLog: net/http's own lines (an accept error, a handler's
	// panic) as warnings of the same logger, not the standard logger's
	// plain lines on the process's stderr.
	errorLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: c.IdleTimeout, Protocols: activator.Protocols(), MaxHeaderBytes: activator.MaxHeaderBytes,
		HTTP2: activator.ServerHTTP2(activator.DefaultClientPingInterval, activator.DefaultClientPingTimeout), ErrorLog: errorLog}
	errc := make(chan error, 2)
	// The metrics server answers until the drain's end (its held count is
	// what infscale scales from zero on), then shuts down within the same
	// bound (drainEnd); on an early return it is closed.
	var msrv *http.Server
	var drainEnd time.Time
	// The start line: the address in msg (grep "infscale activator on
	// http://"), each setting an attribute named as its flag.
	start := []any{"listen", ln.Addr().String(), "upstream", u.String(), "hold_timeout", c.HoldTimeout.String(), "max_held", c.MaxHeld, "max_held_bytes", heldBytesText(maxBytes)}
	if mln != nil {
		msrv = &http.Server{Handler: a.MetricsMux(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: c.IdleTimeout, MaxHeaderBytes: activator.MaxHeaderBytes, ErrorLog: errorLog}
		defer func() {
			ctx, cancel := context.WithDeadline(context.Background(), drainEnd) // done at once if zero
			defer cancel()
			if drainEnd.IsZero() || msrv.Shutdown(ctx) != nil {
				msrv.Close() // a scrape still answering at the bound is cut
			}
		}()
		start = append(start, "metrics_listen", mln.Addr().String())
		go func() { errc <- msrv.Serve(mln) }()
	}
	log.Info("infscale activator on http://"+ln.Addr().String(), start...)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		srv.Close()
		return err
	case <-e.ctx.Done():
	}
	log.Info("draining: held requests wait for the upstream, upgraded connections (WebSockets) run on, until the drain timeout (--hold-timeout + 5s)",
		"held", a.Held(), "upgrades", a.Upgrades(), "drain_timeout", (c.HoldTimeout + 5*time.Second).String())
	ctx, cancel := context.WithTimeout(context.Background(), c.HoldTimeout+5*time.Second)
	defer cancel()
	drainEnd, _ = ctx.Deadline()
	// While requests are held the listener stays open (and the metrics
	// one, with --metrics-listen), so that /metrics still counts them
	// (infscale scales from zero on that count: closed, they were not in
	// held and waited out --hold-timeout); a request
	// that still arrives is proxied if the upstream takes it, else 503
	// (Drain: never held, so the held count only falls). Then no new
	// connections, and the in-flight ones finish.
	a.Drain()
	// No keep-alive while draining (idle connections closed, each answer
	// closes its own): a client's next request, its retry of a 503 among
	// them, connects anew, through the Service to another activator, not
	// to this one on a pooled connection for up to --hold-timeout.
	srv.SetKeepAlivesEnabled(false)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for a.Held() > 0 && ctx.Err() == nil {
		select {
		case <-tick.C:
		case <-ctx.Done():
		case err := <-errc:
			return err
		}
	}
	// Shutdown leaves upgraded connections (WebSockets: hijacked) alone;
	// an exit now would cut them mid-session. They run on, each until
	// either side closes it, within the same bound; in its last
	// UpgradeCloseGrace those still open are closed: a WebSocket with a
	// close frame 1001 (going away) to both sides, so that its client
	// reconnects (through the Service, to another activator) knowing
	// why, rather than reading a reset. An answer still in flight holds
	// Shutdown up to the bound: the close starts beside it, at the same
	// time (else it never came, and the exit cut the WebSockets).
	dl, _ := ctx.Deadline()
	closeAt := dl.Add(-activator.UpgradeCloseGrace)
	closeUpgrades := func(n int) {
		closed, cut := a.CloseUpgrades(time.Until(dl))
		level := slog.LevelInfo
		if cut > 0 { // a connection ended without its close frame: the client saw a reset
			level = slog.LevelWarn
		}
		log.Log(context.Background(), level, "upgraded connections (WebSockets) still open at the end of the drain: closed with a close frame 1001 (going away) to both sides, or cut when it could not be written",
			"upgrades", n, "closed", closed, "cut", cut)
	}
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	closing := time.NewTimer(time.Until(closeAt))
	defer closing.Stop()
	var serr error
	upgradesClosed := false
	select {
	case serr = <-shut:
	case <-closing.C:
		if n := a.Upgrades(); n > 0 {
			closeUpgrades(n)
		}
		serr, upgradesClosed = <-shut, true
	}
	if errors.Is(serr, context.DeadlineExceeded) {
		// Answers still in flight at the bound (a completion longer than
		// it): cut now, their upstream requests cancelled, and said. The
		// drain did what it promises, so the exit is 0; before, Shutdown's
		// error ended the command as "infscale: interrupted", exit 130,
		// and nothing said an answer was cut.
		n := a.InFlight()
		srv.Close()
		log.Warn("answers still in flight at the end of the drain were cut (their clients read an incomplete answer; the drain lasts --hold-timeout + 5s): raise --hold-timeout, and the pod's grace period, above the longest answer to let them finish",
			"answers", n, "drain_timeout", (c.HoldTimeout + 5*time.Second).String())
		serr = nil
	}
	if serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("drain: %w", serr)
	}
	if upgradesClosed {
		return nil
	}
	wsCtx, wsCancel := context.WithDeadline(ctx, closeAt)
	defer wsCancel()
	if n := a.WaitUpgrades(wsCtx); n > 0 {
		closeUpgrades(n)
	}
	return nil
}

// heldBytes reads --max-held-bytes: a size with a unit (parseBytes's) or a
// bare number of bytes; at least 1 MiB (less holds hardly a prompt) and at
// most 1 TiB.
func heldBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return bytesIn(float64(n))
	} else if errors.Is(err, strconv.ErrRange) {
		return 0, errHeldTooLarge // a count of bytes past int64's
	}
	v, err := parseBytes(t)
	if errors.Is(err, errSizeTooLarge) {
		return 0, errHeldTooLarge
	}
	if err != nil || !strings.HasSuffix(t, "b") { // parseBytes reads a bare number as GB
		if strings.HasSuffix(t, "i") { // Kubernetes' quantity (128Mi), beside the container's limit
			return 0, fmt.Errorf("want a size such as 128MiB, 100MB or a number of bytes (Kubernetes' %s is %sB here)", strings.TrimSpace(s), strings.TrimSpace(s))
		}
		return 0, errors.New("want a size such as 128MiB, 100MB or a number of bytes")
	}
	return bytesIn(v)
}

// errHeldTooLarge is heldBytes's error for a size past its type's range:
// a size all the same, past the flag's range too.
var errHeldTooLarge = errors.New("too large: want 1MiB to 1TiB")

// heldBytesText writes n bytes as --max-held-bytes takes them: whole GiB
// or MiB when n is a multiple (134217728: 128MiB), else bytes.
func heldBytesText(n int64) string {
	switch {
	case n > 0 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "GiB"
	case n > 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

func bytesIn(v float64) (int64, error) {
	if v < 1<<20 || v > 1<<40 {
		return 0, fmt.Errorf("%.0f bytes: want 1MiB to 1TiB", v)
	}
	return int64(v), nil
}

// hangupIgnored is the line the activator logs for each SIGHUP it
// receives: it takes flags and has no configuration file to reload.
const hangupIgnored = "SIGHUP ignored: the activator has no configuration to reload (it takes flags); restart it to change them"

// ignoreHangup keeps a SIGHUP from ending the activator until the returned
// stop is called, logging hangupIgnored at INFO for each one. Go's default
// ends a process on SIGHUP (exit 129), and one reaches the activator
// from its crash monitor (which passes on the signals it gets) and from a
// `killall -HUP infscale` meant for serve's reload on the same host.
func ignoreHangup(log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer crashlog.Handle(log)
		for {
			select {
			case <-hup:
				log.Info(hangupIgnored)
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(hup); close(done); <-ended }
}
