package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/activator"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/fleet"
	"github.com/infscale/infscale/pkg/load"
	"github.com/infscale/infscale/pkg/serve"
)

// ZeroSummary is what the scale-to-zero demo saw.
type ZeroSummary struct {
	// ColdStart is the fleet's cold start; Cooldown serve's zero.cooldown;
	// Interval serve's decision interval.
	ColdStart, Cooldown, Interval time.Duration
	// Bursts are the bursts sent after silence, in order.
	Bursts []Burst
}

// Burst is one burst of requests sent through the activator while the
// fleet was at zero replicas.
type Burst struct {
	// Sent and Answered count the requests; Lost = Sent - Answered.
	Sent, Answered int
	// TTFT is each request's time to first token as its client saw it, in
	// send order, seconds (NaN: not answered).
	TTFT []float64
	// FirstWait is the longest TTFT of the first Clients requests (the ones
	// that arrived at zero replicas and were held).
	FirstWait float64
	// ToZero is how long after the burst's last answer the fleet was back
	// at zero replicas (0 for the last burst: the demo ends).
	ToZero time.Duration
	// SinceActive is how long after serve's last decision that read
	// activity (a request running, waiting or held, or a count it could not
	// read while replicas ran) the fleet was back at zero:
	// the moment the cooldown counts from, so at least the cooldown. That
	// read comes up to an interval before the last answer, so ToZero can
	// be shorter than the cooldown (0 for the last burst).
	SinceActive time.Duration
}

// zeroDemoConfig is the zero demo's serve config at scale 1 (60 s):
// embedded mode scraping the fleet's slots and the activator's /metrics
// (zero.held_scrape), queue 8 per replica, 0..3 replicas, back to zero
// after the cooldown.
const zeroDemoConfig = `
pollingInterval: 1s
listen: 127.0.0.1:0
targets:
- name: chat
  server: vllm
  scrape: [%s]
  metrics: [{type: queue, target: 8}]
  minReplicaCount: 0
  maxReplicaCount: 3
  behavior:
    scaleDown: {stabilizationWindowSeconds: 0}
  zero:
    cooldownPeriod: %dms
    held_scrape: %s
`

// The zero demo's shape: bursts of zeroRequests requests from zeroClients
// clients (64-token prompts, 16 output tokens), the first after the fleet
// has been at zero replicas for a moment, the second after the fleet went
// back to zero.
const (
	zeroBursts   = 2
	zeroClients  = 4
	zeroRequests = 12
)

// RunZeroDemo is the scale-to-zero demo: `infscale load` -> `infscale
// activator` -> the simulated fleet at zero replicas; serve in embedded
// mode reads the replicas and the activator's held count; the fleet
// follows infscale_desired_replicas after its cold start (8 s at the
// default 60 s length; the cold start, interval and cooldown scale with
// Duration: the run takes about two thirds of Duration, about 40 s of 60 s,
// and is stopped at twice Duration). Two bursts after silence: each
// request's TTFT is printed beside the cold start, and how many were lost
// (none, unless something is broken). When ctx ends first (a signal) the
// summary covers the bursts done, marked interrupted, and the error is nil,
// as RunDemo's. Errors: a component that fails to start, a demo that does
// not finish within 2 x Duration.
func RunZeroDemo(ctx context.Context, out io.Writer, o DemoOptions) (ZeroSummary, error) {
	o = o.withDefaults()
	scale := o.Duration.Seconds() / 60
	scaled := func(d time.Duration) time.Duration { return time.Duration(float64(d) * scale) }
	// The run takes about two thirds of Duration (two cooldowns and two
	// cold starts with their activations); twice Duration bounds it.
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, 2*o.Duration)
	defer cancel()
	sum := ZeroSummary{ColdStart: scaled(8 * time.Second).Round(100 * time.Millisecond), Interval: max(scaled(time.Second), 100*time.Millisecond)}

	f, err := fleet.Start(context.WithoutCancel(ctx), fleet.Config{Replicas: 1, Max: 3, ColdStart: sum.ColdStart})
	if err != nil {
		return sum, err
	}
	defer f.Stop()
	up, err := url.Parse(f.URL())
	if err != nil {
		return sum, err
	}
	act, err := activator.New(activator.Config{Upstream: up, ProbeInterval: max(scaled(200*time.Millisecond), 50*time.Millisecond), HoldTimeout: 2 * o.Duration})
	if err != nil {
		return sum, err
	}
	go act.Run(ctx)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return sum, err
	}
	actSrv := &http.Server{Handler: act.Mux(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: activator.DefaultIdleTimeout, MaxHeaderBytes: activator.MaxHeaderBytes}
	go actSrv.Serve(ln)
	defer actSrv.Close()
	actURL := "http://" + ln.Addr().String()

	cooldown := scaled(10 * time.Second)
	sum.Cooldown = cooldown
	cfg, err := config.Parse([]byte(fmt.Sprintf(zeroDemoConfig, strings.Join(f.URLs(), ", "), cooldown.Milliseconds(), actURL+"/metrics")), "demo-zero.yaml")
	if err != nil {
		return sum, fmt.Errorf("demo config: %w", err)
	}
	cfg.Interval = model.Duration(sum.Interval)

	start := time.Now()
	el := func() float64 { return time.Since(start).Seconds() }
	var mu sync.Mutex
	prevDesired, prevHeld := -1, -1.0
	var lastActive time.Time // serve's last decision that read activity
	record := func(r serve.Record) {
		mu.Lock()
		defer mu.Unlock()
		// Activity as the cooldown reads it (docs/recommend.md, scale to
		// zero): a request running, waiting or held, or a count not known
		// while replicas run (a replica still starting answers 503).
		active := r.Signals.Held == nil || r.Observed == nil ||
			*r.Observed > 0 && (r.Signals.Running == nil || r.Signals.Waiting == nil)
		for _, v := range []*float64{r.Signals.Running, r.Signals.Waiting, r.Signals.Held} {
			active = active || v != nil && *v > 0
		}
		if active {
			lastActive = r.At
		}
		held := math.NaN()
		if r.Signals.Held != nil {
			held = *r.Signals.Held
		}
		if r.Desired == prevDesired && (held == prevHeld || math.IsNaN(held) && math.IsNaN(prevHeld)) {
			return
		}
		prevDesired, prevHeld = r.Desired, held
		fmt.Fprintf(out, "%6.1fs  serve: held %s, replicas %s, desired %d (%s)\n", el(), fmtSig(r.Signals.Held, "%.0f"), observedText(r.Observed), r.Desired, r.Reason)
	}
	addrCh := make(chan string, 1)
	done := make(chan error, 1)
	serveCtx, stopServe := context.WithCancel(ctx)
	defer stopServe()
	// Nothing is printed until serve has bound its address (a port in use
	// fails before the banner); decisions wait for the banner.
	mu.Lock()
	go func() {
		done <- serve.Run(serveCtx, cfg, serve.Options{
			Listen: o.Listen, Log: o.Log, Version: "demo",
			OnListen: func(a string) { addrCh <- a }, OnDecision: record,
		})
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case err := <-done:
		mu.Unlock()
		return sum, err
	}
	fmt.Fprintf(out, "infscale demo: scale to zero behind the activator, a simulated vLLM fleet (8B on H100), serve in embedded mode\n")
	fmt.Fprintf(out, "path: infscale load -> infscale activator -> the fleet at zero replicas; serve reads the replicas and the held count; the fleet follows infscale_desired_replicas after a %s cold start\n",
		sum.ColdStart)
	fmt.Fprintf(out, "policy: queue 8 per replica, 0..3 replicas, back to zero after %s without requests; the fleet starts with one idle replica\n\n", cooldown.Round(100*time.Millisecond))
	mu.Unlock()
	go f.Follow(ctx, max(scaled(500*time.Millisecond), 50*time.Millisecond),
		fleet.DesiredFromURL(&http.Client{Timeout: time.Second}, "http://"+addr+"/metrics", "chat"), nil)

	// atZero waits until the fleet has no replica, ready or starting, serve
	// has decided 0, and the activator's probe has seen it: readiness comes
	// from the probe alone, so a request sent inside the probe interval after
	// the last replica went would be forwarded and get the fleet's 503 (on a
	// cluster the Service's endpoints are gone by then).
	atZero := func() error {
		for {
			mu.Lock()
			d := prevDesired
			mu.Unlock()
			if r, s := f.Ready(); r == 0 && s == 0 && d == 0 && !act.Ready() {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("demo: the fleet did not reach zero replicas within %s", 2*o.Duration)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	var ended time.Time // the last burst's end
	burst := func(n int) error {
		if err := atZero(); err != nil {
			return err
		}
		if n > 1 {
			mu.Lock()
			active := lastActive
			mu.Unlock()
			b := &sum.Bursts[n-2]
			b.ToZero, b.SinceActive = time.Since(ended), time.Since(active)
			fmt.Fprintf(out, "%6.1fs  back at zero replicas %.1f s after serve last read activity (held, running or waiting requests, or an unknown count, at %.1fs: the %s cooldown counts from there), %.1f s after burst %d's last answer\n",
				el(), b.SinceActive.Seconds(), active.Sub(start).Seconds(), cooldown.Round(100*time.Millisecond), b.ToZero.Seconds(), n-1)
		}
		fmt.Fprintf(out, "%6.1fs  fleet at zero replicas; burst %d: %d requests from %d clients through the activator\n", el(), n, zeroRequests, zeroClients)
		b, err := zeroBurst(ctx, actURL)
		if err != nil {
			return err
		}
		ended = time.Now()
		sum.Bursts = append(sum.Bursts, b)
		fmt.Fprintf(out, "%6.1fs  burst %d: %d of %d answered, %d lost; TTFT in send order (s): %s\n", el(), n, b.Answered, b.Sent, b.Sent-b.Answered, fmtList(b.TTFT))
		fmt.Fprintf(out, "         the first %d waited up to %.1f s for their first token: the %s cold start + %.1f s of activation (a scrape, a decision, the follow, the activator's probe)\n",
			zeroClients, b.FirstWait, sum.ColdStart, b.FirstWait-sum.ColdStart.Seconds())
		if n < zeroBursts {
			fmt.Fprintf(out, "%6.1fs  silence: no more requests; serve decides 0 once the %s cooldown has passed\n", el(), cooldown.Round(100*time.Millisecond))
		}
		return nil
	}
	err = nil
	for n := 1; n <= zeroBursts && err == nil; n++ {
		err = burst(n)
	}
	stopServe()
	<-done
	// A signal (parent's end) stops the demo as it stops serve: the
	// summary of the bursts that finished, marked interrupted. Anything
	// else that ended it early is the demo's failure.
	interrupted := parent.Err() != nil
	if err != nil && !interrupted {
		return sum, err
	}
	sent, answered := 0, 0
	for _, b := range sum.Bursts {
		sent, answered = sent+b.Sent, answered+b.Answered
	}
	fmt.Fprintf(out, "\nsummary: cold start %s; first request's wait", sum.ColdStart)
	for i, b := range sum.Bursts {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(out, "%s burst %d %.1f s", sep, i+1, b.FirstWait)
	}
	fmt.Fprintf(out, "; %d requests sent, %d answered, %d lost", sent, answered, sent-answered)
	if interrupted {
		fmt.Fprintf(out, " (interrupted after %s, %d of %d bursts done; the demo runs about %s)", time.Since(start).Round(time.Second), len(sum.Bursts), zeroBursts, time.Duration(float64(o.Duration)*2/3).Round(time.Second))
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "next: the same path on a cluster: deploy/activator and docs/keda.md (both zero paths)\n")
	return sum, nil
}

// zeroBurst sends one burst through the activator at base.
func zeroBurst(ctx context.Context, base string) (Burst, error) {
	recs, _, err := load.Run(ctx, load.Config{URL: base, Model: "meta-llama/Meta-Llama-3-8B", Concurrency: zeroClients, Requests: zeroRequests,
		PromptTokens: 64, MaxTokens: 16, Duration: time.Hour, Timeout: time.Hour})
	if err != nil {
		return Burst{}, fmt.Errorf("demo: load: %w", err)
	}
	if ctx.Err() != nil {
		return Burst{}, errors.New("demo: the burst did not finish in time")
	}
	b := Burst{Sent: len(recs), TTFT: make([]float64, len(recs))}
	for i, r := range recs {
		b.TTFT[i] = math.NaN()
		if r.Err == nil {
			b.Answered++
			b.TTFT[i] = r.TTFT
			if i < zeroClients {
				b.FirstWait = max(b.FirstWait, r.TTFT)
			}
		}
	}
	return b, nil
}

// fmtList prints seconds with two decimals, "-" for NaN.
func fmtList(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = "-"
		if !math.IsNaN(v) {
			s[i] = fmt.Sprintf("%.2f", v)
		}
	}
	return strings.Join(s, " ")
}
