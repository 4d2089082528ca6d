package activator

import (
	"bytes"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/infscale/infscale/internal/buftest"
)

// TestCutAnswersNotLoggedPlainOnce: an upstream promises 1000 bytes,
// writes 100 and closes, five times. Each client gets the cut answer (100
// bytes and an error), the failures are counted (5) and said in one
// rate-limited "upstream failed" line (the first; the next four fall in
// its 10 s). ReverseProxy's own line for each ("httputil: ReverseProxy read
// error during body copy") goes to the activator's logger at debug level
// (5 lines there), none to the standard logger: it wrote one plain line per
// cut answer on stderr, 50 for 50 and never rate-limited, in another format
// than the activator's key=value lines.
func TestCutAnswersNotLoggedPlainOnce(t *testing.T) {
	up := &countingUpstream{health: func() int { return 200 }, answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(bytes.Repeat([]byte("x"), 100))
		w.(http.Flusher).Flush()
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}}
	upstream := httptest.NewServer(up)
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	var std bytes.Buffer
	log.SetOutput(&std)
	defer log.SetOutput(io.Discard) // the default is stderr; no other test reads it
	var logb buftest.Buffer
	a, err := New(Config{Upstream: u, ProbeInterval: 20 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&logb, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	go a.Run(t.Context())
	srv := httptest.NewServer(a)
	defer srv.Close()
	waitFor(t, "ready", 5*time.Second, a.Ready)
	for range 5 {
		resp, err := http.Get(srv.URL + "/v1/completions")
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n != 100 || err == nil {
			t.Fatalf("cut answer: %d, %d bytes, %v; want 200, 100 bytes and an error", resp.StatusCode, n, err)
		}
	}
	waitFor(t, "5 failures counted", 5*time.Second, func() bool { return testutil.ToFloat64(a.upFailed) == 5 })
	if strings.Contains(std.String(), "ReverseProxy") {
		t.Errorf("the standard logger has ReverseProxy's lines:\n%s", std.String())
	}
	got := logb.String()
	if n := strings.Count(got, `level=DEBUG msg="httputil: ReverseProxy read error during body copy`); n != 5 {
		t.Errorf("%d debug lines of ReverseProxy, want 5:\n%s", n, got)
	}
	if n := strings.Count(got, `msg="upstream failed"`); n != 1 {
		t.Errorf("%d upstream failed lines, want 1:\n%s", n, got)
	}
}
