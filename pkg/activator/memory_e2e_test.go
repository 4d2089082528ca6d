package activator_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/activator"
)

// shipped reads deploy/activator/activator.yaml's memory limit, GOMEMLIMIT
// and --max-held-bytes (all in MiB there), so that the test runs what is
// shipped.
func shipped(t *testing.T) (limit, gomemlimit, maxHeld int64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "activator", "activator.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	get := func(re string) int64 {
		m := regexp.MustCompile(re).FindSubmatch(b)
		if m == nil {
			t.Fatalf("deploy/activator/activator.yaml: no match for %s", re)
		}
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		return n << 20
	}
	return get(`limits:\s+memory:\s+(\d+)Mi\b`), get(`GOMEMLIMIT\s+value:\s+"?(\d+)MiB`), get(`--max-held-bytes=(\d+)MiB`)
}

// bodyOf is request id's 1 MB body, made as it is read (the clients' own
// memory stays out of the measure): byte i is (id + i) mod 251.
type bodyOf struct{ id, off int }

const bodySize = 1_000_000

func (b *bodyOf) Read(p []byte) (int, error) {
	if b.off >= bodySize {
		return 0, io.EOF
	}
	n := min(len(p), bodySize-b.off)
	for i := range n {
		p[i] = byte((b.id + b.off + i) % 251)
	}
	b.off += n
	return n, nil
}

// TestEndToEndHeldMemory: 500 clients each send a 1 MB body (base64
// images are realistic) while the upstream is at zero, with the shipped
// --max-held-bytes, under the shipped GOMEMLIMIT. The activator holds what
// its budget allows and answers the rest 429 with Retry-After (1 s here);
// those clients retry as told (with Expect: 100-continue, so a refused
// body is never sent). Then the upstream comes up. Every request reaches
// the upstream exactly once, whole (counted and checked there), every
// client gets 200, and the process's peak heap in use (sampled every 20
// ms; clients and upstream included, so an upper bound for the activator)
// stays under deploy/activator's memory limit.
func TestEndToEndHeldMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("500 MB through loopback")
	}
	const n = 500
	limit, gomemlimit, maxHeld := shipped(t)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(gomemlimit))

	var ready atomic.Bool
	var mu sync.Mutex
	seen := map[string]int{}
	bad := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			if !ready.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			return
		}
		id, _ := strconv.Atoi(r.Header.Get("X-Req"))
		want := &bodyOf{id: id}
		got, wantb := make([]byte, 32<<10), make([]byte, 32<<10)
		total, same := 0, true
		for {
			k, err := r.Body.Read(got)
			if k > 0 {
				want.Read(wantb[:k])
				same = same && string(got[:k]) == string(wantb[:k])
				total += k
			}
			if err != nil {
				break
			}
		}
		mu.Lock()
		seen[r.Header.Get("X-Req")]++
		if total != bodySize || !same {
			bad++
		}
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	a, err := activator.New(activator.Config{Upstream: u, MaxHeldBytes: maxHeld, MaxHeld: 1000, HoldTimeout: 5 * time.Minute, RetryAfter: time.Second, ProbeInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	srv := httptest.NewServer(a)
	defer srv.Close()

	var peak atomic.Uint64
	var peakHeld, peakBytes atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if v := ms.HeapInuse + ms.StackInuse; v > peak.Load() {
				peak.Store(v)
			}
			if h := int64(a.Held()); h > peakHeld.Load() {
				peakHeld.Store(h)
			}
			if b := a.HeldBytes(); b > peakBytes.Load() {
				peakBytes.Store(b)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, ExpectContinueTimeout: time.Minute}}
	var retries atomic.Int64
	codes := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", &bodyOf{id: i})
				req.ContentLength = bodySize
				req.Header.Set("X-Req", strconv.Itoa(i))
				req.Header.Set("Expect", "100-continue")
				resp, err := client.Do(req)
				if err != nil {
					errs[i] = err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusTooManyRequests {
					retries.Add(1)
					s, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
					time.Sleep(time.Duration(s) * time.Second)
					continue
				}
				codes[i] = resp.StatusCode
				return
			}
		})
	}
	// The upstream comes up once the budget is full and some were told to
	// come back (or all are held, with a budget that fits them).
	deadline := time.Now().Add(2 * time.Minute)
	for !(a.HeldBytes()+bodySize > maxHeld && retries.Load() > 0) && a.Held() < n {
		if time.Now().After(deadline) {
			t.Fatalf("held %d (%d bytes), %d retries after 2 min", a.Held(), a.HeldBytes(), retries.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	ready.Store(true)
	wg.Wait()
	close(stop)
	<-sampled

	for i := range n {
		if errs[i] != nil || codes[i] != 200 {
			t.Errorf("request %d: %d %v", i, codes[i], errs[i])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		if c := seen[strconv.Itoa(i)]; c != 1 {
			t.Errorf("request %d reached the upstream %d times, want exactly once", i, c)
		}
	}
	if bad != 0 || len(seen) != n {
		t.Errorf("%d bodies arrived short or altered; %d distinct requests arrived, want %d", bad, len(seen), n)
	}
	t.Logf("%d x 1 MB: peak heap+stacks in use %.1f MiB (limit %d MiB, GOMEMLIMIT %d MiB), peak held %d requests / %.1f MiB of bodies (budget %d MiB), %d retries after 429",
		n, float64(peak.Load())/(1<<20), limit>>20, gomemlimit>>20, peakHeld.Load(), float64(peakBytes.Load())/(1<<20), maxHeld>>20, retries.Load())
	if p := int64(peak.Load()); p >= limit {
		t.Errorf("peak heap+stacks in use %d MiB, at or above the %d MiB limit", p>>20, limit>>20)
	}
}
