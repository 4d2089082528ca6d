package activator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/infscale/infscale/internal/buftest"
)

// Upstream failures are logged, not only counted: the first at once, the
// next ones at most once a FailureLogInterval (100 ms here) with how many
// failed since the line before, so a failing upstream cannot flood the
// log. Three 502s in a row give one line (failures=1); the two left out
// are said by the probe loop once the interval has passed (a line with
// failures=2 and no request), though no request failed since; an answer
// cut off mid-body after that is logged with the upstream's status (200)
// and says so (failures=1). Before: no line at all, only the counter.
func TestUpstreamFailuresLogged(t *testing.T) {
	up := &countingUpstream{health: func() int { return 200 }, answer: func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/reset" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: 1\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}}
	upstream := httptest.NewServer(up)
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	var log buftest.Buffer
	a, err := New(Config{Upstream: u, ProbeInterval: 20 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const interval = 100 * time.Millisecond
	a.failLog.SetLimit(rate.Every(interval)) // before any request is served
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	srv := httptest.NewServer(a)
	defer srv.Close()
	waitFor(t, "ready", 5*time.Second, a.Ready)

	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	lines := func() []string {
		var out []string
		for l := range strings.Lines(log.String()) {
			if strings.Contains(l, "upstream failed") {
				out = append(out, l)
			}
		}
		return out
	}
	start := time.Now()
	for i := range 3 {
		if code := get(fmt.Sprintf("/close%d", i)); code != http.StatusBadGateway {
			t.Fatalf("closed before answering: %d, want 502", code)
		}
	}
	// The lines are read before the time is taken: read after it, a probe
	// past the interval (the goroutine preempted between the two) could
	// add the line of the two left out, and one line was not all there was.
	got := lines()
	if el := time.Since(start); el >= interval {
		t.Skipf("three requests took %v, not within the %v interval (a loaded machine)", el, interval)
	}
	if len(got) != 1 {
		t.Fatalf("after three 502s within %v: %d lines, want 1:\n%s", interval, len(got), log.String())
	}
	for _, want := range []string{"level=WARN", "method=GET", "path=/close0", "status=502", "failures=1", "upstream=" + upstream.URL} {
		if !strings.Contains(got[0], want) {
			t.Errorf("first line %q lacks %q", got[0], want)
		}
	}
	waitFor(t, "the probe loop's line of the two left out", 5*time.Second, func() bool { return len(lines()) == 2 })
	got = lines()
	if !strings.Contains(got[1], "failures=2") || strings.Contains(got[1], "path=") {
		t.Fatalf("the line of the two left out: %q, want failures=2 and no request", got[1])
	}
	time.Sleep(interval)
	get("/reset")
	got = lines()
	if len(got) != 3 || !strings.Contains(got[2], "path=/reset") || !strings.Contains(got[2], "status=200") || !strings.Contains(got[2], "cut off mid-body") || !strings.Contains(got[2], "failures=1") {
		t.Fatalf("an answer cut mid-body: want a line for /reset, status=200, cut off mid-body, failures=1; log:\n%s", log.String())
	}
}
