package activator

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/infscale/infscale/internal/buftest"
)

// TestRefusalsLogged: the upstream never gets ready; --max-held 1 and a
// 300 ms --hold-timeout. One request is held; three more arrive meanwhile
// and get 429. The held one gets 503 when its hold ends. The log says
// each status once at once (the first 429, refused=1; the 503, refused=1),
// and the two 429s left out in one line from the probe loop once the
// interval (100 ms here, FailureLogInterval's 10 s in use) has passed
// (refused=2): 4 lines in all. Before, nothing was logged: clients were
// turned away while the log's last word was "requests are held".
func TestRefusalsLogged(t *testing.T) {
	up := &countingUpstream{health: func() int { return http.StatusServiceUnavailable }, answer: func(http.ResponseWriter, *http.Request) {}}
	upstream := httptest.NewServer(up)
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	var log buftest.Buffer
	a, err := New(Config{Upstream: u, ProbeInterval: 20 * time.Millisecond, HoldTimeout: 300 * time.Millisecond, MaxHeld: 1,
		Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const interval = 100 * time.Millisecond
	for _, l := range a.refusals {
		l.lim.SetLimit(rate.Every(interval))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	srv := httptest.NewServer(a)
	defer srv.Close()
	get := func() int {
		resp, err := http.Get(srv.URL + "/v1/models")
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var wg sync.WaitGroup
	var held int
	wg.Go(func() { held = get() })
	waitFor(t, "one held", 5*time.Second, func() bool { return a.Held() == 1 })
	start := time.Now()
	for range 3 {
		if code := get(); code != http.StatusTooManyRequests {
			t.Fatalf("past --max-held: %d, want 429", code)
		}
	}
	lines := func(status string) []string {
		var out []string
		for l := range strings.Lines(log.String()) {
			if strings.Contains(l, `msg="request refused"`) && strings.Contains(l, "status="+status) {
				out = append(out, l)
			}
		}
		return out
	}
	got := lines("429")
	if time.Since(start) >= interval {
		t.Skipf("three requests took %v, not within the %v interval (a loaded machine)", time.Since(start), interval)
	}
	if len(got) != 1 || !strings.Contains(got[0], "refused=1") || !strings.Contains(got[0], "1 requests already held") || !strings.Contains(got[0], "retry_after=5s") {
		t.Fatalf("429 lines: %q, want one, refused=1, naming the held limit and Retry-After", got)
	}
	wg.Wait()
	if held != http.StatusServiceUnavailable {
		t.Fatalf("the held request: %d, want 503 after the hold timeout", held)
	}
	if got := lines("503"); len(got) != 1 || !strings.Contains(got[0], "refused=1") || !strings.Contains(got[0], "no upstream endpoint ready within 300ms") {
		t.Errorf("503 lines: %q, want one naming the hold timeout", got)
	}
	waitFor(t, "the probe loop's line of the two 429s left out", 5*time.Second, func() bool { return len(lines("429")) == 2 })
	if got := lines("429"); !strings.Contains(got[1], "refused=2") {
		t.Errorf("the line of the two left out: %q, want refused=2", got[1])
	}
}
