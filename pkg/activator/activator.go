// Package activator is a reverse proxy for a model scaled to zero: while
// no upstream endpoint is ready (its readiness probe fails) it holds
// requests in a bounded FIFO queue and exports how many it holds
// (infscale_activator_held_requests, which infscale reads as `held` and
// scales from zero on); once the upstream is ready it releases them in
// arrival order. A held request that waits past HoldTimeout gets 503 with
// Retry-After; one arriving at a full queue gets 429. Responses stream
// through unbuffered (server-sent events flush per write). Requests in
// flight upstream are not counted: the servers' own running and waiting
// count them, so `queue` does not count a request twice.
package activator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/infscale/infscale/internal/httpurl"
)

// Config configures an Activator. Zero fields take the defaults noted.
type Config struct {
	// Upstream is the base URL requests are proxied to (a Service).
	Upstream *url.URL
	// HoldTimeout is the longest a request is held (default 5 min; a cold
	// start of 1.5 to 10 minutes must fit in it, or clients see 503s).
	HoldTimeout time.Duration
	// MaxHeld bounds the queue (default 1000); beyond it, 429.
	MaxHeld int
	// ProbePath is the upstream's readiness endpoint (default /health,
	// vLLM's; 200 means ready).
	ProbePath string
	// ProbeInterval is how often readiness is probed (default 500 ms).
	ProbeInterval time.Duration
	// RetryAfter is the Retry-After of a 503 or 429 (default 5 s).
	RetryAfter time.Duration
	// Client probes the upstream (default: a 2 s timeout).
	Client *http.Client
	// Transport carries proxied requests (default http.DefaultTransport's
	// clone).
	Transport http.RoundTripper
}

// Activator is the proxy. Create it with New, run its probe with Run, and
// serve it as an http.Handler.
type Activator struct {
	cfg   Config
	proxy *httputil.ReverseProxy
	reg   *prometheus.Registry

	held      prometheus.Gauge
	ready     prometheus.Gauge
	released  prometheus.Counter
	timeouts  prometheus.Counter
	rejected  prometheus.Counter
	direct    prometheus.Counter
	probeFail prometheus.Counter
	notReady  prometheus.Counter

	mu      sync.Mutex
	up      bool
	downAt  time.Time // when a request last found no ready endpoint
	queue   []*waiter // held, oldest first (gone ones skipped)
	count   int       // held: queued and not gone
	probeCh chan struct{}
}

// waiter is one held request: release is closed when it may go upstream;
// sent is signalled once its request is written upstream (or failed), so
// the next is released only then (arrival order at the upstream).
type waiter struct {
	release chan struct{}
	sent    chan struct{}
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
	if cfg.ProbePath == "" {
		cfg.ProbePath = "/health"
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = 500 * time.Millisecond
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = 5 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 2 * time.Second}
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	a := &Activator{cfg: cfg, reg: prometheus.NewRegistry(), probeCh: make(chan struct{}, 1)}
	a.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(cfg.Upstream)
			r.SetXForwarded()
		},
		Transport:     notReadyTransport{cfg.Transport},
		FlushInterval: -1, // flush every write: token streams pass unbuffered
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if at, _ := r.Context().Value(attemptKey{}).(*attempt); at != nil && errors.Is(err, errNotReady) {
				at.notReady = true // ServeHTTP holds it again; nothing written
				return
			}
			if errors.Is(err, context.Canceled) {
				return
			}
			http.Error(w, "activator: upstream: "+err.Error(), http.StatusBadGateway)
		},
	}
	f := prometheus.NewGauge
	c := prometheus.NewCounter
	a.held = f(prometheus.GaugeOpts{Name: "infscale_activator_held_requests", Help: "Requests held while no upstream endpoint is ready (not those in flight upstream)."})
	a.ready = f(prometheus.GaugeOpts{Name: "infscale_activator_upstream_ready", Help: "1 when the upstream's last readiness probe succeeded, else 0."})
	a.released = c(prometheus.CounterOpts{Name: "infscale_activator_released_total", Help: "Held requests released upstream once it was ready."})
	a.timeouts = c(prometheus.CounterOpts{Name: "infscale_activator_hold_timeouts_total", Help: "Held requests answered 503 after the hold timeout."})
	a.rejected = c(prometheus.CounterOpts{Name: "infscale_activator_rejected_total", Help: "Requests answered 429 because the hold queue was full."})
	a.direct = c(prometheus.CounterOpts{Name: "infscale_activator_proxied_total", Help: "Requests proxied at once (the upstream was ready)."})
	a.probeFail = c(prometheus.CounterOpts{Name: "infscale_activator_probe_failures_total", Help: "Readiness probes that failed."})
	a.notReady = c(prometheus.CounterOpts{Name: "infscale_activator_upstream_not_ready_total", Help: "Requests sent upstream that found no ready endpoint (refused, or 503) and were held again."})
	a.reg.MustRegister(a.held, a.ready, a.released, a.timeouts, a.rejected, a.direct, a.probeFail, a.notReady)
	return a, nil
}

// Registry is the activator's own registry (serve it on /metrics).
func (a *Activator) Registry() *prometheus.Registry { return a.reg }

// Mux is what `infscale activator` listens with: GET /metrics (the
// registry), GET /healthz ("ok") and every other request proxied by a.
func (a *Activator) Mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("/", a)
	return mux
}

// Held is the number of requests held now.
func (a *Activator) Held() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count
}

// Ready reports the last probe's verdict.
func (a *Activator) Ready() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.up
}

// Run probes the upstream every ProbeInterval (at once when a request is
// held) and releases held requests in order while it is ready, until ctx
// is done.
func (a *Activator) Run(ctx context.Context) {
	tick := time.NewTicker(a.cfg.ProbeInterval)
	defer tick.Stop()
	for {
		up := a.probe(ctx)
		a.mu.Lock()
		// A request found no endpoint less than an interval ago: the probe
		// answers for a Service, not an endpoint; wait a whole interval
		// before believing it, so held requests do not spin.
		if up && time.Since(a.downAt) < a.cfg.ProbeInterval {
			up = false
		}
		a.up = up
		a.mu.Unlock()
		if up {
			a.ready.Set(1)
			a.releaseAll(ctx)
		} else {
			a.ready.Set(0)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-a.probeCh:
		}
	}
}

func (a *Activator) probe(ctx context.Context) bool {
	u := *a.cfg.Upstream
	u.Path = a.cfg.ProbePath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false
	}
	resp, err := a.cfg.Client.Do(req)
	if err != nil {
		a.probeFail.Inc()
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		a.probeFail.Inc()
		return false
	}
	return true
}

// releaseAll lets the held requests go one at a time, oldest first, each
// once the previous one's request was written upstream.
func (a *Activator) releaseAll(ctx context.Context) {
	for {
		a.mu.Lock()
		if !a.up || len(a.queue) == 0 {
			a.mu.Unlock()
			return
		}
		w := a.queue[0]
		a.queue[0] = nil
		a.queue = a.queue[1:]
		if w.gone {
			a.mu.Unlock()
			continue
		}
		close(w.release)
		a.count--
		a.held.Dec()
		a.released.Inc()
		a.mu.Unlock()
		select {
		case <-w.sent:
		case <-time.After(time.Second): // a slow client body: do not stall the others
		case <-ctx.Done():
			return
		}
	}
}

// ServeHTTP proxies r at once when the upstream is ready and nothing is
// held before it; otherwise holds it (or refuses it when the queue is
// full) until the upstream is ready or HoldTimeout passes. A request whose
// body is at most maxReplay bytes is held again, not failed, when the
// upstream turns out to have no ready endpoint after all (connection
// refused, or 503 before anything was sent on: the probe was stale).
func (a *Activator) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	// The upstream may answer (an event stream's headers) before the
	// transport's last read of the request body; net/http's HTTP/1 server
	// closes the body once the response starts unless full duplex is on,
	// and the transport then drops the upstream connection mid-stream.
	_ = http.NewResponseController(rw).EnableFullDuplex()
	var body []byte
	replayable := r.Body == nil || r.Body == http.NoBody
	if !replayable && r.ContentLength >= 0 && r.ContentLength <= maxReplay {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxReplay+1))
		if err != nil {
			http.Error(rw, "activator: reading the request: "+err.Error(), http.StatusBadRequest)
			return
		}
		body, replayable = b, len(b) <= maxReplay
	}
	deadline := time.Now().Add(a.cfg.HoldTimeout)
	for {
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		at := &attempt{retryable: replayable}
		ctx := context.WithValue(r.Context(), attemptKey{}, at)
		a.mu.Lock()
		if a.up && len(a.queue) == 0 {
			a.mu.Unlock()
			a.direct.Inc()
			a.proxy.ServeHTTP(rw, r.WithContext(ctx))
		} else {
			w, ok := a.hold(rw, r, deadline) // unlocks a.mu
			if !ok {
				return
			}
			var once sync.Once
			done := func() { once.Do(func() { close(w.sent) }) }
			trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { done() }}
			a.proxy.ServeHTTP(rw, r.WithContext(httptrace.WithClientTrace(ctx, trace)))
			done()
		}
		if !at.notReady {
			return
		}
		a.notReady.Inc()
		a.mu.Lock()
		a.up, a.downAt = false, time.Now()
		a.mu.Unlock()
		a.ready.Set(0)
	}
}

// maxReplay is the largest request body kept to resend when the upstream
// was not ready after all.
const maxReplay = 1 << 20

// attempt is one proxying of a request: retryable when its body can be
// sent again; notReady when the upstream had no ready endpoint.
type attempt struct{ retryable, notReady bool }

type attemptKey struct{}

// errNotReady marks an upstream answer that means no endpoint is ready.
var errNotReady = errors.New("upstream has no ready endpoint")

// notReadyTransport turns a refused connection, or a 503, into errNotReady
// for requests that can be held and sent again.
type notReadyTransport struct{ base http.RoundTripper }

func (t notReadyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	at, _ := req.Context().Value(attemptKey{}).(*attempt)
	resp, err := t.base.RoundTrip(req)
	retry := at != nil && at.retryable
	switch {
	case err != nil && retry && errors.Is(err, syscall.ECONNREFUSED):
		return nil, fmt.Errorf("%w: %v", errNotReady, err)
	case err == nil && retry && resp.StatusCode == http.StatusServiceUnavailable:
		resp.Body.Close()
		return nil, errNotReady
	}
	return resp, err
}

// hold queues r (a.mu held on entry, released) and waits until it is
// released (true) or answered: 429 when the queue is full, 503 at the
// deadline, nothing when the client left.
func (a *Activator) hold(rw http.ResponseWriter, r *http.Request, deadline time.Time) (*waiter, bool) {
	if a.count >= a.cfg.MaxHeld {
		a.mu.Unlock()
		a.rejected.Inc()
		a.refuse(rw, http.StatusTooManyRequests, fmt.Sprintf("activator: %d requests already held", a.cfg.MaxHeld))
		return nil, false
	}
	w := &waiter{release: make(chan struct{}), sent: make(chan struct{})}
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
	a.held.Inc()
	a.mu.Unlock()
	select {
	case a.probeCh <- struct{}{}:
	default:
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-w.release:
	case <-timer.C:
		if a.abandon(w) {
			a.timeouts.Inc()
			a.refuse(rw, http.StatusServiceUnavailable, fmt.Sprintf("activator: no upstream endpoint ready within %v", a.cfg.HoldTimeout))
			return nil, false
		}
	case <-r.Context().Done():
		if a.abandon(w) {
			return nil, false
		}
	}
	return w, true
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
	rw.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(a.cfg.RetryAfter.Seconds()))))
	http.Error(rw, msg, code)
}
