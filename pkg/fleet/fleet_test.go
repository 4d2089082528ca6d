package fleet

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replica"
)

func reference(t *testing.T) *replica.Replica {
	t.Helper()
	r, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEngineOneRequest serves one request (512 prompt, 256 output tokens) on
// docs/design.md's reference replica and checks its timing by hand:
//
//	prefill 512 / 24750 tokens/s                      = 20.69 ms (the TTFT)
//	decode: 255 steps at batch 1, each weights 16 GB / (3.35 TB/s x 0.7)
//	  = 6.823 ms plus context KV 131072 B/token / 2.345e12 B/s = 55.9 ns per
//	  token; contexts 513..767 sum to 163,200 tokens = 9.12 ms
//	  -> 255 x 6.823 + 9.12                           = 1749.0 ms
//	total                                             = 1769.7 ms
func TestEngineOneRequest(t *testing.T) {
	e := newEngine(reference(t))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.waiting = append(e.waiting, &request{arrived: start, prompt: 512, output: 256, remaining: 256})
	tick := 10 * time.Millisecond
	var done time.Duration
	for i := 1; i <= 300; i++ {
		now := start.Add(time.Duration(i) * tick)
		e.advance(tick, now)
		if i == 1 && (len(e.ttfts) != 1 || math.Abs(e.ttfts[0]-0.02069) > 0.0005) {
			t.Fatalf("TTFT %v, want one of 20.69 ms", e.ttfts)
		}
		if e.finished == 1 && done == 0 {
			done = time.Duration(i) * tick
		}
	}
	if done < 1760*time.Millisecond || done > 1780*time.Millisecond {
		t.Errorf("finished in the tick ending at %v, want the one covering 1769.7 ms", done)
	}
	if e.promptTokens != 512 || e.generationTokens != 256 {
		t.Errorf("tokens %v prompt %v generation, want 512 and 256", e.promptTokens, e.generationTokens)
	}
}

// TestEngineBatchLimit: 70 requests at once on a replica with max-num-seqs
// 64. vLLM V1's scheduler takes prompts up to max_num_batched_tokens (8192)
// a step: the first phase prefills 8192 / 512 = 16 of them, and once all
// are admitted 64 run and 6 queue (the batch limit).
func TestEngineBatchLimit(t *testing.T) {
	e := newEngine(reference(t))
	now := time.Now()
	for range 70 {
		e.waiting = append(e.waiting, &request{arrived: now, prompt: 512, output: 256, remaining: 256})
	}
	e.advance(10*time.Millisecond, now.Add(10*time.Millisecond))
	if len(e.running) != 16 || len(e.waiting) != 54 {
		t.Errorf("after the first phase: running %d waiting %d, want 16 and 54", len(e.running), len(e.waiting))
	}
	// KV usage: 16 sequences of 512 prompt tokens + 1 output token over
	// 396,728 tokens of KV.
	if got, want := e.kvUsage(), 16*513.0/float64(e.kvTokens); math.Abs(got-want) > 1e-9 || e.kvTokens != 396728 {
		t.Errorf("kv usage %v (capacity %d), want %v of 396728", got, e.kvTokens, want)
	}
	e.advance(2*time.Second, now.Add(2*time.Second))
	if len(e.running) != 64 || len(e.waiting) != 6 {
		t.Errorf("running %d waiting %d, want 64 and 6", len(e.running), len(e.waiting))
	}
}

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestFleetLifecycle: vLLM-named pages, cold start, draining, faults.
func TestFleetLifecycle(t *testing.T) {
	f, err := Start(context.Background(), Config{Replicas: 1, Max: 3, ColdStart: 300 * time.Millisecond, Tick: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	urls := f.URLs()
	code, body := fetch(t, urls[0])
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "vllm:time_to_first_token_seconds_bucket", "vllm:generation_tokens_total"} {
		if code != 200 || !strings.Contains(body, name) {
			t.Errorf("replica 0 page lacks %s (status %d)", name, code)
		}
	}
	if code, _ := fetch(t, urls[1]); code != http.StatusServiceUnavailable {
		t.Errorf("a slot without a replica answers %d, want 503", code)
	}
	f.SetDesired(2)
	if r, s := f.Ready(); r != 1 || s != 1 {
		t.Errorf("right after scaling to 2: ready %d starting %d, want 1 and 1", r, s)
	}
	time.Sleep(400 * time.Millisecond)
	if r, s := f.Ready(); r != 2 || s != 0 || len(f.ReadyURLs()) != 2 {
		t.Errorf("after the cold start: ready %d starting %d", r, s)
	}
	f.SetRate(50)
	time.Sleep(300 * time.Millisecond)
	if run, _, _ := f.Load(); run == 0 {
		t.Error("no request running at 50 req/s")
	}
	f.SetDesired(1)
	if got := len(f.ReadyURLs()); got != 1 {
		t.Errorf("after scaling to 1: %d replicas take requests, want 1", got)
	}
	f.SetFailing(true)
	if code, _ := fetch(t, urls[0]); code != 500 {
		t.Errorf("failing fleet answers %d, want 500", code)
	}
	f.SetFailing(false)
	if code, _ := fetch(t, urls[0]); code != 200 {
		t.Errorf("recovered fleet answers %d", code)
	}
}

// TestDesiredFromURL reads infscale_desired_replicas of one target.
func TestDesiredFromURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE infscale_desired_replicas gauge\ninfscale_desired_replicas{target=\"other\"} 9\ninfscale_desired_replicas{target=\"chat\"} 4\n")
	}))
	defer srv.Close()
	n, ok, err := DesiredFromURL(nil, srv.URL, "chat")(context.Background())
	if err != nil || !ok || n != 4 {
		t.Errorf("chat: %d %v %v, want 4", n, ok, err)
	}
	if _, ok, err := DesiredFromURL(nil, srv.URL, "absent")(context.Background()); ok || err != nil {
		t.Errorf("absent target: ok %v err %v, want not ok and no error", ok, err)
	}
}

// Issue 23 item 8's kind: a desired count declared a counter read as 0
// (the gauge accessor of a counter is empty), and a page without # TYPE
// too: the fleet would have followed it to nothing. Untyped is read as
// written; another type is an error (keep the current count), never 0.
func TestDesiredFromURLWrongType(t *testing.T) {
	for _, c := range []struct {
		page string
		n    int
		err  bool
	}{
		{"infscale_desired_replicas{target=\"chat\"} 4\n", 4, false},
		{"# TYPE infscale_desired_replicas counter\ninfscale_desired_replicas{target=\"chat\"} 4\n", 0, true},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, c.page) }))
		n, ok, err := DesiredFromURL(nil, srv.URL, "chat")(context.Background())
		srv.Close()
		if (err != nil) != c.err || (!c.err && (!ok || n != c.n)) || (c.err && ok) {
			t.Errorf("%q: %d %v %v; want %d, error %v", c.page, n, ok, err, c.n, c.err)
		}
	}
}

// advance runs the engine over the simulated interval [now-dt, now]: every
// phase that starts before now runs to its end (which may lie after now;
// the next call continues from there). It is the tests' simulated-time
// driver; a Fleet drives its engines in wall time (Fleet.drive).
func (e *engine) advance(dt time.Duration, now time.Time) {
	if start := now.Add(-dt); e.clock.Before(start) {
		e.clock = start
	}
	for e.clock.Before(now) {
		end, ok := e.begin(e.clock)
		if !ok {
			at, waiting := e.eligibleAt()
			if waiting && at.After(e.clock) && at.Before(now) {
				e.clock = at
				continue
			}
			e.clock = now
			return
		}
		e.finish()
		e.clock = end
	}
}
