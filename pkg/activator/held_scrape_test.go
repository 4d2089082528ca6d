package activator

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/scrape"
)

// TestHeldScrapeOnProxyPort: with --metrics-listen the proxy port proxies
// /metrics too, so serve's zero.held_scrape pointed there (the http port,
// as without the flag) was itself held while the upstream was down: held
// 1 with no client, and serve's read timed out every cycle saying to raise
// pollingInterval. serve's held read carries HeldScrapeHeader; the proxy
// port answers it 421 at once, naming --metrics-listen, and holds nothing.
func TestHeldScrapeOnProxyPort(t *testing.T) {
	if HeldScrapeHeader != scrape.HeldScrapeHeader {
		t.Fatalf("activator.HeldScrapeHeader %q, scrape.HeldScrapeHeader %q: serve's read would not be known", HeldScrapeHeader, scrape.HeldScrapeHeader)
	}
	a, err := New(Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, HoldTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	srv := httptest.NewServer(a.ProxyMux())
	defer srv.Close()

	start := time.Now()
	_, err = scrape.ReadHeld(ctx, &http.Client{Timeout: 5 * time.Second}, srv.URL+"/metrics")
	if err == nil || !strings.Contains(err.Error(), "421") || !strings.Contains(err.Error(), "--metrics-listen") {
		t.Errorf("ReadHeld on the proxy port: %v, want a 421 naming --metrics-listen", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("answered after %v, want at once", d)
	}
	if n := a.Held(); n != 0 {
		t.Errorf("held %d after serve's read, want 0", n)
	}
	// The metrics port reads as before.
	msrv := httptest.NewServer(a.MetricsMux())
	defer msrv.Close()
	if h, err := scrape.ReadHeld(ctx, nil, msrv.URL+"/metrics"); err != nil || h.Held != 0 {
		t.Errorf("ReadHeld on the metrics port: %+v, %v; want held 0", h, err)
	}
	// Another client's /metrics on the proxy port is the upstream's: held
	// while it is down, as before.
	rctx, rcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer rcancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, srv.URL+"/metrics", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Errorf("a plain /metrics on the proxy port answered %s %q while the upstream is down, want it held", resp.Status, b)
	}
}

// TestPrometheusScrapeNotHeld: a Prometheus scrape proxied through the
// activator (a ServiceMonitor left on the proxy port after --metrics-listen
// moved the activator's own /metrics, or one scraping the model through
// it) is never held while the upstream is down: held, each scrape counted
// as demand with no client, every scrape interval, and the model never
// reached zero. It is answered 503 at once, naming where to scrape.
func TestPrometheusScrapeNotHeld(t *testing.T) {
	a, err := New(Config{Upstream: &url.URL{Scheme: "http", Host: down(t)}, HoldTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	srv := httptest.NewServer(a.ProxyMux())
	defer srv.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/metrics", nil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "10") // as Prometheus sends it
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "--metrics-listen") {
		t.Errorf("a scrape on the proxy port while the upstream is down: %d %q, want 503 naming --metrics-listen", resp.StatusCode, b)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("answered after %v, want at once", d)
	}
	if n := a.Held(); n != 0 {
		t.Errorf("held %d after a scrape, want 0", n)
	}
}
