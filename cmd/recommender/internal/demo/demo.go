// Package demo is `infscale serve --demo`: a simulated vLLM fleet
// (pkg/fleet) under a load ramp, serve in embedded mode scraping it, and the
// fleet following serve's infscale_desired_replicas. It lives outside
// pkg/serve so that the production service does not import the simulator.
package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/fleet"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/serve"
)

// DemoOptions configure RunDemo.
type DemoOptions struct {
	// Duration is the demo's length (default 60 s). The load profile, cold
	// start, interval and windows scale with it.
	Duration time.Duration
	// Listen is serve's address (default 127.0.0.1:0, a free port).
	Listen string
	// Log receives serve's logs (nil: discard).
	Log *slog.Logger
}

// withDefaults fills the zero Duration and Listen.
func (o DemoOptions) withDefaults() DemoOptions {
	if o.Duration <= 0 {
		o.Duration = time.Minute
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	return o
}

// DemoSummary is what the demo saw.
type DemoSummary struct {
	Decisions            int
	ScaleUps, ScaleDowns int
	Reversals            int
	Peak, First, Last    int
	Served               int
	ReplicaSeconds       float64
	Errors               int
	// Span is the wall time the demo ran, to the second: its Duration, or
	// less when the context ended first (SIGINT).
	Span time.Duration
}

// demoConfig is the serve config of the demo, at scale 1 (60 s): queue 20
// per replica, 1..6 replicas, a 12 s scale-down window, the runaway
// guard's drain two 2 s intervals and its settle 12 s (the defaults are
// for 15 s periods and a 91 s cold start; the demo's 8 s cold start is
// compressed). TTFT p95 over 10 s is shown, not scaled on. The interval,
// window and guard spans are scaled by RunDemo.
const demoConfig = `
pollingInterval: 2s
listen: 127.0.0.1:0
targets:
- name: chat
  server: vllm
  scrape: [%s]
  metrics:
  - {type: queue, target: 20}
  minReplicaCount: 1
  maxReplicaCount: 6
  behavior:
    scaleDown:
      stabilizationWindowSeconds: %d
  guard: {drain: %dms, settle: %dms}
`

// demoRate is the load profile at scale 1, in requests per second: 4, a
// ramp to 40 between 6 s and 20 s, a hold until 36 s, a fall to 4 by 42 s.
func demoRate(t time.Duration, scale float64) float64 {
	s := t.Seconds() / scale
	switch {
	case s < 6:
		return 4
	case s < 20:
		return 4 + 36*(s-6)/14
	case s < 36:
		return 40
	case s < 42:
		return 40 - 36*(s-36)/6
	default:
		return 4
	}
}

// RunDemo is the quickstart: a simulated vLLM fleet whose load ramps, serve
// in embedded mode scraping it, and the fleet following
// infscale_desired_replicas from serve's /metrics after an 8 s cold start.
// Every decision is printed to out as it happens, then a summary; when ctx
// ends first (a signal) the summary covers the time run, marked
// interrupted, and the error is nil.
func RunDemo(ctx context.Context, out io.Writer, o DemoOptions) (DemoSummary, error) {
	o = o.withDefaults()
	scale := o.Duration.Seconds() / 60
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()

	f, err := fleet.Start(context.WithoutCancel(ctx), fleet.Config{
		Replicas: 1, Max: 6,
		ColdStart: time.Duration(8 * scale * float64(time.Second)),
		Rate:      func(t time.Duration) float64 { return demoRate(t, scale) },
	})
	if err != nil {
		return DemoSummary{}, err
	}
	defer f.Stop()
	window := max(int(math.Round(12*scale)), 1)
	drainMS, settleMS := max(int(4000*scale), 1), max(int(12000*scale), 1)
	cfg, err := config.Parse([]byte(fmt.Sprintf(demoConfig, strings.Join(f.URLs(), ", "), window, drainMS, settleMS)), "demo.yaml")
	if err != nil {
		return DemoSummary{}, fmt.Errorf("demo config: %w", err)
	}
	cfg.Interval = model.Duration(time.Duration(2 * scale * float64(time.Second)))

	src := serve.NewScrapeSource(time.Second)
	src.TTFTWindow = time.Duration(10 * scale * float64(time.Second))
	src.Discover = func(*config.Target) []string { return f.ReadyURLs() }

	tab := &table{out: out, scale: scale, start: time.Now(),
		// Reversals in the demo's compressed time: its scale-down window
		// stands for recommend.ReversalWindow (the HPA's 300 s default).
		window: time.Duration(window) * time.Second}
	addrCh := make(chan string, 1)
	done := make(chan error, 1)
	// Nothing is printed until serve has bound its address (a port in use
	// fails before the banner); decisions wait for the banner.
	tab.mu.Lock()
	go func() {
		done <- serve.Run(ctx, cfg, serve.Options{
			Listen: o.Listen, Log: o.Log, Source: src, Version: "demo",
			OnListen:   func(a string) { addrCh <- a },
			OnDecision: tab.record,
		})
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case err := <-done:
		tab.mu.Unlock()
		return DemoSummary{}, err
	}
	fmt.Fprintf(out, "infscale demo: a simulated vLLM fleet (8B on H100, 512+256 tokens per request) under a load ramp\n")
	fmt.Fprintf(out, "policy: queue 20 per replica, 1..6 replicas, scale-down window %ds; the fleet follows infscale_desired_replicas after a %s cold start\n\n",
		window, time.Duration(8*scale*float64(time.Second)).Round(100*time.Millisecond))
	fmt.Fprintf(out, "%7s  %-6s %6s %8s %8s %6s %9s %8s %8s  %s\n", "time", "target", "rate", "queue", "waiting", "kv", "ttft p95", "ready", "desired", "reason")
	tab.mu.Unlock()
	// The fleet follows serve's exported desired replicas, as KEDA would.
	go f.Follow(ctx, time.Duration(math.Max(0.5*scale, 0.1)*float64(time.Second)),
		fleet.DesiredFromURL(&http.Client{Timeout: time.Second}, "http://"+addr+"/metrics", "chat"), nil)
	// Replica-seconds: sample the fleet's running replicas.
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				r, s := f.Ready()
				tab.mu.Lock()
				tab.sum.ReplicaSeconds += float64(r+s) * 0.1
				tab.mu.Unlock()
			}
		}
	}()
	if err := <-done; err != nil {
		return DemoSummary{}, err
	}
	tab.mu.Lock()
	defer tab.mu.Unlock()
	sum := tab.sum
	sum.Served = f.Served()
	// The demo runs in wall time: its span is the time it ran, o.Duration
	// unless a signal stopped it first.
	sum.Span = time.Since(tab.start).Round(time.Second)
	span := sum.Span.String()
	if parent.Err() != nil {
		span += fmt.Sprintf(" (interrupted; the demo runs %s)", o.Duration)
	}
	fmt.Fprintf(out, "\nsummary: %d decisions in %s; desired %d -> peak %d -> %d; %d scale-ups, %d scale-downs, %d reversals\n",
		sum.Decisions, span, sum.First, sum.Peak, sum.Last, sum.ScaleUps, sum.ScaleDowns, sum.Reversals)
	fmt.Fprintf(out, "fleet: %d requests served, %.0f replica-seconds (cold starts included); %d read errors\n", sum.Served, sum.ReplicaSeconds, sum.Errors)
	fmt.Fprintf(out, "* = desired differs from the replicas running (a scale-up still in its cold start, or a scale-down about to happen)\n")
	fmt.Fprintf(out, "next: point serve at Prometheus: build the binary (`go build -o bin/infscale ./cmd/recommender`), then `bin/infscale serve --config examples/serve-prometheus.yaml` (docs/serve.md)\n")
	return sum, nil
}

// table prints the demo's decisions as they happen and sums them up.
type table struct {
	out    io.Writer
	scale  float64
	start  time.Time
	window time.Duration // the reversal window, in demo time

	mu   sync.Mutex
	sum  DemoSummary
	last recommend.ScaleChange // the last change, for reversals
	have bool
	prev int
}

// record counts and prints one decision of serve (its OnDecision hook).
func (t *table) record(r serve.Record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	el := time.Since(t.start)
	sum := &t.sum
	sum.Decisions++
	sum.Errors += len(r.Errors)
	if !t.have {
		sum.First, sum.Peak = r.Desired, r.Desired
	} else if r.Desired != t.prev {
		dir := 1
		if r.Desired < t.prev {
			dir = -1
			sum.ScaleDowns++
		} else {
			sum.ScaleUps++
		}
		next := recommend.ScaleChange{At: t.start.Add(el), Direction: dir}
		if recommend.IsReversal(t.last, next, t.window) {
			sum.Reversals++
		}
		t.last = next
	}
	t.have, t.prev = true, r.Desired
	sum.Peak, sum.Last = max(sum.Peak, r.Desired), r.Desired
	mark := ""
	if sum.Decisions > 1 && (r.Observed == nil || r.Desired != *r.Observed) {
		mark = " *"
	}
	fmt.Fprintf(t.out, "%6.1fs  %-6s %6.1f %8s %8s %6s %9s %8s %8d  %s%s\n", el.Seconds(), r.Target, demoRate(el, t.scale),
		fmtSig(r.Signals.Queue, "%.0f"), fmtSig(r.Signals.Waiting, "%.0f"), fmtSig(r.Signals.KV, "%.2f"), fmtSig(r.Signals.TTFT, "%.3fs"),
		observedText(r.Observed), r.Desired, r.Reason, mark)
}

func fmtSig(p *float64, format string) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf(format, *p)
}

// observedText is the demo's replicas column: "-" when unknown.
func observedText(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}
