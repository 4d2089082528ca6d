package activator

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// countingUpstream answers /health with health() and every other path
// with answer(w, r); it counts the requests on other paths by their
// X-Req header and the probes.
type countingUpstream struct {
	health func() int
	answer func(w http.ResponseWriter, r *http.Request)
	probes atomic.Int64
	mu     sync.Mutex
	seen   map[string]int
	uris   []string
}

func (c *countingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" {
		c.probes.Add(1)
		w.WriteHeader(c.health())
		return
	}
	c.mu.Lock()
	if c.seen == nil {
		c.seen = map[string]int{}
	}
	c.seen[r.Header.Get("X-Req")]++
	c.uris = append(c.uris, r.RequestURI)
	c.mu.Unlock()
	c.answer(w, r)
}

func (c *countingUpstream) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[id]
}

func (c *countingUpstream) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.seen {
		n += v
	}
	return n
}

// waitFor polls cond every 10 ms until it holds, failing after limit (a
// bound for a hung test, never the property tested).
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, limit)
		}
	}
}

func post(t *testing.T, u, id, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("X-Req", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestUpstream503PassedThrough: the upstream's probe answers 200 but its
// request path 503 (an overloaded queue-proxy, llama.cpp while loading).
// The activator forwards each request once and returns the upstream's own
// 503, as KEDA's interceptor and Knative's activator do; the 503 does not
// mark the upstream down, so the next request is proxied at once too.
// Before: the request was resent every probe interval until the hold
// timeout, and the client got the activator's "no upstream endpoint
// ready" instead of the upstream's answer.
func TestUpstream503PassedThrough(t *testing.T) {
	up := &countingUpstream{health: func() int { return 200 }, answer: func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Retry-After", "7")
		http.Error(w, "engine queue full", http.StatusServiceUnavailable)
	}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	a, base := start(t, Config{Upstream: u, ProbeInterval: 50 * time.Millisecond, HoldTimeout: 2 * time.Second})
	waitFor(t, "ready", 5*time.Second, a.Ready)
	for i, id := range []string{"a", "b"} {
		code, body := post(t, base+"/v1/completions", id, "prompt")
		if code != 503 || body != "engine queue full\n" {
			t.Errorf("request %s: %d %q, want the upstream's 503 \"engine queue full\"", id, code, body)
		}
		if n := up.count(id); n != 1 {
			t.Errorf("request %s reached the upstream %d times, want once", id, n)
		}
		if got := testutil.ToFloat64(a.direct); got != float64(i+1) {
			t.Errorf("after request %s: %v proxied at once, want %d (a 503 does not mark the upstream down)", id, got, i+1)
		}
	}
	if !a.Ready() {
		t.Error("a request's 503 marked the upstream not ready; readiness is the probe's")
	}
}

// TestHeld503PassedThrough: a request held while the probe fails is
// released once the probe passes and forwarded once; the upstream's 503
// goes back to the client.
func TestHeld503PassedThrough(t *testing.T) {
	var ready atomic.Bool
	up := &countingUpstream{health: func() int {
		if ready.Load() {
			return 200
		}
		return 503
	}, answer: func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "loading model", http.StatusServiceUnavailable)
	}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	a, base := start(t, Config{Upstream: u, ProbeInterval: 50 * time.Millisecond, HoldTimeout: 2 * time.Second})
	type res struct {
		code int
		body string
	}
	done := make(chan res, 1)
	go func() {
		code, body := post(t, base+"/v1/completions", "h", "prompt")
		done <- res{code, body}
	}()
	waitFor(t, "held", 5*time.Second, func() bool { return a.Held() == 1 })
	ready.Store(true)
	r := <-done
	if r.code != 503 || r.body != "loading model\n" || up.count("h") != 1 {
		t.Errorf("held request: %d %q, sent %d times; want the upstream's 503 \"loading model\", sent once", r.code, r.body, up.count("h"))
	}
}

// refusingTransport fails the first refuse round trips with a refused
// connection; with readFirst it reads one byte of the body first (the
// request was partly sent).
type refusingTransport struct {
	base      http.RoundTripper
	refuse    atomic.Int64
	readFirst bool
	calls     atomic.Int64
}

func (rt *refusingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/health" {
		return rt.base.RoundTrip(r)
	}
	rt.calls.Add(1)
	if rt.refuse.Add(-1) >= 0 {
		if rt.readFirst && r.Body != nil {
			r.Body.Read(make([]byte, 1))
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	return rt.base.RoundTrip(r)
}

// TestRefusedRetriedOnlyWhenNothingSent: a refused connection before any
// byte of the request was written is tried again (the request is held a
// probe interval): the upstream gets it once. A failure after part of the
// body was read is not tried again: the client gets 502, one attempt.
func TestRefusedRetriedOnlyWhenNothingSent(t *testing.T) {
	up := &countingUpstream{health: func() int { return 200 }, answer: func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "ok %s", b)
	}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for _, tc := range []struct {
		name      string
		readFirst bool
		code      int
		body      string
		calls     int64
	}{
		{"nothing sent", false, 200, "ok prompt", 3},
		{"partly sent", true, 502, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &refusingTransport{base: http.DefaultTransport, readFirst: tc.readFirst}
			rt.refuse.Store(2)
			a, base := start(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond, HoldTimeout: 5 * time.Second, Transport: rt})
			waitFor(t, "ready", 5*time.Second, a.Ready)
			code, body := post(t, base+"/v1/completions", tc.name, "prompt")
			if code != tc.code || (tc.body != "" && body != tc.body) || rt.calls.Load() != tc.calls {
				t.Errorf("%d %q after %d attempts, want %d %q after %d", code, body, rt.calls.Load(), tc.code, tc.body, tc.calls)
			}
			if n := up.count(tc.name); n > 1 {
				t.Errorf("the upstream got the request %d times", n)
			}
		})
	}
}

// TestDepartedClientFreesSlot: a client that leaves while its request is
// held (its body part sent: chunked, or a Content-Length over 1 MiB)
// frees its slot at once: the held count drops to 0 long before the
// one-minute hold timeout. Before: such bodies were not read while held,
// the activator never saw the client go, and the request stayed counted.
func TestDepartedClientFreesSlot(t *testing.T) {
	for _, tc := range []struct{ name, method, head, part string }{
		{"chunked", "POST", "Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n"},
		{"2 MiB", "POST", fmt.Sprintf("Content-Length: %d\r\n", 2<<20), strings.Repeat("x", 64<<10)},
		{"no body", "GET", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, HoldTimeout: time.Minute, ProbeInterval: 50 * time.Millisecond})
			c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(c, "%s /v1/completions HTTP/1.1\r\nHost: x\r\n%s\r\n%s", tc.method, tc.head, tc.part)
			waitFor(t, "held", 5*time.Second, func() bool { return a.Held() == 1 })
			c.Close()
			waitFor(t, "the departed client's slot freed", 5*time.Second, func() bool { return a.Held() == 0 })
			// One held request left the queue, neither released nor
			// answered: it is counted as the client's leaving (before, no
			// counter moved and the held gauge fell unexplained).
			if got := [3]float64{testutil.ToFloat64(a.clientLeft), testutil.ToFloat64(a.released), testutil.ToFloat64(a.timeouts)}; got != [3]float64{1, 0, 0} {
				t.Errorf("client left, released, hold timeouts = %v, want [1 0 0]", got)
			}
		})
	}
}

// TestSlowUploadsDoNotBlockRelease: ten chunked uploads that stall halfway
// are held first, ten quick requests after them; once the upstream is
// ready the quick ones are answered while the slow ones still stall (the
// test lets those finish only then). Before: release waited up to 1 s for
// each slow request's write, 10 s in all, and the quick ones met the 5 s
// hold timeout (503) first.
func TestSlowUploadsDoNotBlockRelease(t *testing.T) {
	var ready atomic.Bool
	up := &countingUpstream{health: func() int {
		if ready.Load() {
			return 200
		}
		return 503
	}, answer: func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "ok %d", len(b))
	}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	a, base := start(t, Config{Upstream: u, ProbeInterval: 50 * time.Millisecond, HoldTimeout: 5 * time.Second})
	gate := make(chan struct{})
	slow := make(chan string, 10)
	for i := range 10 {
		c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Req: slow%d\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", i)
		go func() {
			<-gate
			fmt.Fprint(c, "5\r\nworld\r\n0\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				slow <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			slow <- fmt.Sprintf("%d %s", resp.StatusCode, b)
		}()
	}
	waitFor(t, "ten slow uploads held", 5*time.Second, func() bool { return a.Held() == 10 })
	quick := make(chan string, 10)
	for i := range 10 {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", strings.NewReader("quick"))
			req.Header.Set("X-Req", fmt.Sprintf("quick%d", i))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				quick <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			quick <- fmt.Sprintf("%d %s", resp.StatusCode, b)
		}()
	}
	waitFor(t, "twenty held", 5*time.Second, func() bool { return a.Held() == 20 })
	ready.Store(true)
	for range 10 {
		if got := <-quick; got != "200 ok 5" {
			t.Errorf("a quick request behind the slow uploads: %q, want \"200 ok 5\"", got)
		}
	}
	close(gate)
	for range 10 {
		if got := <-slow; got != "200 ok 10" {
			t.Errorf("a slow upload: %q, want \"200 ok 10\"", got)
		}
	}
}

// TestOneProbeLoop: 200 requests held while the upstream is down, with a
// probe interval of an hour: the upstream is probed by the one loop (at
// start, and at most once early for the first held request), not once per
// arriving request. Before: one probe per held request.
func TestOneProbeLoop(t *testing.T) {
	up := &countingUpstream{health: func() int { return 503 }, answer: func(w http.ResponseWriter, r *http.Request) {}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	a, base := start(t, Config{Upstream: u, ProbeInterval: time.Hour, HoldTimeout: time.Minute, MaxHeld: 200})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 200}}
	for range 200 {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil)
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	waitFor(t, "200 held", 10*time.Second, func() bool { return a.Held() == 200 })
	if n := up.probes.Load(); n > 2 {
		t.Errorf("%d probes for 200 held requests, want at most 2 (one loop)", n)
	}
}

// TestDotSegmentsRefused: with --upstream http://h/chat, a path whose
// decoded form has a dot segment ("/%2e%2e/admin" is "/../admin") is
// refused with 400 before the prefix is joined, so nothing outside /chat
// is reached; an encoded slash inside a segment is no dot segment and
// passes as sent. Before: "/%2e%2e/admin" reached the upstream as
// "/chat/%2e%2e/admin", which it resolves to "/admin".
func TestDotSegmentsRefused(t *testing.T) {
	up := &countingUpstream{health: func() int { return 200 }, answer: func(w http.ResponseWriter, r *http.Request) {}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/chat")
	a, base := start(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond})
	waitFor(t, "ready", 5*time.Second, a.Ready)
	host := strings.TrimPrefix(base, "http://")
	for _, p := range []string{"/%2e%2e/admin", "/%2E%2E/admin", "/v1/%2e%2e/%2e%2e/admin", "/.%2e/admin", "/..%2fadmin", "/%2e%2e%5cadmin", "/%252e%252e/admin", "/v1/./../../admin"} {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", p)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if resp.StatusCode != 400 {
			t.Errorf("%s: %d, want 400 (a dot segment once decoded)", p, resp.StatusCode)
		}
	}
	for _, uri := range up.uris {
		if strings.Contains(strings.ToLower(uri), "admin") {
			t.Errorf("the upstream was asked for %s", uri)
		}
	}
	resp, err := http.Get(base + "/v1/a%2Fb")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(up.uris) == 0 || up.uris[len(up.uris)-1] != "/chat/v1/a%2Fb" {
		t.Errorf("/v1/a%%2Fb: %d, the upstream saw %v; want /chat/v1/a%%2Fb", resp.StatusCode, up.uris)
	}
}

// FuzzCheckPath: a path checkPath lets through stays under the upstream's
// prefix however the upstream resolves it: joined to /chat and cleaned
// (RFC 3986 dot-segment removal), also with backslashes read as slashes
// and after a second percent-decoding.
func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"/v1/models", "/../admin", "/%2e%2e/admin", "/a/./b", "/..\\admin", "/%2e%2e%2fadmin", "/v1/a%2Fb", "/...", "/.a/..b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if checkPath(p) != nil {
			return
		}
		forms := []string{p, strings.ReplaceAll(p, "\\", "/")}
		if d, err := url.PathUnescape(p); err == nil {
			forms = append(forms, d, strings.ReplaceAll(d, "\\", "/"))
		}
		for _, q := range forms {
			if c := path.Clean("/chat/" + q); c != "/chat" && !strings.HasPrefix(c, "/chat/") {
				t.Errorf("checkPath let %q through; joined to /chat it resolves to %q", p, c)
			}
		}
	})
}

// failDialTransport fails its first fails dials with err, as net.Dialer
// wraps a dial's error (a *net.OpError, Op "dial"), then dials for real.
type failDialTransport struct {
	*http.Transport
	fails atomic.Int64
	dials atomic.Int64
}

func newFailDialTransport(fails int64, err error) *failDialTransport {
	t := &failDialTransport{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.fails.Store(fails)
	var d net.Dialer
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		t.dials.Add(1)
		if t.fails.Add(-1) >= 0 {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		return d.DialContext(ctx, network, addr)
	}
	t.DisableKeepAlives = true // every attempt dials
	return t
}

// TestDialFailureHeldAgain: the probe passed, then the request's own dial
// fails before any byte is written: a headless Service with no endpoints
// has no DNS name (NXDOMAIN), a node route is gone (EHOSTUNREACH), a CNI
// drops the SYN of a Service with no endpoints (the dial times out). As a
// refused connection, nothing reached the upstream, so the request is held
// again and tried once a dial succeeds: the upstream gets it once, the
// client its answer. Before: only ECONNREFUSED was held again; these were
// the client's 502 ("dial tcp: lookup chat: no such host") although the
// request was never sent.
func TestDialFailureHeldAgain(t *testing.T) {
	up := &countingUpstream{health: func() int { return 200 }, answer: func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "ok %s", b)
	}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"no such host", &net.DNSError{Err: "no such host", Name: "chat", IsNotFound: true}},
		{"host unreachable", os.NewSyscallError("connect", syscall.EHOSTUNREACH)},
		{"dial timeout", &timeoutError{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newFailDialTransport(2, tc.err)
			a, base := start(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond, HoldTimeout: 5 * time.Second, Transport: rt})
			waitFor(t, "ready", 5*time.Second, a.Ready)
			code, body := post(t, base+"/v1/completions", tc.name, "prompt")
			// Two failed dials, then the third reaches the upstream.
			if code != 200 || body != "ok prompt" || rt.dials.Load() != 3 {
				t.Errorf("%d %q after %d dials, want 200 \"ok prompt\" after 3", code, body, rt.dials.Load())
			}
			if n := up.count(tc.name); n != 1 {
				t.Errorf("the upstream got the request %d times, want once", n)
			}
			if n := testutil.ToFloat64(a.refused); n != 2 {
				t.Errorf("upstream_refused_total %v, want 2 (the failed dials)", n)
			}
			// Held twice, one request: released once (before, once per
			// hold: 2), and proxied at once once.
			if r, p := testutil.ToFloat64(a.released), testutil.ToFloat64(a.direct); r != 1 || p != 1 {
				t.Errorf("released_total %v, proxied_total %v; want 1 and 1", r, p)
			}
		})
	}
}

// timeoutError is a dial timeout's error (net.Error with Timeout true).
type timeoutError struct{}

func (*timeoutError) Error() string   { return "i/o timeout" }
func (*timeoutError) Timeout() bool   { return true }
func (*timeoutError) Temporary() bool { return true }

// TestReleasedWhileBodyArrivesCountedOnce: a chunked upload is held, its
// body half sent, when the upstream comes up and every held request is
// released; then the client leaves (or its body stalls past
// --body-timeout). The request left the held count once and never went
// upstream: it is counted once, as the client's leaving (or a body
// timeout), not as released. Before: the stalled body counted released 1
// and body_timeouts 1, so the counters that account for every request
// leaving the held count (docs/activator.md) added up to 2; the departed
// client counted released 1 and nothing else (its cut-off chunked body,
// io.ErrUnexpectedEOF, was read as a complete one, and the request died
// unseen on its cancelled context).
func TestReleasedWhileBodyArrivesCountedOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave bool
		want  [3]float64 // released, client left, body timeouts
	}{
		{"client leaves", true, [3]float64{0, 1, 0}},
		{"body stalls", false, [3]float64{0, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, release := downAddr(t)
			up := &countingUpstream{health: func() int { return 200 }, answer: func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }}
			a, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: addr}, HoldTimeout: time.Minute, BodyTimeout: time.Second, ProbeInterval: 20 * time.Millisecond})
			c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Req: slow\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
			waitFor(t, "held", 5*time.Second, func() bool { return a.Held() == 1 })
			comeUp(t, addr, release, up)
			waitFor(t, "released", 5*time.Second, func() bool { return a.Ready() && a.Held() == 0 })
			if tc.leave {
				c.Close()
			}
			waitFor(t, "answered or gone", 5*time.Second, func() bool {
				return testutil.ToFloat64(a.clientLeft)+testutil.ToFloat64(a.bodyTimeouts) > 0
			})
			time.Sleep(50 * time.Millisecond) // any second count would be in by now
			got := [3]float64{testutil.ToFloat64(a.released), testutil.ToFloat64(a.clientLeft), testutil.ToFloat64(a.bodyTimeouts)}
			if got != tc.want {
				t.Errorf("released, client left, body timeouts = %v, want %v", got, tc.want)
			}
			if n := up.count("slow"); n != 0 || a.Held() != 0 || testutil.ToFloat64(a.held) != 0 {
				t.Errorf("upstream got it %d times, held %d (gauge %v); want 0, 0, 0", n, a.Held(), testutil.ToFloat64(a.held))
			}
		})
	}
}

// TestUpstreamFailuresCounted: requests the upstream takes and does not
// answer whole are counted in infscale_activator_upstream_failures_total,
// and never sent again: an event stream reset after its first event (the
// client reads "data: 1" and then an error, not a clean end), and a
// connection closed before any answer (502). A client that leaves
// mid-stream is not an upstream failure, nor is a whole answer.
// Before: no counter moved for either failure; the reset was a line of
// net/http's own log on stderr, the 502 nothing.
func TestUpstreamFailuresCounted(t *testing.T) {
	up := &countingUpstream{health: func() int { return 200 }, answer: func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/reset":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: 1\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
			fallthrough
		case "/close":
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
			}
		case "/endless":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 0; r.Context().Err() == nil; i++ {
				fmt.Fprintf(w, "data: %d\n\n", i)
				w.(http.Flusher).Flush()
				time.Sleep(10 * time.Millisecond)
			}
		default:
			fmt.Fprint(w, "whole")
		}
	}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	a, base := start(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond})
	waitFor(t, "ready", 5*time.Second, a.Ready)
	failures := func() float64 {
		mfs, err := a.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "infscale_activator_upstream_failures_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return -1 // not exported
	}
	get := func(path string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("X-Req", path)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	if code, body, err := get("/whole"); code != 200 || body != "whole" || err != nil || failures() != 0 {
		t.Fatalf("a whole answer: %d %q %v, failures %v; want 200, 0", code, body, err, failures())
	}
	code, body, err := get("/reset")
	if code != 200 || body != "data: 1\n\n" || err == nil || failures() != 1 {
		t.Errorf("reset mid-stream: %d %q err %v, failures %v; want 200, the first event, an error, 1", code, body, err, failures())
	}
	if code, _, err := get("/close"); code != 502 || err != nil || failures() != 2 {
		t.Errorf("closed before answering: %d %v, failures %v; want 502, 2", code, err, failures())
	}
	// A client that leaves mid-stream.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/endless", nil)
	req.Header.Set("X-Req", "/endless")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = bufio.NewReader(resp.Body).ReadString('\n')
	cancel()
	resp.Body.Close()
	time.Sleep(100 * time.Millisecond) // the proxy sees the client go
	if f := failures(); f != 2 {
		t.Errorf("after a client left mid-stream: failures %v, want still 2", f)
	}
	for _, p := range []string{"/whole", "/reset", "/close", "/endless"} {
		if n := up.count(p); n != 1 {
			t.Errorf("%s sent upstream %d times, want once", p, n)
		}
	}
}

// TestUpgradeHeldAndProxied: a WebSocket upgrade passes through once the
// upstream answers 101, whether the upstream was ready when it came or it
// was held until the upstream came up: the client reads the upstream's
// 101 and then talks to it on the same connection ("hello" echoed).
// Guards the wrapping of answers' bodies (TestUpstreamFailuresCounted),
// which a 101's body must escape: ReverseProxy writes to it.
func TestUpgradeHeldAndProxied(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held %v", held), func(t *testing.T) {
			addr, release := downAddr(t)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/health" {
					return
				}
				if r.Header.Get("Upgrade") != "websocket" {
					http.Error(w, "no upgrade", http.StatusBadRequest)
					return
				}
				c, brw, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer c.Close()
				fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
				brw.Flush()
				l, _ := brw.ReadString('\n')
				fmt.Fprintf(brw, "echo %s", l)
				brw.Flush()
			})
			if !held {
				comeUp(t, addr, release, h)
			}
			a, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: addr}, ProbeInterval: 20 * time.Millisecond})
			if !held {
				waitFor(t, "ready", 5*time.Second, a.Ready)
			}
			c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprint(c, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
			if held {
				waitFor(t, "held", 5*time.Second, func() bool { return a.Held() == 1 })
				comeUp(t, addr, release, h)
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprint(c, "hello\n")
			l, err := br.ReadString('\n')
			if resp.StatusCode != 101 || l != "echo hello\n" || err != nil {
				t.Errorf("%d, then %q %v; want 101, then \"echo hello\\n\"", resp.StatusCode, l, err)
			}
		})
	}
}

// TestStalledReaderCancelsUpstream: a client takes the headers of an event
// stream and then stops reading, its connection open (a hung client, a
// proxy that lost track of it). Once the socket buffers are full, a write
// to it that makes no progress for --body-timeout (300 ms here) ends the
// answer: the upstream request is cancelled, its slot (a running request
// on the model server) given back, and the activator's goroutine and
// connections with it. Before: the write blocked for as long as the client
// kept its connection open, and the upstream request with it (still open
// after 5 s here; forever in a pod).
func TestStalledReaderCancelsUpstream(t *testing.T) {
	cancelled := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		event := "data: " + strings.Repeat("x", 1000) + "\n\n"
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, event); err != nil {
				break
			}
			w.(http.Flusher).Flush()
		}
		close(cancelled)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	a, base := start(t, Config{Upstream: u, BodyTimeout: 300 * time.Millisecond, ProbeInterval: 20 * time.Millisecond})
	waitFor(t, "ready", 5*time.Second, a.Ready)
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET /v1/stream HTTP/1.1\r\nHost: x\r\n\r\n")
	if l, err := bufio.NewReader(c).ReadString('\n'); err != nil || l != "HTTP/1.1 200 OK\r\n" {
		t.Fatalf("status line %q %v", l, err)
	}
	// The client reads no more and keeps its connection open.
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request still runs 5 s after its client stopped reading")
	}
}
