package activator

import (
	"bufio"
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

// TestMalformedChunkedBody: a chunked body whose chunk size is not hex is
// the client's error: 400 naming it, not counted as an upstream failure,
// whether the body streams to a ready upstream or is read while held.
// Before, streamed, it was a 502 "activator: upstream: invalid byte in
// chunk length" counted in upstream_failures_total (a client could page
// whoever alerts on it); held, the connection closed with no answer.
func TestMalformedChunkedBody(t *testing.T) {
	const req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"
	send := func(t *testing.T, base string) (*http.Response, string) {
		t.Helper()
		c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte(req))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer: %v; want 400", err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	t.Run("streamed", func(t *testing.T) {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
		defer up.Close()
		u, _ := url.Parse(up.URL)
		a, base := start(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond})
		waitFor(t, "ready", 5*time.Second, a.Ready)
		resp, body := send(t, base)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "invalid byte in chunk length") || strings.Contains(body, "upstream") {
			t.Errorf("answer %s %q; want 400 naming the malformed chunk, not the upstream", resp.Status, body)
		}
		if n := testutil.ToFloat64(a.upFailed); n != 0 {
			t.Errorf("upstream_failures_total %v; want 0", n)
		}
	})
	t.Run("held", func(t *testing.T) {
		u, _ := url.Parse("http://" + down(t))
		_, base := start(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond})
		resp, body := send(t, base)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "invalid byte in chunk length") {
			t.Errorf("answer %s %q; want 400 naming the malformed chunk", resp.Status, body)
		}
	})
}
