package activator

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkHold1000 holds 1,000 concurrent requests while the upstream is
// down, then releases them all once it is ready. It reports the memory in
// use per held request (heap + goroutine stacks, the test's own clients and
// connections included, so an upper bound) and the time from the upstream
// turning ready to the last answer.
func BenchmarkHold1000(b *testing.B) {
	const n = 1000
	var ready atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" && !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	a, err := New(Config{Upstream: u, MaxHeld: n, ProbeInterval: 20 * time.Millisecond, HoldTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	srv := httptest.NewServer(a)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}}
	var perHeld, release float64
	for b.Loop() {
		ready.Store(false)
		time.Sleep(50 * time.Millisecond)
		runtime.GC()
		var before, during runtime.MemStats
		runtime.ReadMemStats(&before)
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Get(srv.URL + "/v1/completions")
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		for a.Held() < n {
			time.Sleep(5 * time.Millisecond)
		}
		runtime.GC()
		runtime.ReadMemStats(&during)
		perHeld += (float64(during.HeapInuse+during.StackInuse) - float64(before.HeapInuse+before.StackInuse)) / n
		start := time.Now()
		ready.Store(true)
		wg.Wait()
		release += time.Since(start).Seconds()
	}
	b.ReportMetric(perHeld/float64(b.N), "bytes/held")
	b.ReportMetric(release/float64(b.N)*1000, "ms-release-1000")
}
