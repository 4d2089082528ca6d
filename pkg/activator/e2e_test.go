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
	f, err := fleet.Start(t.Context(), fleet.Config{Replicas: 1, Max: 3, ColdStart: coldStart})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	f.SetDesired(0)

	up, _ := url.Parse(f.URL())
	act, err := activator.New(activator.Config{Upstream: up, ProbeInterval: 200 * time.Millisecond, HoldTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go act.Run(ctx)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(act.Registry(), promhttp.HandlerOpts{}))
	mux.Handle("/", act)
	actLn := listen(t)
	actSrv := &http.Server{Handler: mux}
	go actSrv.Serve(actLn)
	defer actSrv.Close()
	actURL := "http://" + actLn.Addr().String()

	// kube-state-metrics' view of the Deployment: its spec replicas, what
	// the fleet was last asked for.
	ksm := prometheus.NewRegistry()
	ksm.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kube_deployment_spec_replicas", ConstLabels: prometheus.Labels{"deployment": "chat"}},
		func() float64 { return float64(f.Desired()) }))
	ksmLn := listen(t)
	ksmSrv := &http.Server{Handler: promhttp.HandlerFor(ksm, promhttp.HandlerOpts{})}
	go ksmSrv.Serve(ksmLn)
	defer ksmSrv.Close()

	serveLn := listen(t)
	serveAddr := serveLn.Addr().String()
	serveLn.Close()
	targets := []promtest.Target{
		{URL: "http://" + serveAddr + "/metrics", Labels: map[string]string{"job_name": "infscale"}},
		{URL: actURL + "/metrics", Labels: map[string]string{"namespace": "llm", "service": "activator-chat"}},
		{URL: "http://" + ksmLn.Addr().String() + "/metrics", Labels: map[string]string{"namespace": "llm", "service": "kube-state-metrics"}},
	}
	for i, u := range f.URLs() {
		targets = append(targets, promtest.Target{URL: u, Labels: map[string]string{"namespace": "llm", "pod": fmt.Sprintf("chat-%d", i)}})
	}
	prom := promtest.Start(t, promtest.Options{Targets: targets, ScrapeInterval: time.Second})
	cfgPath := filepath.Join(t.TempDir(), "zero.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(zeroConfig, prom.URL, serveAddr)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- serve.Run(ctx, cfg, serve.Options{Version: "e2e", ConfigPath: cfgPath}) }()
	defer func() { cancel(); <-done }()
	go f.Follow(ctx, 500*time.Millisecond, fleet.DesiredFromURL(nil, "http://"+serveAddr+"/metrics", "chat"), nil)
	desiredQ := `infscale_desired_replicas{target="chat"}`
	prom.WaitFor(t, desiredQ, 30*time.Second, func(v model.Vector) bool { return len(v) == 1 && v[0].Value == 0 })

	burst := func(n int) []load.Record {
		t.Helper()
		recs, _, err := load.Run(t.Context(), load.Config{URL: actURL, Model: "meta-llama/Meta-Llama-3-8B", Concurrency: 4, Requests: 12, PromptTokens: 64, MaxTokens: 16, Duration: time.Minute, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		s := load.Summarize(recs, time.Second)
		if s.Requests != 12 || s.Errors != 0 {
			t.Fatalf("burst %d: %d answered, %d errors (%s): requests were lost", n, s.Requests, s.Errors, s.FirstError)
		}
		ttfts := make([]float64, len(recs))
		for i, r := range recs {
			ttfts[i] = r.TTFT
		}
		t.Logf("burst %d, cold start %v: TTFT of the 12 requests in send order (s): %.2f", n, coldStart, ttfts)
		first := slices.Max(ttfts[:4])
		if first < coldStart.Seconds() || first > coldStart.Seconds()+10 {
			t.Errorf("burst %d: the first requests' TTFT %.2f s, want one cold start (%v) plus the activation path (< 10 s)", n, first, coldStart)
		}
		if late := slices.Max(ttfts[4:]); late > 0.5 {
			t.Errorf("burst %d: a request after the activation waited %.2f s, want the replica's speed (< 0.5 s)", n, late)
		}
		return recs
	}
	burst(1)
	if got := act.Held(); got != 0 {
		t.Errorf("after the burst %d still held", got)
	}
	// Silence: idle for the 8 s cooldown, the fleet goes back to zero.
	prom.WaitFor(t, desiredQ, 40*time.Second, func(v model.Vector) bool { return len(v) == 1 && v[0].Value == 0 })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r, s := f.Ready(); r == 0 && s == 0 {
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
	f, err := fleet.Start(t.Context(), fleet.Config{Replicas: 1, Max: 3, ColdStart: coldStart})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	f.SetDesired(0)
	up, _ := url.Parse(f.URL())
	act, err := activator.New(activator.Config{Upstream: up, ProbeInterval: 200 * time.Millisecond, HoldTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go act.Run(ctx)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(act.Registry(), promhttp.HandlerOpts{}))
	mux.Handle("/", act)
	actLn := listen(t)
	actSrv := &http.Server{Handler: mux}
	go actSrv.Serve(actLn)
	defer actSrv.Close()
	actURL := "http://" + actLn.Addr().String()
	serveLn := listen(t)
	serveAddr := serveLn.Addr().String()
	serveLn.Close()
	urls := ""
	for i, u := range f.URLs() {
		if i > 0 {
			urls += ", "
		}
		urls += u
	}
	cfgPath := filepath.Join(t.TempDir(), "zero.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(embeddedZeroConfig, serveAddr, urls, actURL+"/metrics")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- serve.Run(ctx, cfg, serve.Options{Version: "e2e", ConfigPath: cfgPath}) }()
	defer func() { cancel(); <-done }()
	go f.Follow(ctx, 500*time.Millisecond, fleet.DesiredFromURL(nil, "http://"+serveAddr+"/metrics", "chat"), nil)
	recs, _, err := load.Run(t.Context(), load.Config{URL: actURL, Model: "meta-llama/Meta-Llama-3-8B", Concurrency: 4, Requests: 12, PromptTokens: 64, MaxTokens: 16, Duration: time.Minute, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if s := load.Summarize(recs, time.Second); s.Requests != 12 || s.Errors != 0 {
		t.Fatalf("%d answered, %d errors (%s)", s.Requests, s.Errors, s.FirstError)
	}
	ttfts := make([]float64, len(recs))
	for i, r := range recs {
		ttfts[i] = r.TTFT
	}
	t.Logf("cold start %v: TTFT of the 12 requests in send order (s): %.2f", coldStart, ttfts)
	if first := slices.Max(ttfts[:4]); first < coldStart.Seconds() || first > coldStart.Seconds()+8 {
		t.Errorf("the first requests' TTFT %.2f s, want the cold start (%v) plus the activation path", first, coldStart)
	}
}
