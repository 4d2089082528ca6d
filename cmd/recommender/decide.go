package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/infscale/infscale/cmd/recommender/internal/timearg"
	"github.com/infscale/infscale/internal/boundedfile"
	"github.com/infscale/infscale/internal/quantity"
	"github.com/infscale/infscale/internal/sourcekey"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/scrape"
	"github.com/infscale/infscale/pkg/statefile"
)

// DecideCmd is `infscale decide [PAGE...]`: one scaling decision from
// /metrics pages (one per replica) or from signal flags, explained step by
// step (docs/recommend.md).
type DecideCmd struct {
	Pages   []string           `arg:"" optional:"" name:"PAGE" help:"A replica's /metrics page: a file, an http(s) URL, or - for stdin; each replica once (the same URL or file named twice is an error). Running and waiting are summed over pages, KV averaged. Without a PAGE give the signals as flags (--queue, ...): with neither, decide refuses."`
	Server  modelserver.Server `default:"auto" placeholder:"S" help:"Server profile of the pages: auto (detect), ${servers} (default ${default})."`
	Timeout time.Duration      `default:"10s" placeholder:"D" help:"Timeout of one URL fetch (default 10s)."`

	Current *int      `placeholder:"N" help:"Replicas the workload has now, at least the number of PAGEs (each page is a running replica). Default: the number of PAGEs; without pages the previous desired in --state; else 1. At 0 no server runs: give --held, not the signals servers report (--queue, --running, --waiting, --kv, --cpu, --ttft, --queue-time are refused; at 0 from --state they are dropped with a warning)."`
	Unready int       `placeholder:"N" help:"Replicas of --current that are starting and report nothing (the HPA leaves them out on a scale-down, counts them at 0 on a scale-up)."`
	Held    *float64  `placeholder:"N" help:"Requests held in front of the servers (activator, gateway), counted in queue and used to activate from zero. Unset: unknown (with --min 0 nothing goes to zero on it)."`
	Running *float64  `placeholder:"N" help:"Running requests, total over replicas (overrides the pages)."`
	Waiting *float64  `placeholder:"N" help:"Waiting requests, total over replicas (overrides the pages)."`
	Queue   *float64  `placeholder:"N" help:"Total queue (running + waiting) when the split is not known; sets running 0 and waiting N."`
	KV      *fraction `name:"kv" placeholder:"F" help:"Mean KV-cache usage over replicas, a fraction 0..1 or a percentage, e.g. 0.75 or 75% (overrides the pages)."`
	CPU     *percent  `name:"cpu" placeholder:"PCT" help:"Mean CPU as a percent of the pod's request, e.g. 60 or 60% (pages need two scrapes for it, so give it here)."`
	TTFT    *seconds  `name:"ttft" placeholder:"S" help:"Observed time-to-first-token quantile: seconds, or a duration such as 2.5s or 800ms."`

	QueueTime            *seconds  `name:"queue-time" placeholder:"S" help:"Observed queue-time quantile (vllm:request_queue_time_seconds), seconds or a duration such as 400ms: the queuewait signal."`
	ITL                  *seconds  `name:"itl" placeholder:"S" help:"Observed inter-token-latency quantile, seconds or a duration such as 25ms (shown in a note; no metric scales on it)."`
	ArrivalRate          *float64  `name:"arrival-rate" placeholder:"R" help:"Requests arriving per second over the target: the demand signal."`
	PromptTokensRate     *float64  `name:"prompt-tokens-rate" placeholder:"R" help:"Prompt tokens prefilled per second over the target (shown in a note; no metric scales on it)."`
	GenerationTokensRate *float64  `name:"generation-tokens-rate" placeholder:"R" help:"Tokens generated per second over the target (shown in a note; no metric scales on it)."`
	MeanPrompt           *float64  `name:"mean-prompt" placeholder:"N" help:"Mean prompt length of recent requests, tokens: the demand signal."`
	MeanOutput           *float64  `name:"mean-output" placeholder:"N" help:"Mean output length of recent requests, tokens: the demand signal."`
	PrefixCacheHit       *fraction `name:"prefix-cache-hit" placeholder:"F" help:"Fraction of prompt tokens found in the prefix cache, 0..1 or a percentage (vllm:prefix_cache_hits_total over vllm:prefix_cache_queries_total): the demand signal prefills the rest (default: none, every token prefilled)."`
	PolicyFlags          `embed:""`

	State  string `placeholder:"FILE" help:"JSON file with the window history and scale events; read if it exists, written after the decision (so a cron job remembers, like the HPA controller)."`
	Now    string `placeholder:"T" help:"Decision time: unix seconds or RFC3339 (default: the clock)."`
	Output string `short:"o" enum:"text,json" default:"text" help:"Output format: text or json."`
	// notVoting says, per PAGE that did not vote (not read, or a stuck
	// engine), why.
	notVoting []string
	// pageNotes says, per PAGE that voted, which of its signals are
	// unknown and why (a NaN sample, a family declared with another
	// type), or that it reports none (pageNotes).
	pageNotes []string
	// client fetches the URL pages (nil: a plain client with --timeout;
	// kube's API-server proxy passes the cluster's).
	client *http.Client
	// needSignals refuses a command line without a PAGE or a signal flag,
	// once its other flags are checked (decide's own; kube scrapes a
	// workload that may have no Ready pod).
	needSignals bool
	// workloadPods, set by kube, says the pages are one workload's Ready
	// pods: pods of two servers are then a rollout between them, summed,
	// not refused as two workloads' pages (oneServer).
	workloadPods bool
	// saveLater, set by kube --apply, leaves the --state write (and its
	// lock) to the caller: decide neither locks nor writes, and leaves the
	// write in save, done only once the decision was applied.
	saveLater bool
	save      func() error
}

// PolicyFlags are the policy flags of decide and kube (the same names and
// rules as serve's config keys, recommend.Policy.Validate owning them).
type PolicyFlags struct {
	ReplicaFlags `embed:"" group:"Replica (the demand metric's capacity)"`

	Metric    []string `default:"queue" placeholder:"M" help:"Signal(s) to scale on: ${signals} (repeat or comma-separate; the largest recommendation wins; default ${default})."`
	Target    []string `placeholder:"X" help:"Target per metric, in --metric order: requests per replica (queue, waiting, running), fraction (kv), percent (cpu), a duration such as 2s or 500ms, or seconds below 60 (ttft, queuewait: 2000 is refused, write 2000ms), utilisation of one replica (demand, e.g. 0.8); a percentage such as 80% is 0.8 for kv and demand, 80 for cpu, refused for the others. Default 4 for queue; needed for the others."`
	Min       int      `default:"1" help:"Minimum replicas (0 enables scale to zero; queue, waiting, running or ttft only)."`
	Max       int      `default:"${default_max}" help:"Maximum replicas (default ${default_max}, KEDA's maxReplicaCount)."`
	Tolerance *float64 `placeholder:"F" help:"HPA tolerance, both directions, a fraction in [0, 1) (default 0.1)."`

	UpWindow     *time.Duration `placeholder:"D" help:"scaleUp.stabilizationWindowSeconds as a duration (default 0s)."`
	DownWindow   *time.Duration `placeholder:"D" help:"scaleDown.stabilizationWindowSeconds as a duration (default 300s)."`
	UpPods       *int32         `placeholder:"N" help:"scaleUp policy: add at most N pods per --up-period (replaces the default policies)."`
	UpPercent    *wholePercent  `placeholder:"P" help:"scaleUp policy: add at most P% per --up-period, e.g. 100 or 100% (replaces the default policies)."`
	UpPeriod     *time.Duration `placeholder:"D" help:"periodSeconds of the --up-pods/--up-percent policies (default 15s)."`
	UpSelect     string         `placeholder:"S" help:"scaleUp selectPolicy: Max, Min or Disabled (default Max)."`
	DownPods     *int32         `placeholder:"N" help:"scaleDown policy: remove at most N pods per --down-period (replaces the default)."`
	DownPercent  *wholePercent  `placeholder:"P" help:"scaleDown policy: remove at most P% per --down-period, e.g. 10 or 10% (replaces the default)."`
	DownPeriod   *time.Duration `placeholder:"D" help:"periodSeconds of the --down-pods/--down-percent policies (default 15s)."`
	DownSelect   string         `placeholder:"S" help:"scaleDown selectPolicy: Max, Min or Disabled (default Max)."`
	Behavior     string         `placeholder:"FILE" help:"autoscaling/v2 HorizontalPodAutoscalerBehavior YAML (an HPA's spec.behavior); a field may not be set both here and by a flag."`
	Lookahead    time.Duration  `placeholder:"D" help:"Project demand over D (e.g. the cold start, 90s) from its recent trend; needs --state to see a trend."`
	RampBound    *float64       `name:"ramp-bound" placeholder:"Z" help:"Standard errors the demand metric adds to an arrival trend that counts before projecting it over --lookahead (0 to 10, default 0; simulate's recommended: 0.26 at a 91 s cold start; docs/recommend.md, \"The ramp bound\")."`
	Hold         *time.Duration `placeholder:"D" help:"The cost-aware hold's break-even (docs/recommend.md): each replica a dip releases is kept while its release is younger than the hold the dips in --state make cheapest (simulate's recommended: two cold starts, 182s); needs --state."`
	NoGuard      bool           `name:"no-guard" help:"Turn off the runaway guard (docs/recommend.md). Only --state decisions are guarded (a one-shot decision asked for nothing before). The latency guards' bound by capacity (ttft, queuewait with demand and --lookahead; reason guard) is not this guard and still applies."`
	ZeroCooldown *time.Duration `placeholder:"D" help:"With --min 0: idle time before the last replica goes (KEDA cooldownPeriod, default 300s)."`
	Schedule     []string       `sep:"none" placeholder:"CRON;D;MIN[;TZ]" help:"Raise min to MIN for D after each time the 5-field CRON fires, in time zone TZ (default UTC), e.g. \"0 8 * * 1-5;12h;4;Europe/Berlin\". Repeatable."`
}

// Run builds the policy and the observation, decides, and prints. A
// command line with neither a PAGE nor a signal flag is refused: it would
// decide on nothing (reason no-data) and exit 0.
func (c *DecideCmd) Run(e *env) error {
	// The page flags need pages (kube's decisions give their own).
	urls := slices.ContainsFunc(c.Pages, sourcekey.IsHTTP)
	if err := needsFlag(e.given, "server", len(c.Pages) > 0, "a PAGE (it names the server that wrote the pages; signals given as flags have none)"); err != nil {
		return err
	}
	if err := needsFlag(e.given, "timeout", urls, "a PAGE that is an http(s) URL (it bounds one fetch; a file or - is read as it is)"); err != nil {
		return err
	}
	c.needSignals = true
	_, err := c.decide(e)
	return err
}

// anySignal reports whether a signal flag was given (--held included: it
// activates from zero).
func (c *DecideCmd) anySignal() bool {
	if c.Held != nil {
		return true
	}
	for _, f := range c.signalFlags() {
		if f.v != nil && f.name != "prefix-cache-hit" { // it qualifies the demand, not a signal
			return true
		}
	}
	return false
}

// signalFlag is one signal flag of decide: its value (nil: not given),
// name and unit ("" for kv and prefix-cache-hit: a fraction).
type signalFlag struct {
	v          *float64
	name, unit string
}

// signalFlags are decide's signal flags but --held, in checking order.
func (c *DecideCmd) signalFlags() []signalFlag {
	return []signalFlag{
		{c.Running, "running", "requests"},
		{c.Waiting, "waiting", "requests"},
		{c.Queue, "queue", "requests"},
		{(*float64)(c.KV), "kv", ""},
		{(*float64)(c.CPU), "cpu", "percent of the CPU request"},
		{(*float64)(c.TTFT), "ttft", "seconds"},
		{(*float64)(c.QueueTime), "queue-time", "seconds"},
		{(*float64)(c.ITL), "itl", "seconds"},
		{c.ArrivalRate, "arrival-rate", "requests per second"},
		{c.PromptTokensRate, "prompt-tokens-rate", "tokens per second"},
		{c.GenerationTokensRate, "generation-tokens-rate", "tokens per second"},
		{c.MeanPrompt, "mean-prompt", "tokens"},
		{c.MeanOutput, "mean-output", "tokens"},
		{(*float64)(c.PrefixCacheHit), "prefix-cache-hit", ""},
	}
}

// decide is Run, returning the decision printed.
func (c *DecideCmd) decide(e *env) (recommend.Decision, error) {
	var none recommend.Decision
	p, err := c.policy()
	if err != nil {
		return none, err
	}
	if c.Hold != nil && c.State == "" {
		// The hold acts on the dips a state records: one-shot, it never would.
		return none, invalidf("--hold %s needs --state FILE: the hold keeps replicas by the dips the state file records, and a decision without one has none; give --state, or leave --hold out", c.Hold)
	}
	now, err := c.now()
	if err != nil {
		return none, err
	}
	if c.State != "" && !c.saveLater {
		// One read-decide-write at a time per state file: a second decide
		// (an overlapping cron run) waits and reads this one's decision.
		unlock, err := statefile.Lock(e.ctx, c.State)
		if err != nil {
			return none, err
		}
		defer unlock()
		if c.Now == "" {
			now, _ = c.now() // the clock after the wait, not before the other's decision
		}
	}
	st, err := readState(c.State)
	if err != nil {
		return none, err
	}
	if !st.LastAt.IsZero() && now.Before(st.LastAt) {
		given := "--now " + c.Now
		if c.Now == "" {
			given = "the clock"
		}
		return none, invalidf("%s (%s) is before the last decision in --state %s (%s): time went backwards (the windows and rate limits count forward); give a --now at or after it, or delete the state file to start over",
			given, now.UTC().Format(time.RFC3339Nano), c.State, st.LastAt.UTC().Format(time.RFC3339Nano))
	}
	obs, err := c.observe(e, st)
	if err != nil {
		return none, err
	}
	keep := st
	if c.State == "" {
		keep = nil // no history: a one-shot answer, no initial recommendation (recommend.Decide)
	}
	d := recommend.Decide(p, obs, keep, now)
	if c.State != "" {
		c.save = func() error { return writeState(c.State, d, st, now) }
		if !c.saveLater {
			if err := c.save(); err != nil {
				return d, err
			}
		}
	}
	notes := append(c.pageNotes, c.rateNotes(p)...)
	if s := c.shown(); s != "" {
		notes = append(notes, s)
	}
	if s := c.unused(p); s != "" {
		notes = append(notes, s)
	}
	if c.Output == "json" {
		for _, n := range notes {
			fmt.Fprintf(e.stderr, "infscale: note: %s\n", n)
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return d, enc.Encode(d)
	}
	if err := printDecision(e.stdout, d); err != nil {
		return d, err
	}
	for _, n := range notes {
		if _, err := fmt.Fprintf(e.stdout, "  note: %s\n", n); err != nil {
			return d, err
		}
	}
	for _, s := range c.notVoting {
		if _, err := fmt.Fprintf(e.stdout, "  not voting: %s\n", s); err != nil {
			return d, err
		}
	}
	return d, nil
}

// pageNotes says why a page that votes leaves a load signal unknown: each
// family declared with a type infscale does not read it as (its message),
// each signal with a NaN or infinite sample (the replica's value unknown,
// and the total with it, as PromQL's sum), or that it carries no running,
// waiting or KV sample at all, or KV alone (a missing replica for the
// HPA's rule).
// Without them the decision said "running unknown" and named no page.
func pageNotes(p *scrape.Page) []string {
	var out []string
	for _, w := range p.WrongType {
		out = append(out, fmt.Sprintf("%s: %s", p.Source, w))
	}
	for _, sig := range p.NonFinite {
		out = append(out, fmt.Sprintf("%s: %s has a NaN or infinite sample: this replica's %s is unknown, and so is the total over the pages", p.Source, sig, sig))
	}
	if !p.Reporting() && len(p.Unknown) == 0 {
		out = append(out, fmt.Sprintf("%s: no running, waiting or KV-cache sample (%s's families absent, or declared without samples: before the first request?): counted as a missing replica", p.Source, p.Server))
	} else if !p.ReportsLoad() && len(p.Unknown) == 0 {
		out = append(out, fmt.Sprintf("%s: KV-cache usage but no running or waiting sample (%s's request families absent: renamed by another server version, or the page cut short?): its requests are unknown, counted as a missing replica", p.Source, p.Server))
	}
	return out
}

// shown is the note that shows the signals given that no metric scales on
// (--itl, --prompt-tokens-rate, --generation-tokens-rate), "" when none
// was given.
func (c *DecideCmd) shown() string {
	var parts []string
	for _, f := range []struct {
		v          *float64
		name, unit string
	}{{(*float64)(c.ITL), "ITL", " s"}, {c.PromptTokensRate, "prompt tokens", "/s"}, {c.GenerationTokensRate, "generation tokens", "/s"}} {
		if f.v != nil {
			parts = append(parts, f.name+" "+strconv.FormatFloat(*f.v, 'g', -1, 64)+f.unit)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "observed " + strings.Join(parts, ", ") + ": shown only, no metric scales on it"
}

// unused is the note naming the signal flags that only their own metric
// reads (--kv, --cpu, --ttft, --queue-time) given without it in --metric:
// the decision did not weigh them. "" when none.
func (c *DecideCmd) unused(p *recommend.Policy) string {
	var flags, metrics []string
	for _, f := range []struct {
		v    *float64
		flag string
		sig  recommend.Signal
	}{{(*float64)(c.KV), "kv", recommend.SignalKV}, {(*float64)(c.CPU), "cpu", recommend.SignalCPU},
		{(*float64)(c.TTFT), "ttft", recommend.SignalTTFT}, {(*float64)(c.QueueTime), "queue-time", recommend.SignalQueueWait}} {
		if f.v == nil || slices.ContainsFunc(p.Metrics, func(m recommend.Metric) bool { return m.Signal == f.sig }) {
			continue
		}
		flags = append(flags, "--"+f.flag+" "+strconv.FormatFloat(*f.v, 'g', -1, 64))
		metrics = append(metrics, f.sig.String())
	}
	if len(flags) == 0 {
		return ""
	}
	names := metrics[0]
	if n := len(metrics); n > 1 {
		names = strings.Join(metrics[:n-1], ", ") + " or " + metrics[n-1]
	}
	return strings.Join(flags, ", ") + ": not used, no --metric scales on " + names + " (add it to --metric, with its --target)"
}

// rateNotes says, for each metric of p that PAGEs cannot give and no flag
// gave, why it is unknown and what to pass: one scrape holds counters and
// histogram buckets since the server started, and a quantile, a CPU share or
// an arrival rate is a rate over two scrapes (serve takes them).
func (c *DecideCmd) rateNotes(p *recommend.Policy) []string {
	if len(c.Pages) == 0 {
		return nil
	}
	var notes []string
	for _, m := range p.Metrics {
		var what, pass string
		switch {
		case m.Signal == recommend.SignalTTFT && c.TTFT == nil:
			what, pass = "TTFT quantile", "--ttft SECONDS"
		case m.Signal == recommend.SignalQueueWait && c.QueueTime == nil:
			what, pass = "queue-time quantile", "--queue-time SECONDS"
		case m.Signal == recommend.SignalCPU && c.CPU == nil:
			what, pass = "CPU share", "--cpu PERCENT"
		case m.Signal == recommend.SignalDemand && (c.ArrivalRate == nil || c.MeanPrompt == nil || c.MeanOutput == nil):
			what, pass = "arrival rate or mean lengths", "--arrival-rate R --mean-prompt N --mean-output N"
		default:
			continue
		}
		notes = append(notes, fmt.Sprintf("%s: one scrape of a page has no %s (that is a rate over two scrapes): pass %s, or use serve, which takes rates over its scrapes", m.Signal, what, pass))
	}
	return notes
}

// policy builds the recommend.Policy from the flags and the --behavior file
// and validates it (recommend.Policy.Validate, which owns every rule); each
// problem is reported at once under the flag that set the field (exit 2).
func (c *PolicyFlags) policy() (*recommend.Policy, error) {
	var errs []error
	p := &recommend.Policy{Min: c.Min, Max: c.Max, Lookahead: c.Lookahead}
	if c.NoGuard {
		p.Guard = &recommend.Guard{Off: true}
	}
	var signals []recommend.Signal
	for _, name := range c.Metric {
		s, err := recommend.ParseSignal(strings.TrimSpace(name))
		if err != nil {
			errs = append(errs, fmt.Errorf("--metric: %w", err))
			continue
		}
		signals = append(signals, s)
	}
	switch {
	case len(c.Target) == 0:
		for _, s := range signals {
			if s != recommend.SignalQueue {
				errs = append(errs, fmt.Errorf("--target: needed for --metric %s (%s)", s, s.Unit()))
			}
			p.Metrics = append(p.Metrics, recommend.Metric{Signal: s, Target: 4})
		}
	case len(c.Target) != len(signals) && len(errs) == 0:
		errs = append(errs, fmt.Errorf("--target: %d target(s) for %d metric(s); give one per --metric, in order", len(c.Target), len(signals)))
	default:
		for i, s := range signals {
			if i >= len(c.Target) {
				continue
			}
			// As the config file's target: key reads it (one parser).
			q, err := config.ParseQuantity(strings.TrimSpace(c.Target[i]))
			var bare, unit error // a seconds target of 60 or more with no unit; a duration or percentage s does not take
			var v float64
			if err == nil {
				v, unit = q.For(s)
			}
			if err == nil && s.Seconds() {
				bare = quantity.CheckBareSeconds(q.Value, q.Duration)
			}
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("--target (for --metric %s): %v; want a number (%s)%s", s, err, s.Unit(), map[bool]string{true: " or a duration such as 2s"}[s.Seconds()]))
			case unit != nil:
				errs = append(errs, fmt.Errorf("--target (for --metric %s) %s: %v", s, c.Target[i], unit))
			case bare != nil:
				errs = append(errs, fmt.Errorf("--target (for --metric %s): %v", s, bare))
			default:
				p.Metrics = append(p.Metrics, recommend.Metric{Signal: s, Target: v})
			}
		}
	}

	if slices.Contains(signals, recommend.SignalDemand) {
		// demand weighs the arrivals against the replica the replica flags (--gpu, --model, ...) describe.
		r, err := c.ReplicaFlags.Replica()
		if err != nil {
			return nil, err
		}
		p.Capacity = recommend.CapacityFrom(r)
	} else if _, err := c.ReplicaFlags.Config(); err != nil {
		// Only demand uses the replica, but a value no replica has (an
		// unknown --gpu or --model) is refused, not ignored.
		return nil, err
	}
	if c.Behavior != "" {
		data, err := boundedfile.Read(c.Behavior, config.MaxBehaviorBytes, "a behavior file", "--behavior is an autoscaling/v2 behavior YAML file")
		if err != nil {
			return nil, fileError("behavior", c.Behavior, err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			// Read as no behavior at all: a file meant to say something.
			return nil, invalidf("--behavior %s: the file is empty: want an autoscaling/v2 HorizontalPodAutoscalerBehavior YAML (scaleUp:, scaleDown:), or leave the flag out for the HPA's defaults", c.Behavior)
		}
		b, err := config.DecodeBehavior(data, c.Behavior)
		if es := (config.Errors)(nil); errors.As(err, &es) && es.Total() > 1 {
			return nil, invalidf("--behavior: %d problems in %s:\n%w", es.Total(), c.Behavior, err)
		}
		if err != nil {
			return nil, invalidf("--behavior: %w", err)
		}
		p.Behavior = b
	}
	errs = append(errs, c.behaviorFlags(&p.Behavior)...)
	if c.Tolerance != nil {
		p.Tolerance = &recommend.Tolerance{Up: *c.Tolerance, Down: *c.Tolerance}
	}
	if c.ZeroCooldown != nil {
		p.Zero = &recommend.Zero{Cooldown: *c.ZeroCooldown}
	}
	if c.RampBound != nil {
		p.RampBound = *c.RampBound
	}
	if c.Hold != nil {
		p.Hold = &recommend.Hold{BreakEven: *c.Hold}
	}
	for i, s := range c.Schedule {
		w, err := recommend.ParseScheduleWindow(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("--schedule #%d %q: %w", i+1, s, err))
			continue
		}
		p.Schedule = append(p.Schedule, w)
	}
	if len(errs) > 0 {
		return nil, invalid(errors.Join(errs...))
	}
	if err := p.Validate(); err != nil {
		return nil, invalid(c.flagErrors(p, err))
	}
	return p, nil
}

// flagErrors rewords Policy.Validate's FieldErrors as the flags that set
// the fields ("--target (for --metric kv): 1.5 (150%) must be in (0, 1] ..."); a
// problem repeated under one flag (--tolerance sets both directions) is
// said once.
func (c *PolicyFlags) flagErrors(p *recommend.Policy, err error) error {
	var fes recommend.FieldErrors
	if !errors.As(err, &fes) {
		return err
	}
	var lines []string
	for _, fe := range fes {
		msg := fe.Msg
		if i, ok := strings.CutPrefix(fe.Also, "metrics["); ok {
			// The i-th signal of --metric's list, 1-based as a user counts.
			if n, err := strconv.Atoi(strings.TrimSuffix(i, "]")); err == nil {
				msg = fe.MsgAt(fmt.Sprintf("entry %d of --metric", n+1))
			}
		}
		line := c.flagOf(p, fe.Path) + ": " + msg
		if !slices.Contains(lines, line) {
			lines = append(lines, line)
		}
	}
	return errors.New(strings.Join(lines, "\n"))
}

// flagOf names the flag (or the --behavior file's field) that set the
// policy field at path.
func (c *PolicyFlags) flagOf(p *recommend.Policy, path string) string {
	head, rest, _ := strings.Cut(path, ".")
	name, idx := head, -1
	if i := strings.IndexByte(head, '['); i > 0 {
		name = head[:i]
		idx, _ = strconv.Atoi(strings.TrimSuffix(head[i+1:], "]"))
	}
	switch name {
	case "metrics":
		if rest == "target" && idx >= 0 && idx < len(p.Metrics) {
			return "--target (for --metric " + p.Metrics[idx].Signal.String() + ")"
		}
		return "--metric"
	case "min", "max", "lookahead", "tolerance":
		return "--" + name
	case "zero":
		return "--zero-cooldown"
	case "ramp_bound":
		return "--ramp-bound"
	case "hold":
		return "--hold"
	case "schedule":
		if idx >= 0 && idx < len(c.Schedule) {
			return fmt.Sprintf("--schedule #%d %q: %s", idx+1, c.Schedule[idx], rest)
		}
	case "behavior":
		return c.behaviorFlagOf(p, rest)
	}
	return path
}

// behaviorFlagOf names the flag that set behavior.<rest> (scaleUp.policies[1].value:
// --up-pods or --up-percent by the policy's type), else the --behavior file.
func (c *PolicyFlags) behaviorFlagOf(p *recommend.Policy, rest string) string {
	dir, field, _ := strings.Cut(rest, ".")
	flag, set := "up", [3]bool{c.UpWindow != nil, c.UpPods != nil || c.UpPercent != nil, c.UpSelect != ""}
	rules := p.Behavior.ScaleUp
	if dir == "scaleDown" {
		flag, set = "down", [3]bool{c.DownWindow != nil, c.DownPods != nil || c.DownPercent != nil, c.DownSelect != ""}
		rules = p.Behavior.ScaleDown
	}
	fromFile := "--behavior " + c.Behavior + " (behavior." + rest + ")"
	switch {
	case field == "stabilizationWindowSeconds" && set[0]:
		return "--" + flag + "-window (stabilizationWindowSeconds)"
	case field == "selectPolicy" && set[2]:
		return "--" + flag + "-select"
	case strings.HasPrefix(field, "policies") && set[1]:
		if strings.HasSuffix(field, ".periodSeconds") {
			return "--" + flag + "-period (periodSeconds)"
		}
		var i int
		if _, err := fmt.Sscanf(field, "policies[%d]", &i); err == nil && rules != nil && i < len(rules.Policies) && rules.Policies[i].Type == autoscalingv2.PercentScalingPolicy {
			return "--" + flag + "-percent"
		}
		return "--" + flag + "-pods"
	}
	return fromFile
}

// behaviorFlags applies the window and policy flags over b, refusing a field
// that the --behavior file already set. Only the flags' form is checked
// here (whole seconds); the ranges are Policy.Validate's.
func (c *PolicyFlags) behaviorFlags(b *autoscalingv2.HorizontalPodAutoscalerBehavior) []error {
	var errs []error
	both := func(flag, field string) {
		errs = append(errs, fmt.Errorf("%s: %s also sets behavior.%s; set it once (flag or file)", flag, c.Behavior, field))
	}
	// seconds is d in whole seconds; a whole number of seconds too large
	// for the field is out of its range [lo, hi] (Validate's text for it).
	seconds := func(flag, field string, lo, hi int64, d time.Duration) (int32, bool) {
		if d%time.Second != 0 {
			errs = append(errs, fmt.Errorf("--%s %v: want whole seconds, e.g. 300s", flag, d))
			return 0, false
		}
		if d < math.MinInt32*time.Second || d > math.MaxInt32*time.Second {
			errs = append(errs, fmt.Errorf("--%s %v (%s): must be %v to %v", flag, d, field, time.Duration(lo)*time.Second, time.Duration(hi)*time.Second))
			return 0, false
		}
		return int32(d / time.Second), true
	}
	dir := func(rules **autoscalingv2.HPAScalingRules, name string, window *time.Duration, pods, pct *int32, periodFlag *time.Duration, sel string, flag string) {
		if periodFlag != nil && pods == nil && pct == nil {
			errs = append(errs, fmt.Errorf("--%s-period %v: needs --%s-pods or --%s-percent (it is the period of those policies)", flag, *periodFlag, flag, flag))
		}
		if window == nil && pods == nil && pct == nil && sel == "" {
			return
		}
		period := 15 * time.Second
		if periodFlag != nil {
			period = *periodFlag
		}
		if *rules == nil {
			*rules = &autoscalingv2.HPAScalingRules{}
		}
		r := *rules
		if window != nil {
			if r.StabilizationWindowSeconds != nil {
				both("--"+flag+"-window", name+".stabilizationWindowSeconds")
			} else if w, ok := seconds(flag+"-window", "stabilizationWindowSeconds", 0, recommend.MaxStabilizationWindowSeconds, *window); ok {
				r.StabilizationWindowSeconds = &w
			}
		}
		if pods != nil || pct != nil {
			if r.Policies != nil {
				both("--"+flag+"-pods/--"+flag+"-percent", name+".policies")
			} else if ps, ok := seconds(flag+"-period", "periodSeconds", 1, recommend.MaxPeriodSeconds, period); ok {
				r.Policies = []autoscalingv2.HPAScalingPolicy{}
				if pods != nil {
					r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: *pods, PeriodSeconds: ps})
				}
				if pct != nil {
					r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: *pct, PeriodSeconds: ps})
				}
			}
		}
		if sel != "" {
			if r.SelectPolicy != nil {
				both("--"+flag+"-select", name+".selectPolicy")
			} else {
				s := autoscalingv2.ScalingPolicySelect(sel)
				r.SelectPolicy = &s
			}
		}
	}
	dir(&b.ScaleUp, "scaleUp", c.UpWindow, c.UpPods, (*int32)(c.UpPercent), c.UpPeriod, c.UpSelect, "up")
	dir(&b.ScaleDown, "scaleDown", c.DownWindow, c.DownPods, (*int32)(c.DownPercent), c.DownPeriod, c.DownSelect, "down")
	return errs
}

// now reads --now (timearg.Parse, bounds timearg.To9999: the state file
// stores RFC3339 times, whose years are 0000..9999, and a decision before
// the unix epoch is a mistake).
func (c *DecideCmd) now() (time.Time, error) {
	if c.Now == "" {
		return time.Now(), nil
	}
	t, err := timearg.Parse(c.Now, time.Time{}, false, timearg.To9999)
	if err != nil {
		return time.Time{}, invalidf("--now %s: %v", c.Now, err)
	}
	return t, nil
}

// observe builds the Observation from the pages and the signal flags.
func (c *DecideCmd) observe(e *env, st *recommend.State) (recommend.Observation, error) {
	obs := recommend.Unknown()
	if c.Held != nil {
		if err := checkSignal("held", *c.Held, "requests"); err != nil {
			return obs, err
		}
		obs.Held = *c.Held
	}
	if c.Timeout <= 0 {
		return obs, invalidf("--timeout %s: want a duration > 0, e.g. 10s", c.Timeout)
	}
	if c.Current != nil && len(c.Pages) > 0 && *c.Current < len(c.Pages) {
		return obs, invalidf("--current %d: %d PAGE(s) were given and each page is a running replica, so --current must be >= %d (leave it out to use the number of pages; replicas without a page are missing or --unready)", *c.Current, len(c.Pages), len(c.Pages))
	}
	if err := scrape.CheckDistinct(c.Pages); err != nil {
		return obs, invalid(err) // one replica's page twice would vote twice: nothing is read
	}
	if len(c.Pages) > 0 {
		// Concurrently (a fleet of URLs); stdin is read once.
		client := c.client
		if client == nil {
			client = &http.Client{Timeout: c.Timeout}
		}
		pages, errs := scrape.LoadAll(e.ctx, client, c.Pages, e.stdin, c.Server, 0)
		if err := e.ctx.Err(); err != nil {
			// A signal (or kube's --timeout) ended the reads: a page cut
			// short is not a replica that failed to answer, and a decision
			// on the others would be printed and saved as if it were.
			return obs, err
		}
		for i, p := range pages {
			// Each page votes as one replica; an EPP's is its whole pool's
			// (it was read as one replica, current 1). Read as another
			// server's (--server vllm), its error said to give --server epp
			// or auto, both refused here.
			if src, ok := scrape.EPPRefused(p, errs[i]); ok {
				pages[i], errs[i] = nil, decideEPPPageError(src)
			}
		}
		var bad, unread []error
		for _, err := range errs {
			switch {
			case err == nil:
			case scrape.IsRuntime(err):
				unread = append(unread, err)
			default:
				bad = append(bad, invalid(err))
			}
		}
		if len(bad) > 0 || len(unread) == len(c.Pages) {
			return obs, errors.Join(append(bad, unread...)...) // exit 2 when any is invalid input, else 1
		}
		if !c.workloadPods {
			if err := oneServer(pages); err != nil {
				return obs, err
			}
		}
		// A page that could not be read (unreachable, timeout, HTTP error)
		// or that looks like a stuck engine (pkg/scrape's stuck rule on one
		// look: waiting > 0, running 0, KV 0) does not vote, as in serve: it
		// is left out of the totals and of the reporting replicas but stays
		// in --current, so the HPA's missing-pods rule counts it at 0 on a
		// scale-up and at target on a scale-down (docs/serve.md, "Stuck
		// engines").
		ballots, _, t := scrape.Vote(pages, errs, func(_ int, p *scrape.Page) bool { return p.Suspect != "" })
		for i, b := range ballots {
			if b == scrape.Votes {
				c.pageNotes = append(c.pageNotes, pageNotes(pages[i])...)
			}
			switch b {
			case scrape.Unread:
				c.notVoting = append(c.notVoting, fmt.Sprintf("%v: not read, a missing replica", errs[i]))
			case scrape.Stuck:
				detail := fmt.Sprintf("waiting %g with nothing running and an empty KV cache", pages[i].Waiting)
				if e := pages[i].SuspectEngine; e != "" {
					detail = fmt.Sprintf("its engine %s waits with nothing running and an empty KV cache, beside engines running %g", e, pages[i].Running)
				}
				c.notVoting = append(c.notVoting, fmt.Sprintf("%s looks like a stuck engine (%s): not counted as load, a missing replica", pages[i].Source, detail))
			}
		}
		obs.Running, obs.Waiting, obs.KV, obs.Reporting, obs.Queued = t.Running, t.Waiting, t.KV, t.Reporting, t.Queued
		for _, s := range c.notVoting {
			fmt.Fprintf(e.stderr, "infscale: warning: %s\n", s)
		}
	}
	// Every signal flag is checked under its own name before --queue is
	// split into running 0 and waiting N.
	for _, f := range c.signalFlags() {
		if f.v == nil {
			continue
		}
		if err := checkSignal(f.name, *f.v, f.unit); err != nil {
			return obs, err
		}
	}
	if err := c.refuseAtZero(); err != nil {
		return obs, err
	}
	load, measured := c.droppedAtZero() // before --queue is split
	if c.Queue != nil {
		if c.Running != nil || c.Waiting != nil {
			return obs, invalidf("--queue: give either --queue or --running/--waiting")
		}
		zero := 0.0
		c.Running, c.Waiting = &zero, c.Queue
	}
	for _, f := range []struct {
		dst *float64
		v   *float64
	}{{&obs.Running, c.Running}, {&obs.Waiting, c.Waiting}, {&obs.KV, (*float64)(c.KV)}, {&obs.CPU, (*float64)(c.CPU)}, {&obs.TTFT, (*float64)(c.TTFT)},
		{&obs.QueueTime, (*float64)(c.QueueTime)}, {&obs.ITL, (*float64)(c.ITL)}, {&obs.ArrivalRate, c.ArrivalRate}, {&obs.PromptTokensRate, c.PromptTokensRate},
		{&obs.GenerationTokensRate, c.GenerationTokensRate}, {&obs.MeanPrompt, c.MeanPrompt}, {&obs.MeanOutput, c.MeanOutput},
		{&obs.PrefixHit, (*float64)(c.PrefixCacheHit)}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	if c.Waiting != nil {
		obs.Queued = 0 // the pages' count is not the flag's queue
	}
	switch {
	case c.Current != nil:
		if *c.Current < 0 || *c.Current > math.MaxInt32 {
			return obs, invalidf("--current %d: want replicas in 0..%d", *c.Current, math.MaxInt32)
		}
		obs.Current = *c.Current
	case len(c.Pages) > 0:
		obs.Current = len(c.Pages)
	case !st.LastAt.IsZero():
		obs.Current = st.LastDesired
		// At 0 from the state the signals servers report are dropped as
		// --current 0 refuses them; a warning, not a refusal: a job that
		// always passes them keeps running across a scale to zero.
		if obs.Current == 0 && len(load)+len(measured) > 0 {
			fmt.Fprintf(e.stderr, "infscale: warning: %s not used: the current count is 0, the previous desired in --state, and no server runs at zero replicas (docs/recommend.md \"At zero replicas\"); give --held N for the requests held in front of the servers, or --current N if replicas run\n",
				strings.Join(append(load, measured...), ", "))
		}
	default:
		obs.Current = 1
	}
	if c.Unready < 0 || c.Unready > obs.Current-len(c.Pages) {
		if len(c.Pages) > 0 {
			return obs, invalidf("--unready %d: want 0..%d (--current %d minus the %d PAGE(s), which are reporting replicas)", c.Unready, obs.Current-len(c.Pages), obs.Current, len(c.Pages))
		}
		if c.Current != nil {
			return obs, invalidf("--unready %d: want 0..--current (%d)", c.Unready, obs.Current)
		}
		from := "the default without --current, PAGEs or --state"
		if !st.LastAt.IsZero() {
			from = "the previous desired in --state"
		}
		return obs, invalidf("--unready %d: want 0..%d, the current count (%s); give --current N if more replicas run", c.Unready, obs.Current, from)
	}
	obs.Unready = c.Unready
	if c.needSignals && len(c.Pages) == 0 && !c.anySignal() {
		return obs, invalidf("nothing to decide on: give the replicas' /metrics pages (PAGE...: files, http(s) URLs, or - for standard input) or their signals as flags (--queue N, or --running N --waiting N, --kv F, --ttft S, ...: infscale decide --help)")
	}
	return obs, nil
}

// refuseAtZero refuses, at --current 0, the signal flags a decision at zero
// replicas would drop (recommend.Decide, docs/recommend.md "At zero
// replicas"): no server runs, so running and waiting are 0 and every
// additive total is the held count, and kv, cpu, ttft and the queue time are
// unknown. The demand flags (--arrival-rate, --mean-prompt, --mean-output,
// --prefix-cache-hit) still count, as do the shown ones.
func (c *DecideCmd) refuseAtZero() error {
	if c.Current == nil || *c.Current != 0 {
		return nil
	}
	load, measured := c.droppedAtZero()
	var lines []string
	if len(load) > 0 {
		lines = append(lines, strings.Join(load, ", ")+": at --current 0 no server runs, so none reports running or waiting requests (at zero replicas the queue, waiting and running totals are the held count, docs/recommend.md \"At zero replicas\"); give --held N instead, the requests the holder in front of the servers (activator, gateway) counts")
	}
	if len(measured) > 0 {
		lines = append(lines, strings.Join(measured, ", ")+": at --current 0 no server runs to measure it (kv, cpu, ttft and queue-time are unknown at zero replicas); leave it out, and give --held N for the requests held in front of the servers")
	}
	if len(lines) == 0 {
		return nil
	}
	return invalid(errors.New(strings.Join(lines, "\n")))
}

// droppedAtZero are the signal flags given that a decision at zero
// replicas drops, as "--name value": the load (running, waiting, queue) and
// the measured (kv, cpu, ttft, queue-time).
func (c *DecideCmd) droppedAtZero() (load, measured []string) {
	for _, f := range c.signalFlags() {
		if f.v == nil {
			continue
		}
		given := "--" + f.name + " " + strconv.FormatFloat(*f.v, 'g', -1, 64)
		switch f.name {
		case "running", "waiting", "queue":
			load = append(load, given)
		case "kv", "cpu", "ttft", "queue-time":
			measured = append(measured, given)
		}
	}
	return load, measured
}

// checkSignal refuses a signal flag's value that is not a finite number >= 0
// in unit ("" for kv: a fraction in [0, 1]), or a count of requests
// above promql.MaxInFlight (serve's and backtest's bound), naming the flag
// and what is allowed.
func checkSignal(flag string, v float64, unit string) error {
	switch {
	case unit == "" && !(v >= 0 && v <= 1):
		return invalidf("--%s %v (%s%%): want a fraction in [0, 1] or a percentage (0.75 or 75%% is three quarters)", flag, v, quantity.PercentText(v))
	case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
		return invalidf("--%s %v: want a finite number >= 0 (%s)", flag, v, unit)
	case unit == "requests" && v > promql.MaxInFlight:
		return invalidf("--%s %v: want requests 0 to %.0f (10,000 replicas x 2^20 sequences, the most serve reads from Prometheus; a page is refused above a billion in one series)", flag, v, promql.MaxInFlight)
	}
	if max, ok := signalMax[unit]; ok && v > max.v {
		return invalidf("--%s %v: want %s 0 to %s (%s)", flag, v, unit, max.text, max.why)
	}
	return nil
}

// signalMax bounds the signal flags of a unit by the other inputs'
// bounds of the same quantity: a request rate by load's --rate and
// accuracy's stage_rate_rps (1e6 requests per second), a length by load's
// --prompt-tokens and --max-tokens (2^20 tokens), a token rate by their
// product, a latency by accuracy's measured milliseconds (1e7 s). Past
// them a flag is no measurement (--arrival-rate 1e300 decided the replica
// cap).
var signalMax = map[string]struct {
	v         float64
	text, why string
}{
	"requests per second": {promql.MaxArrivalRate, "1e6", "load --rate's and accuracy's bound, and serve's"},
	"tokens":              {1 << 20, "1048576", "load --prompt-tokens's and --max-tokens's bound"},
	"tokens per second":   {promql.MaxTokenRate, "1.048576e12", "1e6 requests a second of 2^20 tokens, serve's bound"},
	"seconds":             {promql.MaxLatency, "1e7", "accuracy's bound of a measured latency, and serve's"},
}

// readState reads the --state file (pkg/statefile, the format serve's
// --state-dir uses too); a missing file is a fresh state.
func readState(path string) (*recommend.State, error) {
	st := new(recommend.State)
	if path == "" {
		return st, nil
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		what := "is not a regular file"
		if fi.IsDir() {
			what = "is a directory"
		}
		return nil, invalidf("--state %s: %s (want the path of a JSON file; it is created after the decision when missing)", path, what)
	}
	f, err := statefile.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		if fi, derr := os.Stat(filepath.Dir(path)); derr != nil || !fi.IsDir() {
			return nil, invalidf("--state %s: the directory %s does not exist (the file is created there after the decision)", path, filepath.Dir(path))
		}
	}
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		// Written after the decision, atomically (a temporary file beside it).
		if werr := outputDirWritable("state", path, filepath.Dir(path)); werr != nil {
			return nil, werr
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	var pe *fs.PathError
	switch {
	case errors.Is(err, syscall.ELOOP): // a path that names no file: the input's fault
		return nil, invalidf("--state %s: a loop of symbolic links: want the path of a JSON file, or of none yet (it is created after the decision)", path)
	case errors.Is(err, syscall.ENOTDIR):
		return nil, invalidf("--state %s: %s is a file, not a directory: want the path of a JSON file in a directory (it is created there after the decision when missing)", path, fileAbove(path))
	case errors.As(err, &pe): // unreadable (permissions, I/O): not the input's fault
		return nil, fmt.Errorf("--state: %w", err)
	}
	if err != nil {
		return nil, invalidf("--state: %w\n(want the JSON infscale decide writes, see docs/recommend.md; delete the file to start fresh)", err)
	}
	return &f.State, nil
}

// fileAbove is the nearest of path's parent directories that exists and is
// not a directory (path's own directory when none is found).
func fileAbove(path string) string {
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
		if p == filepath.Dir(p) {
			return filepath.Dir(path)
		}
	}
}

// writeState writes the state after a decision atomically and durably
// (statefile.WriteDurable: a run's state outlives a power loss).
func writeState(path string, d recommend.Decision, st *recommend.State, now time.Time) error {
	if err := statefile.WriteDurable(path, statefile.File{Desired: d.Desired, Current: d.Current, State: *st, SavedAt: now}); err != nil {
		return fmt.Errorf("--state: %w", err)
	}
	return nil
}

// reasonWidth is the longest reason's name (ScaleDownStabilized, 19), the
// width of printDecision's reason column, so every step's count lines up.
var reasonWidth = func() int {
	w := 0
	for r := recommend.ReasonMetric; r <= recommend.ReasonLast; r++ {
		w = max(w, len(r.String()))
	}
	return w
}()

// printDecision writes the decision and its steps as text.
func printDecision(w io.Writer, d recommend.Decision) error {
	var b strings.Builder
	fmt.Fprintf(&b, "desired %d (reason %s), current %d\n", d.Desired, d.Reason, d.Current)
	for i, s := range d.Steps {
		fmt.Fprintf(&b, "  %d. %-*s %3d  %s\n", i+1, reasonWidth, s.Reason, s.Value, s.Text)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// decideEPPPageError refuses an llm-d Endpoint Picker's page at source
// given to decide, which counts each page as one replica, and says what to
// give instead.
func decideEPPPageError(source string) error {
	arg := source
	if source == scrape.StdinSource {
		arg = "-" // parse reads stdin as "-", not a file named stdin
	}
	return fmt.Errorf("%s: an llm-d Endpoint Picker's page: it describes its whole InferencePool (ready endpoints, their mean load, the flow-control queue), and decide counts each page as one replica; give the pool's model-server pages, or read it with `infscale parse %s` and give its figures (--current, --running, --waiting), or decide the pool with serve (a target with server: epp)", source, arg)
}

// oneServer refuses pages of two servers (each detected under --server
// auto): a workload's replicas run one server, so such pages are two
// workloads', and their running and waiting summed are neither's load.
func oneServer(pages []*scrape.Page) error {
	first := -1
	for i, p := range pages {
		switch {
		case p == nil:
		case first < 0:
			first = i
		case p.Server != pages[first].Server:
			return invalid(&scrape.PageError{Source: p.Source, Err: fmt.Errorf(
				"the page is %s's, page %d (%s) %s's: a workload's replicas run one server, so these are two workloads' pages; give the pages of one workload's replicas (mid-rollout from one server to another, give their totals as --running and --waiting, or use infscale kube)",
				p.Server, first+1, pages[first].Source, pages[first].Server)})
		}
	}
	return nil
}
