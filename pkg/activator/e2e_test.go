package activator_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/activator"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/fleet"
	"github.com/infscale/infscale/pkg/load"
	"github.com/infscale/infscale/pkg/serve"
)

// zeroConfig: scale to zero behind the activator, read through Prometheus:
// queue 8 per replica, 0..3, idle 8 s to zero, held = the activator's gauge.
const zeroConfig = `
prometheus: {url: %s, timeout: 2s}
interval: 1s
listen: %s
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm", pod=~"chat-.*"}'
  replicas: 'kube_deployment_spec_replicas{namespace="llm", deployment="chat"}'
  metrics: [{type: queue, target: 8}]
  min: 0
  max: 3
  behavior:
    scaleDown: {stabilizationWindowSeconds: 0}
  zero:
    cooldown: 8s
    held: 'sum(infscale_activator_held_requests{service="activator-chat"})'
`

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// zeroStack is the fleet at zero replicas behind a running activator.
type zeroStack struct {
	fleet  *fleet.Fleet
	act    *activator.Activator
	url    string // the activator's base URL (/metrics is its own)
	ctx    context.Context
	cancel context.CancelFunc
}

func startZeroStack(t *testing.T, coldStart time.Duration) *zeroStack {
	t.Helper()
	f, err := fleet.Start(t.Context(), fleet.Config{Replicas: 1, Max: 3, ColdStart: coldStart})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	f.SetDesired(0)
	up, _ := url.Parse(f.URL())
	act, err := activator.New(activator.Config{Upstream: up, ProbeInterval: 200 * time.Millisecond, HoldTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go act.Run(ctx)
	ln := listen(t)
	srv := &http.Server{Handler: act.Mux()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &zeroStack{fleet: f, act: act, url: "http://" + ln.Addr().String(), ctx: ctx, cancel: cancel}
}

// runServe runs serve on the config text until the test ends, and the
// fleet following its desired replicas as KEDA would.
func (z *zeroStack) runServe(t *testing.T, cfgText, serveAddr string) {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "zero.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- serve.Run(z.ctx, cfg, serve.Options{Version: "e2e", ConfigPath: cfgPath}) }()
	t.Cleanup(func() { z.cancel(); <-done })
	go z.fleet.Follow(z.ctx, 500*time.Millisecond, fleet.DesiredFromURL(nil, "http://"+serveAddr+"/metrics", "chat"), nil)
}

// burst sends 12 requests from 4 clients through the activator and
// checks that none is lost; it returns each request's TTFT in send order.
func (z *zeroStack) burst(t *testing.T) []float64 {
	t.Helper()
	recs, _, err := load.Run(t.Context(), load.Config{URL: z.url, Model: "meta-llama/Meta-Llama-3-8B", Concurrency: 4, Requests: 12, PromptTokens: 64, MaxTokens: 16, Duration: time.Minute, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if s := load.Summarize(recs, time.Second); s.Requests != 12 || s.Errors != 0 {
		for i, r := range recs {
			t.Logf("request %d: start %v ttft %.3f e2e %.3f tokens %d err %v", i, r.Start, r.TTFT, r.E2E, r.OutputTokens, r.Err)
		}
		t.Fatalf("%d answered, %d errors (%s): requests were lost", s.Requests, s.Errors, s.FirstError)
	}
	ttfts := make([]float64, len(recs))
	for i, r := range recs {
		ttfts[i] = r.TTFT
	}
	return ttfts
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln := listen(t)
	defer ln.Close()
	return ln.Addr().String()
}

// TestEndToEndZero: load -> activator -> the fleet at zero replicas ->
// Prometheus (scraping the fleet, the activator and infscale) -> infscale
// serve -> the fleet follows infscale_desired_replicas as KEDA would, with
// a 3 s cold start (and a kube-state-metrics stand-in exporting its spec
// replicas for the replicas: query). Twice (a burst, silence until the fleet is back at
// zero, a second burst): every request is answered (none lost), the first
// requests of each burst wait about one cold start plus the activation
// path (a scrape, a decision, a follow poll, a probe: a few seconds), and
// the later ones are served at the replica's speed.
func TestEndToEndZero(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	const coldStart = 3 * time.Second
	z := startZeroStack(t, coldStart)
	f, actURL := z.fleet, z.url
	// kube-state-metrics' view of the Deployment: its spec replicas, what
	// the fleet was last asked for.
	ksm := prometheus.NewRegistry()
	ksm.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kube_deployment_spec_replicas", ConstLabels: prometheus.Labels{"deployment": "chat"}},
		func() float64 { return float64(f.Desired()) }))
	ksmLn := listen(t)
	ksmSrv := &http.Server{Handler: promhttp.HandlerFor(ksm, promhttp.HandlerOpts{})}
	go ksmSrv.Serve(ksmLn)
	defer ksmSrv.Close()

	serveAddr := freeAddr(t)
	targets := []promtest.Target{
		{URL: "http://" + serveAddr + "/metrics", Labels: map[string]string{"job_name": "infscale"}},
		{URL: actURL + "/metrics", Labels: map[string]string{"namespace": "llm", "service": "activator-chat"}},
		{URL: "http://" + ksmLn.Addr().String() + "/metrics", Labels: map[string]string{"namespace": "llm", "service": "kube-state-metrics"}},
	}
	for i, u := range f.URLs() {
		targets = append(targets, promtest.Target{URL: u, Labels: map[string]string{"namespace": "llm", "pod": fmt.Sprintf("chat-%d", i)}})
	}
	prom := promtest.Start(t, promtest.Options{Targets: targets, ScrapeInterval: time.Second})
	z.runServe(t, fmt.Sprintf(zeroConfig, prom.URL, serveAddr), serveAddr)
	desiredQ := `infscale_desired_replicas{target="chat"}`
	prom.WaitFor(t, desiredQ, 30*time.Second, func(v model.Vector) bool { return len(v) == 1 && v[0].Value == 0 })

	burst := func(n int) {
		t.Helper()
		ttfts := z.burst(t)
		t.Logf("burst %d, cold start %v: TTFT of the 12 requests in send order (s): %.2f", n, coldStart, ttfts)
		first := slices.Max(ttfts[:4])
		if first < coldStart.Seconds() || first > coldStart.Seconds()+10 {
			t.Errorf("burst %d: the first requests' TTFT %.2f s, want one cold start (%v) plus the activation path (< 10 s)", n, first, coldStart)
		}
		if late := slices.Max(ttfts[4:]); late > 0.5 {
			t.Errorf("burst %d: a request after the activation waited %.2f s, want the replica's speed (< 0.5 s)", n, late)
		}
	}
	burst(1)
	if got := z.act.Held(); got != 0 {
		t.Errorf("after the burst %d still held", got)
	}
	// Silence: idle for the 8 s cooldown, the fleet goes back to zero, and
	// the activator's probe sees it (readiness comes from the probe alone: a
	// request inside the probe interval after the last replica went would be
	// forwarded and get the fleet's 503; on a cluster the endpoints are gone).
	prom.WaitFor(t, desiredQ, 40*time.Second, func(v model.Vector) bool { return len(v) == 1 && v[0].Value == 0 })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r, s := f.Ready(); r == 0 && s == 0 && !z.act.Ready() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fleet did not follow desired 0")
		}
		time.Sleep(100 * time.Millisecond)
	}
	burst(2)
}

// embeddedZeroConfig: the same target in embedded mode: serve scrapes the
// fleet's slots itself and the held count from the activator's /metrics.
const embeddedZeroConfig = `
interval: 1s
listen: %s
targets:
- name: chat
  server: vllm
  scrape: [%s]
  metrics: [{type: queue, target: 8}]
  min: 0
  max: 3
  behavior:
    scaleDown: {stabilizationWindowSeconds: 0}
  zero:
    cooldown: 8s
    held_scrape: %s
`

// TestEndToEndZeroEmbedded: as TestEndToEndZero without Prometheus: serve
// scrapes the replicas and the activator (zero.held_scrape); with no
// replica answering and the activator's upstream not ready it knows the
// fleet is at zero. One burst: none lost, the first requests wait the cold
// start plus the activation path.
func TestEndToEndZeroEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s of wall time")
	}
	const coldStart = 2 * time.Second
	z := startZeroStack(t, coldStart)
	serveAddr := freeAddr(t)
	urls := ""
	for i, u := range z.fleet.URLs() {
		if i > 0 {
			urls += ", "
		}
		urls += u
	}
	z.runServe(t, fmt.Sprintf(embeddedZeroConfig, serveAddr, urls, z.url+"/metrics"), serveAddr)
	ttfts := z.burst(t)
	t.Logf("cold start %v: TTFT of the 12 requests in send order (s): %.2f", coldStart, ttfts)
	if first := slices.Max(ttfts[:4]); first < coldStart.Seconds() || first > coldStart.Seconds()+8 {
		t.Errorf("the first requests' TTFT %.2f s, want the cold start (%v) plus the activation path", first, coldStart)
	}
}
