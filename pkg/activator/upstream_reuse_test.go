package activator

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestUpstreamConnectionsReused: with the upstream ready, 20 clients each
// send 10 requests one after another (a server taking 5 ms for each), so
// at most 20 are in flight at once and 20 upstream connections carry
// them all: each request reuses the connection its client's last one
// freed. Allowing for the transport's dial races, at most twice that.
// With Go's default of 2 idle connections per host (the activator's
// before) all but 2 of the 20 freed connections were closed after every
// round, so most requests dialled anew: 109 to 154 connections for the
// 200 in 3 runs, more than 3 per client (7473 for 9392 requests measured
// with 50 clients through the binary); now 22.
func TestUpstreamConnectionsReused(t *testing.T) {
	const clients, each = 20, 10
	for _, c := range []struct {
		name     string
		cfg      func(*Config)
		min, max int64
	}{
		{"activator's transport", func(*Config) {}, 1, 2 * clients},
		{"Go's default 2 idle per host", func(c *Config) {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.IdleConnTimeout = time.Minute
			c.Transport = tr
		}, 3 * clients, clients * each},
	} {
		t.Run(c.name, func(t *testing.T) {
			var conns atomic.Int64
			up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/health" {
					time.Sleep(5 * time.Millisecond)
				}
				io.WriteString(w, "ok")
			}))
			up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			up.Start()
			t.Cleanup(up.Close)
			u, _ := url.Parse(up.URL)
			cfg := Config{Upstream: u, ProbeInterval: 50 * time.Millisecond, HoldTimeout: 5 * time.Second}
			c.cfg(&cfg)
			a, base := start(t, cfg)
			waitFor(t, "ready", 5*time.Second, a.Ready)
			before := conns.Load() // the probe's
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
			t.Cleanup(client.CloseIdleConnections)
			var wg sync.WaitGroup
			var failed atomic.Int64
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range each {
						resp, err := client.Get(base + "/v1/models")
						if err != nil {
							failed.Add(1)
							continue
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							failed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if n := failed.Load(); n > 0 {
				t.Fatalf("%d of %d requests failed", n, clients*each)
			}
			// The probe's own connections, one every 50 ms at most, are
			// counted before and may be counted during: at most the
			// run's length over the interval, a few.
			got := conns.Load() - before
			if got < c.min || got > c.max+5 {
				t.Errorf("%d upstream connections for %d requests from %d clients, want %d to %d", got, clients*each, clients, c.min, c.max)
			}
			t.Logf("%d upstream connections for %d requests", got, clients*each)
		})
	}
}
