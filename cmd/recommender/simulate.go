package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/infscale/infscale/internal/status"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/trace"
)

// SimulateCmd is `infscale simulate`: replay a trace through simulated GPU
// replicas under several policies and compare SLO misses and GPU cost.
type SimulateCmd struct {
	Trace        string   `name:"trace" default:"reference" help:"Trace: reference (built in), synthetic:poisson,rate=R,duration=D,prompt=P,output=O,seed=S, synthetic:onoff,rate=R,on=D,gap=D,alpha=A,burst=LO-HI,spread=D,duration=D (bursts with Pareto silent gaps), synthetic:step or synthetic:diurnal (docs/simulate.md), or a file (Azure LLM trace CSV, BurstGPT CSV, Mooncake .jsonl, CSV arrival_s,prompt_tokens,output_tokens; prefix azure:, burstgpt:, mooncake: or csv: to force)."`
	Policy       []string `name:"policy" short:"p" sep:"none" help:"A policy to compare, one per flag (repeatable; commas belong to the policy): queue:24,lookahead=90, cpu:60, kv:0.75, ttft:2s, fixed:N, knative:C, oracle, optimal (the hindsight optimum), hpa(POLICY), recommended, llmd-queue, llmd-saturation, llmd-tokens, llmd-slo (llm-d's KEDA paths). Default: docs/simulate.md's set."`
	ReplicaFlags `embed:""`
	SLOTTFT      time.Duration `name:"slo-ttft" default:"2s" help:"TTFT SLO: a request misses when its first token comes later, when rejected, or never."`
	Period       time.Duration `name:"period" default:"15s" help:"How often policies observe and decide."`
	Price        float64       `name:"gpu-hour-price" default:"4" help:"Price of one GPU-hour (GPU cost = replica-hours x GPUs per replica x price)."`
	Seed         uint64        `name:"seed" default:"1" help:"Seed of generated traces (reference, synthetic without seed=)."`
	Sort         bool          `name:"sort" help:"Accept a trace file whose rows are out of time order (sorted in memory)."`
	RateScale    float64       `name:"rate-scale" default:"1" help:"Compress time by this factor: 2 replays the trace at twice its rate; at most the trace's span / --period (the replay spans one period or more)."`
	Window       string        `name:"window" placeholder:"A:B" help:"Replay only [START:END) of the trace (after --rate-scale), e.g. 1h, 600:1800, 1d:2d."`
	Prefill      string        `name:"prefill" default:"chunked" enum:"chunked,stall" help:"Prefill scheduling: chunked (vLLM V1) or stall (vLLM V0: a prefill pauses decoding)."`
	MaxBatched   int           `name:"max-batched-tokens" default:"8192" help:"vLLM max_num_batched_tokens: the tokens one step (chunked) or one prefill (stall) carries."`
	Drain        time.Duration `name:"drain" default:"10m" help:"How long after the trace's end requests may still finish; those without a first token by then miss."`
	Initial      int           `name:"initial" help:"Replicas ready at second 0, 1 or more (default: the warm start, what the trace's first cold start needs, at least each policy's minimum and 1)."`
	Timeline     bool          `name:"timeline" help:"Also print each policy's timeline, one row per period, with the reason and metric that decided infscale's counts (text blocks; a timeline CSV with --output csv; in each object with json)."`
	Plot         string        `name:"plot" placeholder:"FILE" help:"Write a plot of load, replicas and TTFT over time to FILE.png or FILE.svg (with --pd each pool's replicas in a panel of its own)."`
	Output       string        `name:"output" short:"o" default:"text" enum:"text,json,csv" help:"Output format: text, json or csv."`
	Quiet        bool          `name:"quiet" short:"q" help:"No progress on stderr (otherwise one line redrawn on a terminal, a plain line every 10% or 10 s on a redirected stderr)."`
	PD           bool          `name:"pd" help:"Replay a prefill/decode (P/D) disaggregated pair of the replica (llm-d's prefill and decode roles): both pools' replica-min, misses, TTFT and ITL per policy (docs/llm-d.md). Policies: recommended (each role's target from its queue), recommended(prefill=TP,decode=TD[,prefill_min=N,decode_min=N]) (the targets fixed, each role's floor), optimal, the llm-d baselines (one ScaledObject per role), pd(PREFILL;DECODE) or any policy on both pools; default recommended, optimal and the four llm-d baselines."`
	KVLink       string        `name:"kv-link" default:"25GB" help:"With --pd: the link that moves a prompt's KV from prefill to decode, bytes per second: 25GB (one 200 Gb/s RDMA port per GPU), 1.25GB (10 GbE), or nvlink (the GPU catalog's GPU-to-GPU link: pools on one node)."`
}

// Run replays the trace under every policy (in parallel) and prints the comparison.
func (c *SimulateCmd) Run(e *env) error {
	specs := c.Policy
	if len(specs) == 0 {
		specs = replay.DefaultPolicies
	}
	if err := repeatedPolicy(specs); err != nil {
		return err
	}
	pols := make([]replay.Policy, 0, len(specs))
	for _, s := range specs {
		if c.PD {
			break // parsed as pair policies (runPD)
		}
		p, err := replay.ParsePolicy(policySpec(s))
		if err != nil {
			return invalidf("--policy: %v", err)
		}
		pols = append(pols, p)
	}
	if err := c.seedUsed(e.given); err != nil {
		return err
	}
	src, requests, err := c.source(e.ctx, e.stderr)
	if err == nil {
		err = checkPeriodSpan(e.given, c.Period, src.Duration)
	}
	if period := c.Period.Seconds(); err == nil && c.Window != "" && c.RateScale == 1 && period > 0 && !(src.Duration >= period) {
		// A window chosen shorter than a period is replayed before any
		// policy decides: every row is the warm start, alike (as
		// --rate-scale's compression into less than a period, refused in
		// source; tune says its own of its parts).
		err = invalidf("--window %s: the replay spans %.3g s, less than one --period (%s), so no policy would decide and every row is its warm start; want a window of at least one period", c.Window, src.Duration, c.Period)
	}
	if err != nil {
		return err
	}
	plotFormat, err := plotFileFormat(c.Plot)
	if err != nil {
		return err
	}
	model, err := c.Replica()
	if err != nil {
		return err
	}
	if c.Period < time.Duration(replay.MinPeriod*float64(time.Second)) {
		return invalidf("--period %v: want at least %gs (policies observe what a scrape shows)", c.Period, replay.MinPeriod)
	}
	if c.Plot != "" && src.Duration < 2*c.Period.Seconds() {
		// One timeline row a policy: every panel was drawn empty.
		return invalidf("--plot: the replay spans %.4g s, less than two periods of %s: a plot draws a line through two or more (a timeline row each); give a longer trace or --window, or a shorter --period", src.Duration, c.Period)
	}
	if c.SLOTTFT <= 0 {
		return invalidf("--slo-ttft %v: want a duration > 0", c.SLOTTFT)
	}
	if err := sloTTFTAtMost(c.SLOTTFT); err != nil {
		return err
	}
	if c.Drain < 0 || c.Drain.Seconds() > replay.MaxPeriods*c.Period.Seconds() {
		return invalidf("--drain %v: want 0 to %d periods (%v)", c.Drain, replay.MaxPeriods, time.Duration(replay.MaxPeriods)*c.Period)
	}
	if c.MaxBatched < 1 {
		return invalidf("--max-batched-tokens %d: want >= 1", c.MaxBatched)
	}
	if c.Initial > replay.MaxReplicas {
		return invalidf("--initial %d: want at most %d replicas (the most a replay runs)", c.Initial, replay.MaxReplicas)
	}
	if e.given["initial"] && c.Initial < 1 {
		// The replay reads 0 as no --initial: a given 0 would start warm.
		return invalidf("--initial %d: want 1 to %d replicas ready at second 0; leave the flag out for the warm start", c.Initial, replay.MaxReplicas)
	}
	mode, _ := replay.ParsePrefillMode(c.Prefill)
	cfg := replay.Config{
		Model: model, SLOTTFT: c.SLOTTFT.Seconds(), Period: c.Period.Seconds(),
		Prefill: mode, MaxBatchedTokens: c.MaxBatched, Drain: c.Drain.Seconds(),
		Initial: c.Initial, Timeline: c.Timeline || c.Plot != "",
	}
	if c.Drain == 0 {
		cfg.Drain = 1e-9 // --drain 0: stop at the trace's end
	}
	if err := cfg.Defaults().Validate(); err != nil {
		return invalidf("%v", err)
	}
	if !(c.Price >= 0 && c.Price <= maxGPUHourPrice) {
		return invalidf("--gpu-hour-price %g: want a price from 0 to %g", c.Price, float64(maxGPUHourPrice))
	}
	if err := needsFlag(e.given, "kv-link", c.PD, "--pd"); err != nil {
		return err
	}
	if c.PD {
		if e.given["gpu-hour-price"] {
			return invalidf("--gpu-hour-price with --pd: not supported yet (the P/D table reports replica-min per pool, no GPU cost); drop it")
		}
		return c.runPD(e, src, requests, cfg, model)
	}
	prog := status.NewProgress(e.stderr, progressLabel(len(pols)), len(pols), c.Quiet)
	results, err := c.runAll(e.ctx, src, requests, pols, cfg, e.stderr, prog)
	prog.Done()
	if err != nil {
		var pe *fs.PathError
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &pe) {
			return err // cancelled, or the file failed to read: a runtime failure
		}
		return invalid(err)
	}
	warnUnservable(e.stderr, results, cfg.SLOTTFT)
	gpus := float64(model.Config().TP)
	if c.Plot != "" {
		if err := writeRendered(c.Plot, func(w io.Writer) error { return replay.Plot(w, plotFormat, results, cfg.SLOTTFT) }); err != nil {
			return fmt.Errorf("--plot %s: %w", c.Plot, err)
		}
		fmt.Fprintf(e.stderr, "plot: wrote %s\n", c.Plot)
	}
	rows := make([]replay.Row, len(results))
	for i, r := range results {
		rows[i] = replay.NewRow(r, gpus, c.Price, c.Timeline)
	}
	switch c.Output {
	case "json":
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	case "csv":
		if c.Timeline {
			return replay.WriteTimelineCSV(e.stdout, results)
		}
		return replay.WriteCSV(e.stdout, rows)
	}
	return writeSimText(e.stdout, src.Name, cfg, rows, results, c.Timeline, gpus, c.Price, c.calibratedName())
}

// maxGPUHourPrice bounds --gpu-hour-price: costs stay finite (1e308 made
// the JSON fail on +Inf) and no GPU-hour costs a million.
const maxGPUHourPrice = 1e6

// plotFileFormat is --plot's format, png or svg, from its extension ("" when
// path is ""), once the directory is checked (plotDirOK).
func plotFileFormat(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	f := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if f != "png" && f != "svg" {
		return "", invalidf("--plot %q: want a file name ending in .png or .svg", path)
	}
	return f, plotDirOK(path)
}

// plotDirOK checks, before a long run, that the plot's directory exists
// and that path is not itself a directory (invalid input otherwise), and
// that a file can be created there (outputDirWritable: exit 1 otherwise).
func plotDirOK(path string) error {
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return invalidf("--plot %q: %s", path, noDir(dir))
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return invalidf("--plot %q: is a directory; want the name of the file to write", path)
	}
	return outputDirWritable("plot", path, dir)
}

// source opens the trace with its transforms; a file is read once here to
// report a bad row before the parallel passes start (ending once ctx is
// done), and the rows it skips (BurstGPT's with Request tokens 0) are
// noted on w. requests is the replay's requests (within --window) that
// read counted, 0 when there was none (a generated trace, whole).
func (c *SimulateCmd) source(ctx context.Context, w io.Writer) (trace.Source, int64, error) {
	opts := trace.Options{Seed: c.Seed, Sort: c.Sort}
	var requests int64
	if !(c.RateScale > 0) || math.IsInf(c.RateScale, 0) {
		return trace.Source{}, 0, invalidf("--rate-scale %g: want a factor > 0", c.RateScale)
	}
	opts.RateScale = c.RateScale
	var a, b float64 // --window's [a, b) (b 0: to the end), applied below
	if c.Window != "" {
		var err error
		if a, b, err = trace.ParseWindow(c.Window); err != nil {
			return trace.Source{}, 0, invalidf("--window: %v", err)
		}
	}
	src, err := trace.ParseContext(ctx, c.Trace, opts)
	if err != nil {
		return trace.Source{}, 0, invalidf("--trace: %v", err)
	}
	file := c.Trace != "reference" && !strings.HasPrefix(c.Trace, "synthetic:") // a file, even one named reference*.csv
	if !file && c.Window == "" {
		// A spec that draws no request (synthetic:step,low=0,high=0) is
		// refused once here, as an empty file is, not once per policy.
		if err := firstRequest(src); err != nil {
			return trace.Source{}, 0, invalidf("--trace: %v", err)
		}
	}
	if file || c.Window != "" {
		// One pass: a file's rows are checked before the parallel passes,
		// and a window is checked against the trace before any replay.
		first, last, in, skipped, err := scanTrace(ctx, src, a, b, 0)
		if err != nil {
			return trace.Source{}, 0, invalidf("--trace: %v", err)
		}
		requests = in
		within := ""
		if c.Window != "" {
			within = "--window"
		}
		noteSkipped(w, src, skipped, within, "docs/simulate.md#traces")
		if src.Duration == 0 {
			src.Duration = last
		}
		if err := c.checkFileSpan(src, first, last); err != nil {
			return trace.Source{}, 0, err
		}
		if c.Window != "" {
			if err := c.checkWindow(src, a, b, in); err != nil {
				return trace.Source{}, 0, err
			}
			if b > src.Duration {
				// The trace records nothing past its end: a window reaching
				// beyond stops there, not with an idle tail replayed (and
				// held out by tune) as if no request had come.
				b = 0
			}
			src = trace.WindowContext(ctx, src, a, b)
		}
	}
	// A trace compressed into less than one decision period is replayed
	// before any policy decides: its rows would be one cohort at t = 0 and
	// its timeline empty.
	if period := c.Period.Seconds(); c.RateScale != 1 && period > 0 && !(src.Duration >= period) {
		if c.Window != "" {
			return trace.Source{}, 0, invalidf("--rate-scale %g with --window %s: the replay spans %.3g s, less than one --period (%s), so no policy would decide; want a span of at least one period", c.RateScale, c.Window, src.Duration, c.Period)
		}
		return trace.Source{}, 0, invalidf("--rate-scale %g: the trace's %.4g s compress to %.3g s, less than one --period (%s), so no policy would decide; want a factor > 0 and at most %.4g (the trace's span / the period)",
			c.RateScale, src.Duration*c.RateScale, src.Duration, c.Period, src.Duration*c.RateScale/period)
	}
	// Stretched (a factor below 1) past what a replay covers: one error
	// here, not one per policy.
	if period := c.Period.Seconds(); period >= replay.MinPeriod && !(src.Duration/period <= replay.MaxPeriods) { // a shorter --period is refused later
		what := fmt.Sprintf("--rate-scale %g", c.RateScale)
		if c.RateScale == 1 {
			what = "--trace"
		}
		return trace.Source{}, 0, invalidf("%s: the replay spans %.3g s, %.3g periods of %s; a replay covers at most %d periods (about %.0f days at this period): raise the factor, cut the trace with --window, or lengthen --period",
			what, src.Duration, src.Duration/period, c.Period, replay.MaxPeriods, float64(replay.MaxPeriods)*period/86400)
	}
	return src, requests, nil
}

// seedUsed refuses a given --seed that no trace would draw from: a trace
// file's rows, or a synthetic spec with its own seed=.
func (c *SimulateCmd) seedUsed(given map[string]bool) error {
	if !given["seed"] {
		return nil
	}
	if c.Trace != "reference" && !strings.HasPrefix(c.Trace, "synthetic:") {
		return invalidf("--seed %d: seeds generated traces (reference, synthetic:...); the trace file %s replays its own rows, so it would be ignored; drop it", c.Seed, c.Trace)
	}
	for _, f := range strings.Split(c.Trace, ",")[1:] {
		if v, ok := strings.CutPrefix(strings.TrimSpace(f), "seed="); ok {
			return invalidf("--seed %d: the spec's seed=%s wins; give one of them", c.Seed, v)
		}
	}
	return nil
}

// checkPeriodSpan refuses a --period, when given, longer than the replay
// (span, seconds): no policy would decide after its start. The default
// period stands on a short trace (its requests are one cohort at t = 0).
func checkPeriodSpan(given map[string]bool, period time.Duration, span float64) error {
	if given["period"] && !(period.Seconds() <= span) {
		return invalidf("--period %v: longer than the replay's %.4g s, so no policy would decide; want a period of at most the span (default 15s)", period, span)
	}
	return nil
}

// checkFileSpan refuses a trace file whose arrivals (first to last, in
// seconds, after --rate-scale) span more than a replay covers at --period,
// naming the file and the arrivals: a first arrival that is most of the
// span is a unix time or milliseconds where seconds since the trace's
// start are wanted (a generic CSV keeps its first arrival), not a trace to
// cut with --window. --rate-scale's own stretch is checked after.
func (c *SimulateCmd) checkFileSpan(src trace.Source, first, last float64) error {
	period := c.Period.Seconds()
	if c.RateScale != 1 || c.Window != "" || period < replay.MinPeriod || last/period <= replay.MaxPeriods { // a shorter --period is refused later; a window's span is checked after
		return nil
	}
	do := "cut the trace with --window, or lengthen --period (a stray row at the end?)"
	if first >= last/2 {
		do = "arrival_s (a BurstGPT file's Timestamp) counts seconds from the trace's start, and the first row's is kept: a unix time or milliseconds? Subtract the first row's arrival and write seconds"
	}
	// %.10g: unix seconds whole (1733230000 to 1733230005, not 1.73323e+09
	// twice), a stray far row still short (1e+300).
	return invalidf("--trace %s: requests arrive from second %.10g to %.10g, %.3g periods of %s; a replay covers at most %d periods (about %.0f days at this period): %s",
		src.Name, first, last, last/period, c.Period, replay.MaxPeriods, float64(replay.MaxPeriods)*period/86400, do)
}

// noteSkipped notes on w the rows src's reader skipped (BurstGPT's with
// Request tokens 0), if any, with what follows for them (tail). within
// names the part of the trace the command reads ("--window"; "": the
// whole file): the rows within it are noted beside the whole file's.
func noteSkipped(w io.Writer, src trace.Source, s skips, within string, tail string) {
	switch {
	case s.all == 0:
	case within == "":
		fmt.Fprintf(w, "note: %s: skipped %s with Request tokens 0 (failed requests, logged without lengths; %s)\n", src.Name, rows(s.all), tail)
	case !s.placed:
		fmt.Fprintf(w, "note: %s: skipped %s with Request tokens 0 in the whole file, the share within %s unknown under --sort (failed requests, logged without lengths; %s)\n", src.Name, rows(s.all), within, tail)
	case s.in > 0:
		fmt.Fprintf(w, "note: %s: skipped %s with Request tokens 0 within %s to the nearest request (each counted with the request after it), %d in the whole file (failed requests, logged without lengths; %s)\n", src.Name, rows(s.in), within, s.all, tail)
	}
}

// rows is "1 row" or "N rows".
func rows(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return strconv.FormatInt(n, 10) + " rows"
}

// scanTrace reads src once: the arrivals of its first and last requests
// (seconds), how many arrive in [a, b) (b <= 0: to the end), at most
// limit of them (0: all; the window ends at the limit-th, as load's
// --requests ends a run) and the rows the reader skipped
// (trace.SkippedRows): all of them, and those within the window to the
// nearest request (a skipped row lies between the requests served before
// and after it; it counts in the window when the one after does, or,
// after the last request, when the window reaches the end). A bad row is
// its error; a trace without a request is trace.ErrEmpty; ctx's error
// once it is done (trace.WithContext: a 4 GiB file is no longer read to
// its end after an interrupt).
func scanTrace(ctx context.Context, src trace.Source, a, b float64, limit int64) (first, last float64, in int64, skipped skips, err error) {
	r, err := src.Open()
	if err != nil {
		return 0, 0, 0, skips{}, err
	}
	defer r.Close()
	r = trace.WithContext(ctx, r)
	inside := func(t float64) bool { return t >= a && (b <= 0 || t < b) && (limit <= 0 || in < limit) }
	n := 0
	seen := trace.SkippedRows(r) // a sorted trace's skips are all known at once: not placed
	skipped.placed = seen == 0
	for {
		q, err := r.Next()
		now := trace.SkippedRows(r)
		if err == io.EOF {
			if n > 0 && (b <= 0 || last < b) && (limit <= 0 || in < limit) {
				skipped.in += now - seen
			}
			break
		}
		if err != nil {
			return 0, 0, 0, skips{}, err
		}
		if inside(q.Arrival) {
			skipped.in += now - seen
			in++
		}
		seen = now
		if n == 0 {
			first = q.Arrival
		}
		n++
		last = q.Arrival
	}
	skipped.all = trace.SkippedRows(r)
	if n == 0 && skipped.all > 0 {
		return 0, 0, 0, skips{}, fmt.Errorf("%s: %w: all %d rows have Request tokens 0 (failed requests, skipped)", src.Name, trace.ErrEmpty, skipped.all)
	}
	if n == 0 {
		return 0, 0, 0, skips{}, fmt.Errorf("%s: %w", src.Name, trace.ErrEmpty)
	}
	return first, last, in, skipped, nil
}

// firstRequest reads src's first request only: trace.ErrEmpty (named)
// when it has none.
func firstRequest(src trace.Source) error {
	r, err := src.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := r.Next(); err == io.EOF {
		return fmt.Errorf("%s: %w", src.Name, trace.ErrEmpty)
	} else if err != nil {
		return err
	}
	return nil
}

// skips counts the rows a trace's reader skipped (scanTrace): all of
// them, and those within the scanned window when placed (false: a sorted
// trace, whose skips are known only as a total).
type skips struct {
	all, in int64
	placed  bool
}

// checkWindow refuses --window [a, b) when it starts at or past the end of
// src (its span, after --rate-scale) or holds no request (in), naming the
// span: every policy's replay would be empty.
func (c *SimulateCmd) checkWindow(src trace.Source, a, b float64, in int64) error {
	scaled := ""
	if c.RateScale != 1 {
		scaled = fmt.Sprintf(" at --rate-scale %g", c.RateScale)
	}
	if src.Duration <= 0 {
		// "e.g. --window 0:0" would be refused itself (an end after the start).
		return invalidf("--window %s: every request of %s arrives at second 0 (a span of 0 s%s): no window can cut it; leave --window out (the whole trace is replayed, its requests one cohort at second 0)",
			c.Window, src.Name, scaled)
	}
	if a >= src.Duration {
		return invalidf("--window %s: starts at %s, at or past the end of the trace: %s spans %s%s; want a START below that, e.g. --window 0:%s",
			c.Window, secondsText(a), src.Name, secondsText(src.Duration), scaled, strconv.FormatFloat(math.Ceil(src.Duration), 'f', 0, 64))
	}
	if in == 0 {
		end := "the end"
		if b > 0 {
			end = secondsText(b)
		}
		return invalidf("--window %s: no request arrives between %s and %s (%s spans %s%s); choose a window with traffic",
			c.Window, secondsText(a), end, src.Name, secondsText(src.Duration), scaled)
	}
	return nil
}

// secondsText writes s seconds as a duration such as 86400 s (24h).
func secondsText(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	if d < time.Minute {
		return strconv.FormatFloat(s, 'g', 4, 64) + " s"
	}
	return fmt.Sprintf("%s s (%s)", strconv.FormatFloat(math.Round(s), 'f', 0, 64), shortDuration(d))
}

// policySpecSepRE is a separator of a policy string with the spaces
// around it.
var policySpecSepRE = regexp.MustCompile(`\s*([,=:()])\s*`)

// policySpec is a --policy string as replay.ParsePolicy reads it: the
// spaces around its separators (, = : ( and )) and at its ends dropped, so
// that "queue:24, lookahead=90" is queue:24,lookahead=90 (no option name
// or value holds a space, so nothing else could be meant); a space inside
// a name or a value is left for the parser to refuse.
func policySpec(s string) string {
	return strings.TrimSpace(policySpecSepRE.ReplaceAllString(s, "$1"))
}

// repeatedPolicy refuses a --policy given twice (as policySpec reads it):
// its replay would be run twice and its row printed twice, and the JSON
// and CSV rows, named by the policy, would collide.
func repeatedPolicy(specs []string) error {
	seen := map[string]int{}
	for i, s := range specs {
		k := policySpec(s)
		if j, ok := seen[k]; ok {
			return invalidf("--policy #%d %q repeats #%d: give each policy once", i+1, s, j+1)
		}
		seen[k] = i
	}
	return nil
}

// progressLabel is simulate's progress label: "simulating 1 policy",
// "simulating 3 policies".
func progressLabel(n int) string {
	if n == 1 {
		return "simulating 1 policy"
	}
	return fmt.Sprintf("simulating %d policies", n)
}

// runAll replays src under each of pols (runEach: notes on w), the errors
// joined, each once; requests is src's count when source read it (0:
// counted when the budget needs it).
func (c *SimulateCmd) runAll(ctx context.Context, src trace.Source, requests int64, pols []replay.Policy, cfg replay.Config, w io.Writer, prog *status.Progress) ([]replay.Result, error) {
	res, errs := runEach(pols, cfg, 1, slices.ContainsFunc(pols, replay.Policy.Searches), countOr(ctx, src, requests), w, prog, func(p replay.Policy, cfg replay.Config) (replay.Result, error) {
		return replay.Run(ctx, src, p, cfg)
	})
	// Every policy reads the same trace: one bad row is one error, not one
	// per policy.
	var uniq []error
	seen := map[string]bool{}
	for _, err := range errs {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			uniq = append(uniq, err)
		}
	}
	return res, errors.Join(uniq...)
}

// runEach runs the policies side by side, as many at once and each with
// the backlog bound planReplays gives for them (each replay of pools
// pools; search when one is optimal; its note on w), each reporting its
// share of the trace to prog as part i; it returns each policy's result
// and error by index. count counts the trace's requests (traceCount) when
// the budget is tight.
func runEach[P, R any](pols []P, cfg replay.Config, pools int, search bool, count func() int64, w io.Writer, prog *status.Progress, run func(P, replay.Config) (R, error)) ([]R, []error) {
	s := planReplays(w, len(pols), pools, search, count)
	cfg.MaxBacklog, cfg.SearchAtOnce = s.Backlog, s.SearchAtOnce
	res := make([]R, len(pols))
	errs := make([]error, len(pols))
	slots := make(chan struct{}, max(s.AtOnce, 1))
	var wg sync.WaitGroup
	for i, p := range pols {
		cfg := cfg
		cfg.Progress = func(now, end float64) {
			if end > 0 && !math.IsInf(end, 0) {
				prog.Part(i, now/end)
			}
		}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			if res[i], errs[i] = run(p, cfg); errs[i] == nil {
				prog.Part(i, 1)
			}
		})
	}
	wg.Wait()
	return res, errs
}

func fmtCost(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 2, 64)
}

func fmtSecs(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 2, 64) + "s"
}

// writeSimText prints the comparison table (docs/design.md's columns and more).
// simLegend is the lines under simulate's table: the units of its columns
// (gpus GPUs per replica, price per GPU-hour) and the reference rows among
// rows (replay.RowLegend, with the replica's cold start and the SLO, in
// seconds, and the replica's name when calibrated).
func simLegend(rows []replay.Row, gpus, price, cold, slo float64, replica string) []string {
	out := []string{
		fmt.Sprintf("replica-min: replicas x minutes (starting, ready and draining). GPU cost: replica-min / 60 x %g GPU(s) per replica x %g per GPU-hour (--gpu-hour-price, in your currency). tokens/GPU-h: output tokens per GPU-hour. reversals: changes of direction within 300 s of the previous one.", gpus, price),
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Policy)
	}
	out = append(out, replay.RowLegend(names, cold, slo, replica)...)
	return append(out, "More on the words and units: docs/README.md#reading-the-output")
}

func writeSimText(w io.Writer, traceName string, cfg replay.Config, rows []replay.Row, results []replay.Result, timeline bool, gpus, price float64, replicaName string) error {
	b := &strings.Builder{}
	if len(rows) > 0 {
		fmt.Fprintf(b, "trace %s: %s over %s s; SLO TTFT %gs, period %gs\n\n", traceName, requestsText(rows[0].Requests), spanText(rows[0].Duration), cfg.SLOTTFT, cfg.Period)
	}
	policies := make([]string, len(rows))
	for i, r := range rows {
		policies[i] = r.Policy
	}
	head := []string{"requests", "SLO miss", "miss %", "TTFT p50", "TTFT p95", "replica-min", "GPU cost", "peak", "scale events", "reversals", "tokens/GPU-h"}
	width := writeHead(b, policies, head...)
	for _, r := range rows {
		tok := "-"
		if r.TokensPerGPUHour != nil {
			tok = strconv.FormatFloat(*r.TokensPerGPUHour, 'f', 0, 64)
		}
		cells := []string{
			strconv.FormatInt(r.Requests, 10), strconv.FormatInt(r.Misses, 10), replay.FormatPct(r.MissPct),
			fmtSecs(r.TTFTP50), fmtSecs(r.TTFTP95), strconv.FormatFloat(r.ReplicaMinutes, 'f', 1, 64),
			fmtCost(r.GPUCost), strconv.Itoa(r.Peak), strconv.Itoa(r.ScaleEvents), strconv.Itoa(r.Reversals), tok,
		}
		fmt.Fprintf(b, "%-*s", width, r.Policy)
		for i, c := range cells {
			fmt.Fprintf(b, "  %*s", len(head[i]), c)
		}
		b.WriteString("\n")
	}
	for _, w := range unservable(results, cfg.SLOTTFT) {
		fmt.Fprintf(b, "\nnote: %s\n", w)
	}
	b.WriteString("\n")
	for _, l := range simLegend(rows, gpus, price, cfg.Model.ColdStart(), cfg.SLOTTFT, replicaName) {
		b.WriteString(l + "\n")
	}
	if timeline {
		for _, r := range results {
			explained := slices.ContainsFunc(r.Timeline, func(s replay.Sample) bool { return s.Reason != "" })
			fmt.Fprintf(b, "\n%s\n%8s %8s %7s %5s %8s %8s %8s %8s %6s %9s %6s", r.Policy, "t", "arr/s", "desired", "ready", "starting", "draining", "running", "waiting", "held", "TTFT p95", "misses")
			if explained {
				b.WriteString("  reason (metric)")
			}
			b.WriteString("\n")
			for _, s := range r.Timeline {
				fmt.Fprintf(b, "%8.0f %8.2f %7d %5d %8d %8d %8s %8s %6s %9s %6d", s.T, s.ArrivalRate, s.Desired, s.Ready, s.Starting, s.Draining,
					num0(s.Running), num0(s.Waiting), num0(s.Held), fmtSecs(replay.FiniteOrNil(s.TTFTP95)), s.Misses)
				if explained {
					b.WriteString("  " + timelineReason(s.Reason, s.Metric))
				}
				b.WriteString("\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// timelineReason is a timeline row's reason column: the reason with the
// deciding signal (metric) in parentheses, "-" when the policy said none.
func timelineReason(reason, metric string) string {
	r := reason
	if r == "" {
		r = "-"
	}
	if metric != "" {
		r += " (" + metric + ")"
	}
	return r
}

func num0(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}

// unservable are the replay's warnings about requests no policy or its
// fleet could serve: those longer than a replica's KV cache
// (replay.Result.RejectedWarning; every policy replays the same trace, so
// the first one says it), an SLO that no request meets even alone on an
// idle replica (replay.SLOWarning), then each policy's shed at the backlog
// bound (ShedWarning).
func unservable(results []replay.Result, slo float64) []string {
	var out []string
	for _, r := range results {
		if w := r.RejectedWarning(); w != "" {
			out = append(out, w)
			break
		}
	}
	if len(results) > 0 {
		if w := results[0].SLOWarning(slo); w != "" {
			out = append(out, w)
		}
	}
	for _, r := range results {
		if w := r.ShedWarning(); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// warnUnservable writes unservable's warnings to w, a line each.
func warnUnservable(w io.Writer, results []replay.Result, slo float64) {
	for _, msg := range unservable(results, slo) {
		fmt.Fprintf(w, "warning: %s\n", msg)
	}
}

// warnShed writes to w each result's ShedWarning, a line each as
// simulate writes it: backtest and profile replay their policies as
// simulate does, and a policy's requests shed at the backlog bound are
// unserved misses in their figures too.
func warnShed(w io.Writer, results ...replay.Result) {
	for _, r := range results {
		if msg := r.ShedWarning(); msg != "" {
			fmt.Fprintf(w, "warning: %s\n", msg)
		}
	}
}

// writeHead writes a table's header line, "policy" padded to the longest
// of policies and then each of head, and returns the policy column's width.
func writeHead(b *strings.Builder, policies []string, head ...string) int {
	width := len("policy")
	for _, p := range policies {
		width = max(width, len(p))
	}
	fmt.Fprintf(b, "%-*s", width, "policy")
	for _, h := range head {
		fmt.Fprintf(b, "  %s", h)
	}
	b.WriteString("\n")
	return width
}

// spanText is a trace's span in seconds as a header says it: to the
// millisecond, without trailing zeros ("1500", "1.5", "0.25"). %.0f read
// a 1.5 s trace as "2 s".
func spanText(seconds float64) string {
	return strconv.FormatFloat(math.Round(seconds*1000)/1000, 'f', -1, 64)
}

// requestsText is n requests as a header says it: "1 request", "2 requests".
func requestsText(n int64) string {
	if n == 1 {
		return "1 request"
	}
	return strconv.FormatInt(n, 10) + " requests"
}
