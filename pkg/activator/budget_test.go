package activator

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestByteBudget: --max-held-bytes 3 MiB while the upstream is down.
// Three 1 MiB bodies are held (3 MiB in memory, the gauge says so); a
// fourth gets 429 with Retry-After at once, and so does a chunked body
// (no room for its first 64 KiB); a 4 MiB body gets 413 (it never fits).
// One held client leaves: its MiB is given back, and a chunked body of
// 100 KiB is then held, counted at its length (3 MiB - 1 MiB + 100 KiB).
// Before: bodies up to 1 MiB were kept whatever their sum (300 held 1 MB
// bodies peaked at 440 MB).
func TestByteBudget(t *testing.T) {
	const mib = 1 << 20
	a, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, MaxHeldBytes: 3 * mib, HoldTimeout: time.Minute, RetryAfter: 2 * time.Second})
	ctxs := make([]context.CancelFunc, 3)
	for i := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctxs[i] = cancel
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", bytes.NewReader(make([]byte, mib)))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	waitFor(t, "three 1 MiB bodies held", 10*time.Second, func() bool { return a.Held() == 3 && a.HeldBytes() == 3*mib })
	if g := testutil.ToFloat64(a.heldBytes); g != 3*mib {
		t.Errorf("held bytes gauge %v, want %d", g, 3*mib)
	}
	send := func(body io.Reader) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", body)
		req.Header.Set("Expect", "100-continue")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	if code, ra := send(bytes.NewReader(make([]byte, mib))); code != 429 || ra != "2" {
		t.Errorf("a fourth 1 MiB body: %d Retry-After %q, want 429 and 2", code, ra)
	}
	if code, ra := send(struct{ io.Reader }{strings.NewReader("chunked")}); code != 429 || ra != "2" {
		t.Errorf("a chunked body at a full budget: %d Retry-After %q, want 429 and 2", code, ra)
	}
	if code, _ := send(bytes.NewReader(make([]byte, 4*mib))); code != 413 {
		t.Errorf("a 4 MiB body with a 3 MiB budget: %d, want 413", code)
	}
	if a.Held() != 3 || a.HeldBytes() != 3*mib || testutil.ToFloat64(a.rejected) != 3 {
		t.Errorf("after the refusals: held %d, %d bytes, rejected %v; want 3, %d, 3", a.Held(), a.HeldBytes(), testutil.ToFloat64(a.rejected), 3*mib)
	}
	ctxs[0]()
	waitFor(t, "the departed client's MiB given back", 5*time.Second, func() bool { return a.Held() == 2 && a.HeldBytes() == 2*mib })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", struct{ io.Reader }{bytes.NewReader(make([]byte, 100<<10))})
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "a 100 KiB chunked body held", 5*time.Second, func() bool { return a.Held() == 3 && a.HeldBytes() == 2*mib+100<<10 })
}

// TestBodyTimeout: a held request whose body stalls is answered 408 after
// --body-timeout and frees its slot (the hold timeout is a minute).
func TestBodyTimeout(t *testing.T) {
	a, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, BodyTimeout: 300 * time.Millisecond, HoldTimeout: time.Minute})
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 408 || a.Held() != 0 || a.HeldBytes() != 0 || testutil.ToFloat64(a.bodyTimeouts) != 1 {
		t.Errorf("stalled body: %d, held %d (%d bytes), body timeouts %v; want 408, 0, 0, 1", resp.StatusCode, a.Held(), a.HeldBytes(), testutil.ToFloat64(a.bodyTimeouts))
	}
}

// stallTransport takes a request and never reads its body or answers,
// until the request's context ends: an upstream that does not take it.
type stallTransport struct{}

func (stallTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestWriteDeadline: a request that the upstream does not take is
// answered 504 after --body-timeout.
func TestWriteDeadline(t *testing.T) {
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer probe.Close()
	u, _ := url.Parse(probe.URL)
	a, base := start(t, Config{Upstream: u, Transport: stallTransport{}, BodyTimeout: 300 * time.Millisecond, ProbeInterval: 20 * time.Millisecond})
	waitFor(t, "ready", 5*time.Second, a.Ready)
	code, body := post(t, base+"/v1/completions", "w", "prompt")
	if code != 504 || !strings.Contains(body, "did not take the request within 300ms") {
		t.Errorf("%d %q; want 504", code, body)
	}
}

// TestLengthBodyLargerThanBudget: a Content-Length of 1 MiB + 1 byte with
// a 1 MiB budget gets 413 without Retry-After, and the answer says what to
// do (before, it named the budget alone; the chunked case's answer already
// said it).
func TestLengthBodyLargerThanBudget(t *testing.T) {
	const mib = 1 << 20
	_, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, MaxHeldBytes: mib, HoldTimeout: time.Minute})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", bytes.NewReader(make([]byte, mib+1)))
	req.Header.Set("Expect", "100-continue") // the body is never sent
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "activator: a body of 1048577 bytes is larger than --max-held-bytes (1048576 bytes): it is never held; send it when the upstream is up, or raise --max-held-bytes\n"
	if resp.StatusCode != 413 || resp.Header.Get("Retry-After") != "" || string(body) != want {
		t.Errorf("%d Retry-After %q %q; want 413, none, %q", resp.StatusCode, resp.Header.Get("Retry-After"), body, want)
	}
}

// TestChunkedBodyLargerThanBudget: a chunked body (no Content-Length)
// larger on its own than --max-held-bytes gets 413, as one with a
// Content-Length does: it never fits, so 429's "retry" would loop. With a
// 1 MiB budget, 1 MiB + 1 byte (1,048,577) is refused and nothing stays
// held; exactly 1 MiB (1,048,576) is held whole. Before: 429 with
// Retry-After for the larger one.
func TestChunkedBodyLargerThanBudget(t *testing.T) {
	const mib = 1 << 20
	a, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, MaxHeldBytes: mib, HoldTimeout: time.Minute, RetryAfter: 2 * time.Second})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", struct{ io.Reader }{bytes.NewReader(make([]byte, mib+1))})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || resp.Header.Get("Retry-After") != "" || !strings.Contains(string(body), "--max-held-bytes (1048576 bytes)") {
		t.Errorf("a chunked body of 1 MiB + 1 byte with a 1 MiB budget: %d Retry-After %q %q; want 413, none, naming --max-held-bytes (1048576 bytes)", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if a.Held() != 0 || a.HeldBytes() != 0 || testutil.ToFloat64(a.rejected) != 1 {
		t.Errorf("after the 413: held %d, %d bytes, rejected %v; want 0, 0, 1", a.Held(), a.HeldBytes(), testutil.ToFloat64(a.rejected))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", struct{ io.Reader }{bytes.NewReader(make([]byte, mib))})
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "a chunked body of exactly the budget held", 10*time.Second, func() bool { return a.Held() == 1 && a.HeldBytes() == mib })
}

// TestProxiedBodyStall: with the upstream ready, a client that sends 10
// bytes of a 100-byte body and stalls is the client's fault: 408 after
// --body-timeout (300 ms here), counted as a body timeout, as a held
// request's is. Before: 504 "upstream did not take the request", or 502
// with the read's i/o timeout, whichever deadline fired first, which sent
// the operator to a model server that was waiting for the body. An
// upstream that does not take a whole body is still 504
// (TestWriteDeadline).
func TestProxiedBodyStall(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
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
	fmt.Fprint(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
	began := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(began)
	if resp.StatusCode != 408 || !strings.Contains(string(body), "did not arrive from the client within 300ms") || testutil.ToFloat64(a.bodyTimeouts) != 1 {
		t.Errorf("stalled body, upstream ready: %d %q, body timeouts %v; want 408 naming the client, 1", resp.StatusCode, body, testutil.ToFloat64(a.bodyTimeouts))
	}
	if took < 250*time.Millisecond || took > 2*time.Second {
		t.Errorf("answered after %v, want about the 300 ms body timeout", took)
	}
}

// TestRefusalsSayClose: the activator drops the connection of a refused
// request with a body (its body is not read to its end), so the answer
// says Connection: close (RFC 9112 9.6). It did not: a keep-alive client
// sent its next request on the dying connection, and a POST is not
// retried (TestChunkedBodyLargerThanBudget's second request was lost in 3
// runs of 10). Each refusal below, one request on its own connection, is
// answered with the code given and Connection: close; a refused GET
// (nothing unread) keeps the connection.
func TestRefusalsSayClose(t *testing.T) {
	const mib = 1 << 20
	a, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, MaxHeld: 2, MaxHeldBytes: mib, HoldTimeout: time.Minute, BodyTimeout: 300 * time.Millisecond})
	addr := strings.TrimPrefix(base, "http://")
	send := func(req string) *http.Response {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		go func() { _, _ = io.WriteString(c, req) }()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	chunked := func(n int) string {
		return fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", n, strings.Repeat("a", n))
	}
	for _, c := range []struct {
		name, req string
		code      int
	}{
		{"a Content-Length over the budget", fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 2*mib), 413},
		{"a chunked body over the budget", chunked(mib + 1), 413},
		{"a body that stalls", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789", 408},
	} {
		if resp := send(c.req); resp.StatusCode != c.code || !resp.Close {
			t.Errorf("%s: %d, Connection: close %v; want %d and close", c.name, resp.StatusCode, resp.Close, c.code)
		}
	}
	// Two held (max 2), then a POST and a GET refused 429.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	waitFor(t, "two held", 5*time.Second, func() bool { return a.Held() == 2 })
	if resp := send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789"); resp.StatusCode != 429 || !resp.Close {
		t.Errorf("a POST with --max-held full: %d, Connection: close %v; want 429 and close", resp.StatusCode, resp.Close)
	}
	if resp := send("GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 429 || resp.Close {
		t.Errorf("a GET with --max-held full: %d, Connection: close %v; want 429, kept alive", resp.StatusCode, resp.Close)
	}
}

// TestUpstreamFailsMidBody: an upstream that reads 10 bytes of a 2 MiB
// body and drops the connection fails the request (502), before the
// client's body is read to its end: the answer says Connection: close, as
// the refusals' do (TestRefusalsSayClose).
func TestUpstreamFailsMidBody(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		_, _ = io.ReadFull(r.Body, make([]byte, 10))
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	a, base := start(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond})
	waitFor(t, "ready", 5*time.Second, a.Ready)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", bytes.NewReader(make([]byte, 2<<20)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 || !resp.Close {
		t.Errorf("upstream dropped mid-body: %d, Connection: close %v; want 502 and close", resp.StatusCode, resp.Close)
	}
}

// TestRefusedBodyNotReset: a client sends half of a 100 KiB body, the
// activator refuses the request on its headers (--max-held full: 429;
// 413, 503 and 408 close the same way), and the client, which had not
// read the answer yet, sends the other half. The activator reads and
// discards the rest before closing, so the client's write succeeds and it
// reads the refusal. Before: the connection was closed with the client's
// bytes unread, the kernel answered them with a reset, and the second
// write failed with "connection reset by peer": Go's and Python's HTTP
// clients then report that write error, not the 429 and its Retry-After
// (seen in 4 of 117 refusals under load).
func TestRefusedBodyNotReset(t *testing.T) {
	const kib = 1 << 10
	a, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, MaxHeld: 1, MaxHeldBytes: 64 * kib, HoldTimeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "held", 5*time.Second, func() bool { return a.Held() == 1 })
	half := strings.Repeat("a", 50*kib)
	for _, tc := range []struct {
		name, head, first, rest string
		code                    int
	}{
		{"429, Content-Length", "Content-Length: 102400\r\n", half, half, 429},
		{"429, chunked", "Transfer-Encoding: chunked\r\n", fmt.Sprintf("c800\r\n%s\r\n", half), fmt.Sprintf("c800\r\n%s\r\n0\r\n\r\n", half), 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\n%s\r\n%s", tc.head, tc.first)
			time.Sleep(200 * time.Millisecond) // the refusal is written meanwhile
			if _, err := io.WriteString(c, tc.rest); err != nil {
				t.Errorf("the second half of the body: %v, want it taken", err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.code || !resp.Close || (tc.code == 429 && resp.Header.Get("Retry-After") != "5") {
				t.Errorf("%d, Connection: close %v, Retry-After %q; want %d and close", resp.StatusCode, resp.Close, resp.Header.Get("Retry-After"), tc.code)
			}
		})
	}
}

// TestRefusedExpectBodyNotReset: a chunked POST with Expect:
// 100-continue is held, so the activator asks for its body (100
// Continue) and reads it; the body passes --max-held-bytes (413) while
// the client is still sending it, as the client asked to. Its
// connection must linger as for any unfinished body: before, an Expect
// client was taken to have sent nothing, the connection was closed with
// its bytes unread, and the client read a reset, not the 413 (3 of 20
// runs of Go's client with a 3 MB body). net/http's own wait (it reads
// 256 KiB, then half-closes and waits) is not for a body behind its
// 100-continue reader either: the rest is read, within the linger (3 of
// 40 runs still reset).
func TestRefusedExpectBodyNotReset(t *testing.T) {
	const kib = 1 << 10
	_, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, MaxHeldBytes: 64 * kib, HoldTimeout: time.Minute})
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n")
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("read %q, %v; want 100 Continue", line, err)
	}
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	chunk := fmt.Sprintf("c800\r\n%s\r\n", strings.Repeat("a", 50*kib))
	io.WriteString(c, chunk+chunk)     // 100 KiB: past the budget
	time.Sleep(200 * time.Millisecond) // the refusal is written meanwhile
	// Far more than net/http discards of an unread body (256 KiB) or
	// the sockets buffer (16 MB): the write ends only once the activator
	// read it.
	if _, err := io.WriteString(c, strings.Repeat(chunk, 320)+"0\r\n\r\n"); err != nil {
		t.Errorf("the rest of the body: %v, want it taken", err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v, want 413", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Errorf("%d, Connection: close %v; want 413 and close", resp.StatusCode, resp.Close)
	}
}

// TestBudgetRefusalRace (run it with -race): 429s for a full byte budget
// while other requests' bodies are reserved and given back. The 429's
// message read the held bytes after the lock was released: a data race
// with every reservation, and a count that was not the one refused on.
func TestBudgetRefusalRace(t *testing.T) {
	a, err := New(Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, MaxHeldBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	a.reserve(1<<20 - 10)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // others' bodies, reserved and given back
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if a.reserve(1) {
				a.unreserve(1)
			}
		}
	}()
	for range 200 {
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(strings.Repeat("a", 100))))
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("%d, want 429", rec.Code)
		}
	}
	close(stop)
	<-done
}
