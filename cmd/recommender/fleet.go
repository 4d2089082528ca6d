package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/infscale/infscale/internal/tcplisten"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/fleet"
	"github.com/infscale/infscale/pkg/replica"
)

// maxFleetRate bounds fleet --rate: a loopback stand-in, not a load
// generator (1e12 req/s took 24 GB and starved the signal handler).
const maxFleetRate = 10000

// maxFleetSlots bounds fleet --max: each slot binds a loopback port and
// serves its own /metrics, so a local stand-in for a fleet stays far from
// the machine's ephemeral port range.
const maxFleetSlots = 1000

// minFleetEvery and maxFleetEvery bound --follow-every and --status: a
// poll or print more often than every 100ms busy-loops a loopback stand-in,
// one rarer than hourly follows nothing a demo could show.
const (
	minFleetEvery = 100 * time.Millisecond
	maxFleetEvery = time.Hour
)

// FleetCmd is `infscale fleet`: a simulated vLLM fleet on loopback whose
// replicas expose vLLM-named /metrics (docs/serve.md, "Simulated fleet").
type FleetCmd struct {
	Replicas     int           `name:"replicas" default:"1" help:"Replicas serving at start."`
	Max          int           `name:"max" default:"8" help:"Most replicas, 1..1000 (one loopback port is bound per slot; a slot without a replica answers 503)."`
	Rate         float64       `name:"rate" default:"10" help:"Arrival rate, requests per second (0..${max_fleet_rate}: every request is simulated in wall time on this machine)."`
	PromptTokens int           `name:"prompt-tokens" default:"512" help:"Prompt tokens per request."`
	OutputTokens int           `name:"output-tokens" default:"256" help:"Output tokens per request."`
	ColdStart    time.Duration `name:"cold-start" default:"0s" help:"Time a new replica takes to serve, 0 to 24h (0: the replica model's cold start, 91s for the reference)."`
	Follow       string        `name:"follow" placeholder:"URL" help:"Follow infscale_desired_replicas from this /metrics URL (infscale serve's), as KEDA would."`
	Target       string        `name:"target" default:"chat" help:"The target label to follow (needs --follow)."`
	FollowEvery  time.Duration `name:"follow-every" default:"5s" help:"How often --follow polls, 100ms to 1h (needs --follow)."`
	Status       time.Duration `name:"status" default:"5s" help:"How often to print the fleet's state, 100ms to 1h (0: never)."`
	Listen       string        `name:"listen" default:"127.0.0.1:0" help:"Address of the fleet's OpenAI API (/v1/completions, /v1/chat/completions, /v1/models, /health) balanced over the ready replicas."`
	Control      string        `name:"control" default:"127.0.0.1:0" help:"Address of the fault-drill API (--control=off for none): POST /fleet/burst?n=N (N requests at once), /fleet/scrape-failure?on=true|false (every /metrics answers 500 while on), /fleet/cancel (every request dropped: the clients went away); GET /fleet/state."`
	ReplicaFlags `embed:""`
}

// Run starts the fleet, prints a serve config snippet with its URLs, and
// runs until interrupted.
func (c *FleetCmd) Run(e *env) error {
	if c.Max < 1 || c.Max > maxFleetSlots {
		return invalidf("--max %d: want 1..%d (the most replicas; one loopback port is bound per slot)", c.Max, maxFleetSlots)
	}
	if c.Replicas < 0 || c.Replicas > c.Max {
		return invalidf("--replicas must be 0..--max (%d), got %d", c.Max, c.Replicas)
	}
	if !(c.Rate >= 0 && c.Rate <= maxFleetRate) { // NaN too
		return invalidf("--rate %v: want requests per second in 0..%d (the fleet simulates every request in wall time on this machine)", c.Rate, maxFleetRate)
	}
	if c.Replicas == 0 && c.Follow == "" && c.Rate > 0 {
		// Nothing else scales the fleet: the traffic piled up pending.
		return invalidf("--replicas 0 without --follow: no replica ever starts, and --rate %v's requests would pile up pending without end; give --replicas 1 or more, --follow URL, or --rate 0", c.Rate)
	}
	if c.PromptTokens < 1 || c.OutputTokens < 1 {
		return invalidf("--prompt-tokens and --output-tokens must be >= 1")
	}
	if err := config.CheckListen(c.Listen); err != nil {
		return invalidf("--listen %q: %v", c.Listen, err)
	}
	if c.ColdStart < 0 {
		return invalidf("--cold-start %s: want a duration >= 0 (0: the replica model's cold start)", c.ColdStart)
	}
	if c.ColdStart > replica.MaxColdStartPart {
		// The fleet runs in wall time: 100000h started replicas that
		// never served, the run reading as an outage.
		return invalidf("--cold-start %s: want at most %s (a day, the bound of each part of the replica model's cold start, --image-pull and --warm-up; 0: the model's)", shortDuration(c.ColdStart), shortDuration(replica.MaxColdStartPart))
	}
	if err := durationIn("follow-every", c.FollowEvery, minFleetEvery, maxFleetEvery, "polling more often busy-loops; rarer follows nothing a run shows"); err != nil {
		return err
	}
	if c.Status != 0 {
		if err := durationIn("status", c.Status, minFleetEvery, maxFleetEvery, "or 0 for never; printing more often floods the terminal"); err != nil {
			return err
		}
	}
	if err := needsFlag(e.given, "follow-every", c.Follow != "", "--follow"); err != nil {
		return err
	}
	if err := needsFlag(e.given, "target", c.Follow != "", "--follow (it names the target whose infscale_desired_replicas to follow)"); err != nil {
		return err
	}
	if c.Follow != "" {
		if _, err := httpURL("--follow", c.Follow); err != nil {
			return err
		}
	}
	control := c.Control
	if control == "off" {
		control = ""
	} else if err := config.CheckListen(control); err != nil {
		return invalidf("--control %q: %v; or off for no fault-drill API", c.Control, err)
	} else if sameListen(control, c.Listen) {
		// Binding it failed as "another process holds the port".
		return invalidf("--control %s: the port of --listen %s: give each its own (port 0: any free one) or --control off", control, c.Listen)
	}
	rc, err := c.ReplicaFlags.Config()
	if err != nil {
		return err
	}
	model, err := replica.New(rc)
	if err != nil {
		return invalid(err)
	}
	// A request longer than max_model_len is refused by vLLM (and by the
	// fleet's API); simulated traffic of such requests would wait forever.
	if n, most := int64(c.PromptTokens)+int64(c.OutputTokens), fleet.MaxModelLen(model); n > most {
		return invalidf("--prompt-tokens %d + --output-tokens %d = %d tokens: above max_model_len %d (%s's context length, capped at the replica's KV cache), a request vLLM refuses; give fewer tokens",
			c.PromptTokens, c.OutputTokens, n, most, rc.Model.Name)
	}
	// Bound here, so that a port in use is said under its flag (as serve
	// and activator say it); fleet.Start owns them from then on.
	front, err := tcplisten.Listen(c.Listen, "--listen "+c.Listen, "--listen")
	if err != nil {
		return err // runtime: exit 1
	}
	var ctl net.Listener
	if control != "" {
		if ctl, err = tcplisten.Listen(control, "--control "+control, "--control"); err != nil {
			front.Close()
			return err
		}
	}
	f, err := fleet.Start(e.ctx, fleet.Config{Replicas: max(c.Replicas, 1), Max: c.Max, Replica: model, ColdStart: c.ColdStart,
		PromptTokens: c.PromptTokens, OutputTokens: c.OutputTokens, Listener: front, ControlListener: ctl})
	if err != nil {
		return err
	}
	defer f.Stop()
	if c.Replicas == 0 {
		f.SetDesired(0)
	}
	f.SetRate(c.Rate)
	fmt.Fprintf(e.stdout, "# simulated vLLM fleet: %d replica(s) of %d, %.1f req/s of simulated traffic; OpenAI API at %s\n", c.Replicas, c.Max, c.Rate, f.URL())
	if u := f.ControlURL(); u != "" {
		fmt.Fprintf(e.stdout, "# fault drills: curl -X POST '%s/fleet/burst?n=100' (or /fleet/scrape-failure?on=true, /fleet/cancel); curl %s/fleet/state\n", u, u)
	}
	fmt.Fprintf(e.stdout, "# paste into an embedded serve config:\n")
	fmt.Fprintf(e.stdout, "targets:\n- name: %s\n  server: vllm\n  scrape:\n", c.Target)
	for _, u := range f.URLs() {
		fmt.Fprintf(e.stdout, "  - %s\n", u)
	}
	fmt.Fprintf(e.stdout, "  metrics: [{type: queue, target: 24}]\n  maxReplicaCount: %d\n", c.Max)
	if c.Follow != "" {
		go f.Follow(e.ctx, c.FollowEvery, sayAbsent(fleet.DesiredFromURL(&http.Client{Timeout: 5 * time.Second}, c.Follow, c.Target), c.Follow, c.Target, f.Desired),
			func(err error) { fmt.Fprintf(e.stderr, "follow: %v\n", err) })
	}
	if c.Status == 0 {
		<-e.ctx.Done()
		return nil
	}
	tick := time.NewTicker(c.Status)
	defer tick.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return nil
		case <-tick.C:
			ready, starting := f.Ready()
			run, wait, pend := f.Load()
			fmt.Fprintf(e.stdout, "%s ready %d starting %d desired %d | running %d waiting %d pending %d | served %d\n",
				time.Now().Format(time.TimeOnly), ready, starting, f.Desired(), run, wait, pend, f.Served())
		}
	}
}

// sayAbsent wraps a --follow reader: the first read that finds no
// infscale_desired_replicas{target=...} on the page, and the first after
// each read that found it, is an error saying so (a --target no serve
// exports, or a URL that is not serve's, held the fleet silently).
func sayAbsent(read fleet.DesiredFunc, url, target string, current func() int) fleet.DesiredFunc {
	said := false
	return func(ctx context.Context) (int, bool, error) {
		n, ok, err := read(ctx)
		switch {
		case err != nil:
		case ok:
			said = false
		case !said:
			said = true
			err = fmt.Errorf("%s has no infscale_desired_replicas{target=%q} (yet): holding %d replicas; check --target against serve's target names and that the URL is serve's /metrics", url, target, current())
		}
		return n, ok, err
	}
}

// sameListen tells whether two host:port addresses (CheckListen's) would
// bind the same port: the same port, not 0, on the same host or a
// wildcard one.
func sameListen(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	wild := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return err1 == nil && err2 == nil && pa == pb && pa != "0" && (ha == hb || wild(ha) || wild(hb))
}
