package serve

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/epptest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/fleet"
)

// flowGateway is a stand-in for the llm-d Router with EPP Flow Control in
// front of a simulated vLLM fleet: a request that finds no ready replica
// waits in the gateway (counted as held, as the EPP's
// flow_control_queue_size counts it) until one is ready, then goes to the
// fleet once; /metrics is an EPP page of the pool (internal/epptest: the
// router's families) with the fleet's ready replicas as its fresh
// endpoints. What it does not model: priorities and fairness, the
// saturation gate while replicas are ready, TTL eviction.
type flowGateway struct {
	f     *fleet.Fleet
	proxy *httputil.ReverseProxy
	held  atomic.Int64
	peak  atomic.Int64
}

func (g *flowGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/metrics" {
		ready, _ := g.f.Ready()
		running, waiting, _ := g.f.Load()
		s := epptest.State{Pool: "chat", Model: "llama", Flows: []epptest.Flow{{FairnessID: "", Priority: "0", Held: float64(g.held.Load())}}}
		for i := range ready {
			e := epptest.Endpoint{Name: fmt.Sprintf("chat-%d", i), Fresh: true}
			if i == 0 {
				e.Running, e.Waiting = float64(running), float64(waiting)
			}
			s.Endpoints = append(s.Endpoints, e)
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, epptest.Page(s))
		return
	}
	if ready, _ := g.f.Ready(); ready == 0 {
		n := g.held.Add(1)
		for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
		}
		for ready == 0 {
			select {
			case <-r.Context().Done():
				g.held.Add(-1)
				return
			case <-time.After(20 * time.Millisecond):
			}
			ready, _ = g.f.Ready()
		}
		g.held.Add(-1)
	}
	g.proxy.ServeHTTP(w, r)
}

// TestEPPFlowControlZero: a pool behind EPP Flow Control goes 1 -> 0 after
// its cooldown, 0 -> 1 on the requests the gateway holds (no infscale
// activator), serves every one of them (none lost), and goes back to 0 after
// the cooldown. Config: embedded mode, server epp, zero.flow_control,
// cooldown 2 s, serve's interval 1 s; the fleet follows desired every
// 200 ms with a 1 s cold start.
func TestEPPFlowControlZero(t *testing.T) {
	if testing.Short() {
		t.Skip("runs serve against a simulated fleet for ~15 s")
	}
	f, err := fleet.Start(t.Context(), fleet.Config{Replicas: 1, Max: 2, ColdStart: time.Second, PromptTokens: 100, OutputTokens: 20, Tick: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	up, err := url.Parse(f.URL())
	if err != nil {
		t.Fatal(err)
	}
	gw := &flowGateway{f: f, proxy: httputil.NewSingleHostReverseProxy(up)}
	gws := httptest.NewServer(gw)
	defer gws.Close()

	serveAddr := freeAddr(t)
	cfgPath := filepath.Join(t.TempDir(), "epp.yaml")
	cfgText := fmt.Sprintf(`pollingInterval: 1s
listen: %s
targets:
- name: chat
  server: epp
  scrape: [%s/metrics]
  metrics: [{type: queue, target: 4}]
  minReplicaCount: 0
  maxReplicaCount: 2
  zero: {flow_control: true, cooldownPeriod: 2s}
`, serveAddr, gws.URL)
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, Options{Version: "e2e", ConfigPath: cfgPath}) }()
	defer func() { cancel(); <-done }()
	go f.Follow(ctx, 200*time.Millisecond, fleet.DesiredFromURL(nil, "http://"+serveAddr+"/metrics", "chat"), nil)
	desired := func() string {
		resp, err := http.Get("http://" + serveAddr + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		return grep(readAll(resp), `infscale_desired_replicas{target="chat"}`)
	}

	// 1 -> 0: idle for the cooldown.
	waitForIn(t, 20*time.Second, "desired 0 and the fleet at zero", func() bool {
		r, s := f.Ready()
		return strings.HasSuffix(desired(), " 0") && r == 0 && s == 0
	})

	// 0 -> 1 on the held requests; every request answered 200.
	const n = 6
	var wg sync.WaitGroup
	codes := make([]int, n)
	client := &http.Client{Timeout: 30 * time.Second}
	sent := time.Now()
	for i := range n {
		wg.Go(func() {
			resp, err := client.Post(gws.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"meta-llama/Meta-Llama-3-8B","prompt":"hello","max_tokens":20}`))
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			readAll(resp)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	finished := time.Now()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("request %d: status %d, want 200 (no request lost)", i, c)
		}
	}
	if p := gw.peak.Load(); p != n {
		t.Errorf("the gateway held at most %d requests, want all %d (they arrived at zero)", p, n)
	}
	if wait := finished.Sub(sent); wait < time.Second {
		t.Errorf("the held requests were served after %v, less than the 1 s cold start: were they held?", wait)
	}

	// 1 -> 0 after the cooldown (2 s) once nothing runs, waits or is held.
	// serve sees activity only at its reads (every 1 s), so the last one
	// that saw a request may be up to an interval before the last answer:
	// at least 2 s - 1 s after it.
	waitForIn(t, 20*time.Second, "desired back to 0", func() bool { return strings.HasSuffix(desired(), " 0") })
	if idle := time.Since(finished); idle < time.Second {
		t.Errorf("back to 0 after %v idle, want at least the 2 s cooldown less serve's 1 s interval", idle)
	}
}

func readAll(resp *http.Response) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

func waitForIn(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s", d, what)
}
