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
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// down is downAddr's address alone: an upstream that stays down.
func down(t *testing.T) string {
	addr, _ := downAddr(t)
	return addr
}

func start(t *testing.T, cfg Config) (*Activator, string) {
	t.Helper()
	a, srv := serve(t, cfg, nil)
	return a, srv.URL
}

// serve runs an Activator for cfg, its probe and a test server speaking
// protocols (nil: HTTP/1.x) until the test ends.
func serve(t *testing.T, cfg Config, protocols *http.Protocols) (*Activator, *httptest.Server) {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go a.Run(ctx)
	srv := httptest.NewUnstartedServer(a)
	srv.Config.Protocols = protocols
	srv.Start()
	t.Cleanup(srv.Close)
	return a, srv
}

// comeUp brings a downAddr upstream up: its socket released, h serves on
// its address until the test ends.
func comeUp(t *testing.T, addr string, release func(), h http.Handler) {
	t.Helper()
	release()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: h}
	go up.Serve(ln)
	t.Cleanup(func() { up.Close() })
}

// fifoUpstream serves one request at a time (a single-slot engine) and
// answers each with its position in arrival order; /health is 200.
func fifoUpstream() http.Handler {
	var mu sync.Mutex
	n := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		mu.Lock() // arrival order: the order the handler starts
		defer mu.Unlock()
		n++
		body, _ := io.ReadAll(r.Body)
		time.Sleep(20 * time.Millisecond)
		fmt.Fprintf(w, "%d %s", n, body)
	})
}

// TestReleaseAll: five requests while the upstream is down, the upstream
// up 3 s later: all five are held (the gauge reads 5), then all released
// at once (none waits for another's write: TestSlowUploadsDoNotBlockRelease),
// each sent upstream once, and each client gets its own answer.
func TestReleaseAll(t *testing.T) {
	addr, release := downAddr(t)
	sent := &orderTransport{rt: http.DefaultTransport}
	a, url0 := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: addr}, ProbeInterval: 100 * time.Millisecond, Transport: sent})
	type answer struct {
		i    int
		body string
	}
	answers := make(chan answer, 5)
	for i := range 5 {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, url0+"/v1/completions", strings.NewReader(fmt.Sprintf("req%d", i)))
			req.Header.Set("X-Req", strconv.Itoa(i))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{i, err.Error()}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- answer{i, string(b)}
		}()
		// The next request is sent once this one is held, so that the
		// arrival order is the send order even on a loaded machine.
		for deadline := time.Now().Add(5 * time.Second); a.Held() < i+1; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("request %d not held after 5 s (held %d)", i, a.Held())
			}
		}
	}
	if got := testutil.ToFloat64(a.held); got != 5 || a.Held() != 5 {
		t.Fatalf("held gauge %v (Held %d) while the upstream is down, want 5", got, a.Held())
	}
	time.Sleep(3 * time.Second)
	comeUp(t, addr, release, fifoUpstream())
	got := map[int]string{}
	for range 5 {
		select {
		case ans := <-answers:
			got[ans.i] = ans.body
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d answers: %v", len(got), got)
		}
	}
	for i := range 5 {
		if b := got[i]; !strings.HasSuffix(b, fmt.Sprintf(" req%d", i)) {
			t.Errorf("request %d answered %q, want its own body echoed", i, b)
		}
	}
	order := sent.sent()
	slices.Sort(order)
	if fmt.Sprint(order) != "[0 1 2 3 4]" {
		t.Errorf("sent upstream %v, want each of the five once", order)
	}
	if h := testutil.ToFloat64(a.held); h != 0 || testutil.ToFloat64(a.released) != 5 {
		t.Errorf("after release: held %v, released %v; want 0 and 5", h, testutil.ToFloat64(a.released))
	}
}

// orderTransport records the X-Req header of each request the activator
// sends upstream, in the order it hands them over (probes excluded).
type orderTransport struct {
	rt    http.RoundTripper
	mu    sync.Mutex
	order []string
}

func (o *orderTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if id := r.Header.Get("X-Req"); id != "" {
		o.mu.Lock()
		o.order = append(o.order, id)
		o.mu.Unlock()
	}
	return o.rt.RoundTrip(r)
}

func (o *orderTransport) sent() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.order...)
}

// TestHoldTimeout: --hold-timeout 2s and an upstream that never comes up:
// five 503s with Retry-After, all within 2.5 s.
func TestHoldTimeout(t *testing.T) {
	a, url0 := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, HoldTimeout: 2 * time.Second, ProbeInterval: 100 * time.Millisecond})
	begin := time.Now()
	var wg sync.WaitGroup
	codes := make([]int, 5)
	retry := make([]string, 5)
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(url0 + "/v1/models")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i], retry[i] = resp.StatusCode, resp.Header.Get("Retry-After")
		}()
	}
	wg.Wait()
	took := time.Since(begin)
	for i := range 5 {
		if codes[i] != 503 || retry[i] != "5" {
			t.Errorf("request %d: %d Retry-After %q, want 503 and 5", i, codes[i], retry[i])
		}
	}
	if took > 2500*time.Millisecond || took < 2*time.Second {
		t.Errorf("five 503s after %v, want 2 s to 2.5 s", took)
	}
	if testutil.ToFloat64(a.timeouts) != 5 || a.Held() != 0 {
		t.Errorf("timeouts %v held %d, want 5 and 0", testutil.ToFloat64(a.timeouts), a.Held())
	}
}

// TestQueueFull: with --max-held 2, a third request is refused at once
// with 429; the two held ones are not disturbed.
func TestQueueFull(t *testing.T) {
	a, url0 := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, MaxHeld: 2, HoldTimeout: time.Second})
	for range 2 {
		go func() {
			if resp, err := http.Get(url0); err == nil {
				resp.Body.Close()
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Second)
	for a.Held() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	begin := time.Now()
	resp, err := http.Get(url0)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || time.Since(begin) > 500*time.Millisecond {
		t.Errorf("third request: %d (Retry-After %q) after %v, want 429 at once", resp.StatusCode, resp.Header.Get("Retry-After"), time.Since(begin))
	}
	if a.Held() != 2 || testutil.ToFloat64(a.rejected) != 1 {
		t.Errorf("held %d rejected %v, want 2 and 1", a.Held(), testutil.ToFloat64(a.rejected))
	}
}

// TestStreamsUnbuffered: an event stream passes through as written: the
// first event arrives while the upstream still sleeps before the second.
// Requests proxied at once are not counted as held.
func TestStreamsUnbuffered(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(500 * time.Millisecond)
		fmt.Fprint(w, "data: 2\n\n")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	a, url0 := start(t, Config{Upstream: u, ProbeInterval: 50 * time.Millisecond})
	for !a.Ready() {
		time.Sleep(10 * time.Millisecond)
	}
	begin := time.Now()
	resp, err := http.Get(url0 + "/v1/completions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: 1\n" || time.Since(begin) > 300*time.Millisecond {
		t.Errorf("first event %q (%v) after %v, want it before the upstream's 500 ms pause ends", line, err, time.Since(begin))
	}
	if testutil.ToFloat64(a.direct) != 1 || testutil.ToFloat64(a.held) != 0 {
		t.Errorf("proxied %v held %v, want 1 and 0", testutil.ToFloat64(a.direct), testutil.ToFloat64(a.held))
	}
}

// TestMetricsDocumented: docs/activator.md's table lists every metric of
// the activator's registry with its type, and nothing else.
func TestMetricsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "activator.md"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Upstream: &url.URL{Scheme: "http", Host: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := a.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) < 7 {
		t.Fatalf("%d metrics gathered", len(mfs))
	}
	docType := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(infscale_activator_[a-z_]+)` \\| ([a-z]+) \\|").FindAllStringSubmatch(string(doc), -1) {
		docType[m[1]] = m[2]
	}
	for _, mf := range mfs {
		typ, ok := docType[mf.GetName()]
		switch {
		case !ok:
			t.Errorf("%s is not in docs/activator.md's metric table", mf.GetName())
		case typ != strings.ToLower(mf.GetType().String()):
			t.Errorf("%s is a %s, docs/activator.md's table says %s", mf.GetName(), strings.ToLower(mf.GetType().String()), typ)
		}
		if len(mf.GetMetric()) > 0 && len(mf.GetMetric()[0].GetLabel()) > 0 {
			t.Errorf("%s has labels, which docs/activator.md's table has no column for", mf.GetName())
		}
		delete(docType, mf.GetName())
	}
	for name := range docType {
		t.Errorf("%s is in docs/activator.md's metric table but not exported", name)
	}
}

// TestStreamedPOSTs: 200 streamed POSTs through the activator, none cut.
// The upstream answers once it has the body, which can be before the
// proxy's transport makes its last read of the request body; without full
// duplex net/http closes that body when the response starts and the
// transport drops the upstream connection mid-stream (about 4% of these
// requests failed with "unexpected EOF").
func TestStreamedPOSTs(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		for range 8 {
			time.Sleep(2 * time.Millisecond)
			fmt.Fprint(w, "data: {}\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	a, url0 := start(t, Config{Upstream: u, ProbeInterval: 50 * time.Millisecond})
	for !a.Ready() {
		time.Sleep(10 * time.Millisecond)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for range 4 {
		wg.Go(func() {
			for range 50 {
				resp, err := http.Post(url0+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a b c","stream":true}`))
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if failed != 0 {
		t.Errorf("%d of 200 streamed POSTs cut", failed)
	}
}

// TestUpstreamPathPrefix: an upstream base URL's path prefixes every
// proxied path (http://h/chat + /v1/models = /chat/v1/models), while the
// readiness probe GETs --probe-path on the host as given (/health, not
// /chat/health), as docs/activator.md says.
func TestUpstreamPathPrefix(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL + "/chat")
	_, base := start(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond})
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(paths, "/chat/v1/models") || !slices.Contains(paths, "/health") || slices.Contains(paths, "/chat/health") {
		t.Errorf("upstream saw %v; want /chat/v1/models proxied and /health probed", paths)
	}
}

// TestNewRefusesBadPort: an upstream whose port is not 1..65535 is refused
// (net/url accepts it; every proxied request would fail, 503 forever).
func TestNewRefusesBadPort(t *testing.T) {
	_, err := New(Config{Upstream: &url.URL{Scheme: "http", Host: "127.0.0.1:99999"}})
	if err == nil || !strings.Contains(err.Error(), "port 99999: want 1 to 65535") {
		t.Errorf("err = %v, want the port refused", err)
	}
}

// TestReleaseDocumented: docs/keda.md's comparison of the two paths to
// zero says what the activator does (docs/activator.md,
// TestSlowUploadsDoNotBlockRelease): held requests are released all at
// once, oldest first. It said "arrival order (each one written upstream
// before the next goes)", the behaviour before the release stopped
// waiting for each write, and named only --max-held as a cause of 429.
func TestReleaseDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "keda.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(string(doc), "\n") {
		if cells := strings.Split(l, "|"); len(cells) == 5 {
			rows[strings.TrimSpace(cells[1])] = strings.TrimSpace(cells[3])
		}
	}
	if got := rows["release order"]; !strings.HasPrefix(got, "all at once, oldest first") {
		t.Errorf("docs/keda.md release order of the activator: %q, want all at once, oldest first", got)
	}
	if got := rows["too long / too many"]; !strings.Contains(got, "`--max-held-bytes`") || !strings.Contains(got, "413") {
		t.Errorf("docs/keda.md too long / too many of the activator: %q, want --max-held-bytes and its 413 too", got)
	}
}

// TestDrainHoldsNoNewRequest: a POST is held while the upstream is down;
// Drain (SIGTERM) comes: a second POST is answered 503 with Retry-After: 2
// at once (--retry-after 2s) and counted rejected, the held count stays 1
// (it only falls while draining); the upstream comes up: the first is
// answered by it, and a third, sent now, is proxied at once.
func TestDrainHoldsNoNewRequest(t *testing.T) {
	addr, release := downAddr(t)
	a, url0 := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: addr}, ProbeInterval: 50 * time.Millisecond, RetryAfter: 2 * time.Second})
	post := func(body string) (int, string, string) {
		resp, err := http.Post(url0+"/v1/completions", "text/plain", strings.NewReader(body))
		if err != nil {
			return 0, "", err.Error()
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
	}
	first := make(chan string, 1)
	go func() {
		code, _, b := post("one")
		first <- fmt.Sprint(code, " ", b)
	}()
	for deadline := time.Now().Add(5 * time.Second); a.Held() < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("first request not held after 5 s")
		}
	}
	a.Drain()
	began := time.Now()
	code, retry, _ := post("two")
	if code != http.StatusServiceUnavailable || retry != "2" || time.Since(began) > 2*time.Second {
		t.Errorf("a request while draining: %d, Retry-After %q after %v; want 503, 2, at once", code, retry, time.Since(began))
	}
	if a.Held() != 1 || testutil.ToFloat64(a.rejected) != 1 {
		t.Errorf("held %d, rejected %v; want 1 (the first still held), 1", a.Held(), testutil.ToFloat64(a.rejected))
	}
	comeUp(t, addr, release, fifoUpstream())
	select {
	case got := <-first:
		if got != "200 1 one" {
			t.Errorf("the held request: %q, want 200 from the upstream (\"1 one\")", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held request was not answered once the upstream came up")
	}
	if code, _, b := post("three"); code != 200 || b != "2 three" {
		t.Errorf("a request while draining, upstream up: %d %q, want 200 \"2 three\"", code, b)
	}
}
