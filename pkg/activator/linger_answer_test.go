package activator

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestAnswerBeforeLinger: a client that sends 100 bytes of a
// 1000-byte body and stops, with --body-timeout 2s, gets its 408 at the
// body timeout, 2 s after its request; the linger over its unfinished
// body (min(1 s, 2 s) = 1 s, as it reads nothing) comes after the answer
// and delays only the close, which is clean (EOF, not a reset). Before,
// the 408 waited in net/http's buffer through the linger: 2 s + 1 s =
// 3 s. Held (upstream down) and streamed (upstream up); with Expect:
// 100-continue (the 100 bytes sent after the 100 Continue) and without.
func TestAnswerBeforeLinger(t *testing.T) {
	const bodyTimeout = 2 * time.Second
	for _, c := range []struct {
		name       string
		up, expect bool
	}{
		{"held", false, false},
		{"held Expect", false, true},
		{"streamed", true, false},
		{"streamed Expect", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			up := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
			defer up.Close()
			u, _ := url.Parse(up.URL)
			var ready atomic.Bool
			ready.Store(c.up)
			a, base := start(t, Config{Upstream: u, Client: switchProbe(&ready), ProbeInterval: 20 * time.Millisecond, BodyTimeout: bodyTimeout, HoldTimeout: 10 * time.Second})
			if c.up {
				waitFor(t, "ready", 5*time.Second, a.Ready)
			}
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(conn)
			expect := ""
			if c.expect {
				expect = "Expect: 100-continue\r\n"
			}
			sent := time.Now()
			fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n%s\r\n", expect)
			if !c.expect {
				_, _ = io.WriteString(conn, strings.Repeat("a", 100))
			}
			resp, err := http.ReadResponse(br, nil)
			for err == nil && resp.StatusCode == http.StatusContinue {
				_, _ = io.WriteString(conn, strings.Repeat("a", 100))
				resp, err = http.ReadResponse(br, nil)
			}
			if err != nil {
				t.Fatalf("the answer: %v", err)
			}
			body, err := io.ReadAll(resp.Body) // to its Content-Length
			took := time.Since(sent)
			if err != nil || resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
				t.Fatalf("answer %d %q (%v), Connection: close %v; want 408 and close", resp.StatusCode, body, err, resp.Close)
			}
			// 2 s, with room for a loaded machine; 3 s before.
			if took < bodyTimeout || took > bodyTimeout+600*time.Millisecond {
				t.Errorf("the whole 408 after %v, want it at the body timeout, %v (before: %v with the linger)", took.Round(time.Millisecond), bodyTimeout, bodyTimeout+time.Second)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after the 408: %v, want the connection's end (EOF), not a reset", err)
			}
		})
	}
}
