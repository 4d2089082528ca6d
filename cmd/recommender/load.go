package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/infscale/infscale/internal/atomicfile"
	"github.com/infscale/infscale/internal/quantity"
	"github.com/infscale/infscale/internal/status"
	"github.com/infscale/infscale/pkg/load"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
	"golang.org/x/net/http/httpguts"
)

// LoadCmd is `infscale load URL`: load an OpenAI-compatible endpoint and
// measure TTFT, ITL, TPOT and e2e as vllm bench serve defines them
// (docs/load.md).
type LoadCmd struct {
	URL          string        `arg:"" name:"url" help:"Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000 (loopback only unless --allow-remote)."`
	Concurrency  string        `name:"concurrency" placeholder:"N[,N...]" help:"Closed loop: N clients (1 to 1000000) each sending its next request when the last ends; a list (1,2,4,...) sweeps and finds the knee."`
	Rate         string        `name:"rate" placeholder:"R[,R...]" help:"Open loop: arrivals at R requests/s (0 < R <= 1000000), Poisson unless --burstiness; a list sweeps and finds the knee."`
	Burstiness   float64       `name:"burstiness" default:"1" help:"With --rate: the gamma shape of the gaps between arrivals, their mean 1/R (vllm bench serve's --burstiness): 1 Poisson, below 1 burstier (0.25: gaps twice as spread), above 1 more regular, inf every gap 1/R."`
	MaxConc      int           `name:"max-concurrency" default:"10000" help:"Open loop (--rate, --trace): the most requests in flight (vllm bench serve's --max-concurrency); an arrival that finds them all taken is sent when one ends, and the point, not offering its load, is not within the knee's SLO. The default bounds the load generator's memory."`
	Goodput      string        `name:"goodput" placeholder:"ttft:D,tpot:D,e2el:D" help:"Also count the requests that meet every SLO given (vllm bench serve's --goodput keys; D a duration such as 500ms, a bare number milliseconds as there) and report them per second: the goodput column and goodput in JSON."`
	Trace        string        `name:"trace" placeholder:"FILE" help:"Open loop: replay a trace file (as simulate reads it) at its timestamps with its token counts."`
	Sort         bool          `name:"sort" help:"With --trace: accept a trace file whose rows are out of time order (sorted in memory, as simulate)."`
	Duration     time.Duration `name:"duration" default:"60s" help:"Most time requests start in, per point (running requests finish); at most 168h (a week), as every duration flag of load."`
	Requests     int           `name:"requests" default:"1000" help:"Most requests per point (0: --duration only)."`
	PromptTokens int           `name:"prompt-tokens" default:"512" help:"Synthesised prompt length: that many common words, about one token each (the server's usage is the truth)."`
	MaxTokens    int           `name:"max-tokens" default:"128" help:"max_tokens of each request (ignore_eos set: all are generated)."`
	ServedModel  string        `name:"served-model-name" placeholder:"NAME" help:"The model field of every request, the name the server serves the model under (vLLM's --served-model-name; default: the first of GET /v1/models). --model is the replica model, as in every command."`
	Endpoint     string        `name:"endpoint" default:"completions" enum:"completions,chat" help:"completions (/v1/completions) or chat (/v1/chat/completions)."`
	RampUp       time.Duration `name:"ramp-up" default:"0s" help:"Closed loop: spread the clients' first requests evenly over this time."`
	Timeout      time.Duration `name:"timeout" default:"5m" help:"Most time one request may take (then it counts as an error)."`
	ReadyCheck   time.Duration `name:"ready-check-timeout" default:"0s" help:"Wait up to this long, before the first point, for a server that is starting (nothing listening yet, as a vLLM loading its model; 502, 503 or 504, as llama.cpp's server loading it), checking every second with GET /v1/models and one request of one token (vllm bench serve's --ready-check-timeout-sec, in a duration such as 10m). 0: no wait; a server not ready is exit 1 saying so."`
	SLOTTFT      time.Duration `name:"slo-ttft" default:"2s" help:"Knee SLO: the highest load whose TTFT p95 is at most this (0: not checked)..."`
	SLOITL       time.Duration `name:"slo-itl" default:"100ms" help:"...and whose ITL p95 is at most this (0: not checked)."`
	Seed         uint64        `name:"seed" default:"1" help:"Seed of the prompts and the open loop's arrivals."`
	Output       string        `name:"output" short:"o" default:"text" enum:"text,json" help:"text (table, knee) or json."`
	Header       []string      `name:"header" short:"H" sep:"none" placeholder:"'NAME: VALUE'" help:"A header to send with every request, GET /v1/models too (genai-perf's -H; repeat it for more), such as a gateway's key. The server's API key is best given in the environment variable OPENAI_API_KEY (as vllm bench serve reads it: sent as Authorization: Bearer KEY, not in the process list); an Authorization header given here replaces it. Values of credential headers never appear in the output."`
	AllowRemote  bool          `name:"allow-remote" help:"Allow a URL that is not loopback (load only servers you own)."`
	Progress     string        `name:"progress" default:"auto" enum:"auto,always,never" help:"Progress on stderr: auto (a bar on a terminal; otherwise, for a sweep, a line as each point starts and ends), always (the bar), never."`
	Calibrate    string        `name:"calibrate" type:"path" placeholder:"FILE" help:"Fit the replica model (the replica flags --gpu, --model, --tp) to the concurrency sweep and write the calibration file here (every command that models a replica takes it with --calibration). Every point of the sweep runs, then its points up to --calibrate-fit-max again at --calibrate-prompt-tokens (each point up to --duration 60s or --requests 1000 by default): 1,2,4,8,16,32,64 takes 12 points, up to about 12 minutes."`
	CalibrateFit int           `name:"calibrate-fit-max" default:"16" help:"Fit on the sweep's points up to this concurrency; the higher ones are held out and their prediction error is reported."`
	KVPrompts    string        `name:"calibrate-prompt-tokens" placeholder:"N[,N...]" help:"Other prompt lengths the fitted points (concurrency up to --calibrate-fit-max) also run at, so that the sequences' contexts differ and the fit tells the KV read efficiency from the per-sequence cost (vllm bench serve's --random-input-len, one sweep each). Default: one length, 2 x --prompt-tokens + --max-tokens / 2, which doubles each sequence's context (prompt + half the output); half the context when that exceeds the server's max_model_len."`
	ReplicaFlags `embed:""`
}

// maxLoadDuration bounds each of load's durations (--duration,
// --ramp-up, --timeout, --slo-ttft, --slo-itl): a week. A point is
// minutes (vllm bench serve's and the calibration sweep's are), a soak
// test a day or two; 2000000h (228 years, a unit typed for another) ran
// until interrupted, with nothing to report.
const maxLoadDuration = 7 * 24 * time.Hour

// Run validates the flags, runs the point or the sweep and prints it.
func (c *LoadCmd) Run(e *env) error {
	// A base URL: the API paths are appended to it (a query or fragment
	// would end up before them).
	if u, err := httpURL("URL", c.URL); err != nil {
		return err
	} else if u.RawQuery != "" || u.ForceQuery || strings.Contains(c.URL, "#") {
		return invalidf("URL %q: want a base URL without a query or fragment, e.g. http://127.0.0.1:8000 (/v1/... is appended)", u.Redacted())
	} else if p := strings.TrimSuffix(u.Path, "/"); path.Base(p) == "v1" || strings.Contains(p, "/v1/") {
		// An endpoint's URL pasted whole: /v1/models would be appended to it.
		return invalidf("URL %q: want the server's base URL, without the API path (e.g. http://127.0.0.1:8000 for http://127.0.0.1:8000/v1/completions): load appends /v1/models and /v1/completions (or --endpoint chat's /v1/chat/completions)", u.Redacted())
	}
	modes := 0
	for _, s := range []string{c.Concurrency, c.Rate, c.Trace} {
		if s != "" {
			modes++
		}
	}
	if modes != 1 {
		return invalidf("give exactly one of --concurrency, --rate or --trace")
	}
	if c.Sort && c.Trace == "" {
		return invalidf("--sort goes with --trace (it sorts a trace file's rows)")
	}
	for _, flag := range []string{"prompt-tokens", "max-tokens"} {
		if c.Trace != "" && e.given[flag] {
			return invalidf("--%s goes with --concurrency or --rate (a trace replays its own token counts)", flag)
		}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"duration", c.Duration}, {"ramp-up", c.RampUp}, {"timeout", c.Timeout}, {"ready-check-timeout", c.ReadyCheck}, {"slo-ttft", c.SLOTTFT}, {"slo-itl", c.SLOITL}} {
		if d.v > maxLoadDuration {
			return invalidf("--%s %v: at most %v (a week; a load point runs for minutes)", d.flag, d.v, maxLoadDuration)
		}
	}
	switch {
	case c.Duration <= 0:
		return invalidf("--duration %v: want > 0", c.Duration)
	case c.Requests < 0:
		return invalidf("--requests %d: want >= 0", c.Requests)
	case c.PromptTokens < 1 || c.PromptTokens > 1<<20:
		return invalidf("--prompt-tokens %d: want 1 to 1048576", c.PromptTokens)
	case c.MaxTokens < 1 || c.MaxTokens > 1<<20:
		return invalidf("--max-tokens %d: want 1 to 1048576", c.MaxTokens)
	case c.Timeout <= 0:
		return invalidf("--timeout %s: want a duration > 0 (one request's longest time; then it counts as an error)", c.Timeout)
	case c.RampUp < 0:
		return invalidf("--ramp-up %s: want a duration >= 0", c.RampUp)
	case c.ReadyCheck < 0:
		return invalidf("--ready-check-timeout %s: want a duration >= 0 (0: no wait)", c.ReadyCheck)
	case c.SLOTTFT < 0:
		return invalidf("--slo-ttft %s: want a duration >= 0 (0: not checked)", c.SLOTTFT)
	case c.SLOITL < 0:
		return invalidf("--slo-itl %s: want a duration >= 0 (0: not checked)", c.SLOITL)
	}
	if err := needsFlag(e.given, "ramp-up", c.Concurrency != "", "--concurrency (it spreads the closed loop's clients)"); err != nil {
		return err
	}
	if err := needsFlag(e.given, "max-concurrency", c.Concurrency == "", "--rate or --trace (a closed loop's --concurrency is its own)"); err != nil {
		return err
	}
	if c.MaxConc < 1 || c.MaxConc > 1000000 {
		return invalidf("--max-concurrency %d: want 1 to 1000000 requests in flight", c.MaxConc)
	}
	if err := needsFlag(e.given, "burstiness", c.Rate != "", "--rate (it shapes the open loop's gaps; a trace keeps its own timestamps)"); err != nil {
		return err
	}
	if !(c.Burstiness > 0) {
		return invalidf("--burstiness %g: want > 0 (1: Poisson arrivals; below 1 burstier, above 1 more regular, inf constant gaps)", c.Burstiness)
	}
	goodput, err := parseGoodput(c.Goodput)
	if err != nil {
		return err
	}
	if err := needsFlag(e.given, "calibrate-fit-max", c.Calibrate != "", "--calibrate"); err != nil {
		return err
	}
	if err := needsFlag(e.given, "calibrate-prompt-tokens", c.Calibrate != "", "--calibrate"); err != nil {
		return err
	}
	var kvPrompts []int
	if c.KVPrompts != "" {
		for i, item := range strings.Split(c.KVPrompts, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(item))
			if err != nil || n < 1 || n > 1<<20 {
				return invalidf("--calibrate-prompt-tokens: item %d %q: want a prompt length from 1 to 1048576", i+1, item)
			}
			if n != c.PromptTokens && !slices.Contains(kvPrompts, n) {
				kvPrompts = append(kvPrompts, n)
			}
		}
	}
	if e.given["model"] && c.Calibrate == "" {
		// --model was the requests' model field before the replica
		// flags lost their replica- prefix: refused, not ignored.
		return invalidf("--model names the replica model that --calibrate fits (as in every command); the model field of the requests is --served-model-name (default: the first of GET /v1/models)")
	}
	// Only --calibrate uses the replica, but a value no replica has (an
	// unknown --gpu) is refused, not ignored.
	base, err := c.ReplicaFlags.Config()
	if err != nil {
		return err
	}
	if c.Calibrate != "" {
		if c.Concurrency == "" || !strings.Contains(c.Concurrency, ",") {
			return invalidf("--calibrate needs a concurrency sweep (--concurrency 1,2,4,8,16,32,64)")
		}
		if c.CalibrateFit < 2 {
			return invalidf("--calibrate-fit-max %d: want >= 2", c.CalibrateFit)
		}
		// Before the sweep, not after minutes of load: the file's directory
		// must exist (the file is written when the fit is done).
		if err := calibrationPathOK(c.Calibrate, "the sweep"); err != nil {
			return err
		}
		if _, err := replica.New(base); err != nil {
			return invalid(err)
		}
	}
	if !c.AllowRemote {
		if err := load.CheckLoopback(e.ctx, c.URL); err != nil {
			return invalid(err)
		}
	}
	// The URL's user:password goes as the header's Authorization: Basic
	// (as Go's client would send it), so that it is redacted as the other
	// credentials are, and the URL load prints is without it.
	target, _ := url.Parse(c.URL) // checked above
	userinfo := target.User
	target.User = nil
	header, sources, err := loadHeader(c.Header, os.Getenv("OPENAI_API_KEY"), userinfo)
	if err != nil {
		return err
	}
	cfg := load.Config{URL: target.String(), Chat: c.Endpoint == "chat", Model: c.ServedModel, PromptTokens: c.PromptTokens, MaxTokens: c.MaxTokens,
		Duration: c.Duration, Requests: c.Requests, RampUp: c.RampUp, Timeout: c.Timeout, Seed: c.Seed, Burstiness: c.Burstiness, Goodput: goodput, MaxConcurrency: c.MaxConc,
		Header: header, HeaderSources: sources}
	slo := load.SLO{TTFTP95: c.SLOTTFT.Seconds(), ITLP95: c.SLOITL.Seconds()}
	var loads []float64
	concurrency := c.Concurrency != ""
	switch {
	case concurrency:
		if loads, err = load.ParseLoads(c.Concurrency, true); err != nil {
			return invalidf("--concurrency: %v", err)
		}
	case c.Rate != "":
		if loads, err = load.ParseLoads(c.Rate, false); err != nil {
			return invalidf("--rate: %v", err)
		}
	default:
		src, err := trace.ParseContext(e.ctx, c.Trace, trace.Options{Sort: c.Sort})
		if err != nil {
			return invalidf("--trace: %v", err)
		}
		// Read through once before any load: a bad line is invalid input
		// (exit 2, as simulate says), not a failure halfway through a run.
		// The skipped rows noted are those among the requests the run
		// sends: arrivals before --duration, the first --requests of them.
		first, _, _, skipped, err := scanTrace(e.ctx, src, 0, c.Duration.Seconds(), int64(c.Requests))
		if err != nil {
			return invalidf("--trace: %v", err)
		}
		within := fmt.Sprintf("--duration %v", c.Duration)
		if c.Requests > 0 {
			within += fmt.Sprintf(" and --requests %d", c.Requests)
		}
		noteSkipped(e.stderr, src, skipped, within, "not sent")
		if first >= c.Duration.Seconds() {
			// Nothing would start: a run of 0 requests, exit 0.
			return invalidf("--trace %s: the first request arrives at second %.6g, not within --duration %s, so none would be sent (arrival_s counts seconds from the trace's start, and a generic CSV keeps its first row's: a unix time or milliseconds? Subtract the first row's arrival and write seconds; or lengthen --duration)", src.Name, first, c.Duration)
		}
		cfg.Trace = &src
	}
	// The server, once before the points (not once a point): ready, and
	// the model it serves when none is given.
	if cfg.Model, err = c.readyModel(e, cfg); err != nil {
		return err
	}
	var fitLoads []float64
	if c.Calibrate != "" {
		if kvPrompts, err = c.kvPrompts(e, cfg, kvPrompts); err != nil {
			return err
		}
		for _, l := range loads {
			if int(l) <= c.CalibrateFit {
				fitLoads = append(fitLoads, l)
			}
		}
	}
	bar := newLoadProgress(e.stderr, c.Progress, concurrency, loads, c.Burstiness)
	defer bar.reset() // an interrupted run leaves no bar behind
	for _, n := range kvPrompts {
		for _, l := range fitLoads {
			bar.labels = append(bar.labels, fmt.Sprintf("%s at %d-token prompts", loadLabel(load.Summary{Concurrency: int(l)}), n))
		}
	}
	cfg.Progress = bar.update
	var rep load.Report
	if cfg.Trace != nil {
		pt, err := load.RunPoint(e.ctx, cfg)
		if err != nil {
			return err
		}
		rep.Summary = load.SummarizeRun(cfg, pt)
	} else {
		bar.start(cfg)
		bar.sweep(len(loads), func(s load.Summary) bool { return load.StopsAfter(s, len(loads), slo, c.Calibrate != "") })
		rep, err = load.Sweep(e.ctx, cfg, concurrency, loads, slo, c.Calibrate != "", bar.point)
		if err != nil {
			if rep.Interrupted { // the points that finished before the interrupt (exit 130 still)
				cut := rep.Points[len(rep.Points)-1]
				if concurrency {
					cut.Concurrency = int(loads[len(rep.Points)])
				} else {
					cut.Rate = loads[len(rep.Points)]
				}
				bar.reset()
				c.writeInterrupted(e, rep, fmt.Sprintf("interrupted during %s: %d of %d points finished (the knee above is over them)", loadLabel(cut), len(rep.Points), len(loads)))
			}
			return err
		}
	}
	failedAt, failed := allFailed(rep)
	var sweeps []load.PromptSweep
	if c.Calibrate != "" && failed == nil {
		for _, n := range kvPrompts {
			if len(fitLoads) == 0 {
				break
			}
			kcfg := cfg
			kcfg.PromptTokens = n
			bar.sweep(len(fitLoads), nil) // a calibration's sweep runs every point
			kr, err := load.Sweep(e.ctx, kcfg, true, fitLoads, slo, true, bar.point)
			if err != nil {
				if e.ctx.Err() != nil { // the sweep finished: print it (exit 130 still)
					rep.Interrupted = true
					bar.reset()
					c.writeInterrupted(e, rep, fmt.Sprintf("interrupted during the calibration's points at %d-token prompts: no calibration written", n))
				}
				return err
			}
			points := kr.Points
			if len(points) == 0 {
				points = []load.Summary{kr.Summary}
			}
			sweeps = append(sweeps, load.PromptSweep{PromptTokens: n, Points: points})
			rep.CalibrationPoints = append(rep.CalibrationPoints, points...)
			// (its points are not the table's: failedAt stays the table's)
			if _, failed = allFailed(load.Report{Points: points}); failed != nil {
				failed = fmt.Errorf("at %d-token prompts: %w", n, failed)
				break
			}
		}
	}
	bar.reset()
	if c.Calibrate != "" && failed == nil {
		cal, err := load.Calibrate(e.ctx, base, cfg, rep.Points, sweeps, c.CalibrateFit)
		if err != nil {
			// The sweep finished: print it, not only the probes' or the
			// fit's error (exit 130 or 1 still).
			if e.ctx.Err() != nil {
				rep.Interrupted = true
				c.writeInterrupted(e, rep, "interrupted during the calibration's prefill probes: no calibration written")
				return err
			}
			_ = c.writeReport(e, rep, failedAt)
			return err
		}
		cal.Source = loadSource(e.args, c.URL, header) // the command as typed, without its secrets
		if err := writeCalibrationFile(c.Calibrate, cal); err != nil {
			return err
		}
		rep.Calibration, rep.CalibrationWarnings = &cal, cal.Warnings
		if c.Output != "json" {
			defer writeCalibration(e.stdout, c.Calibrate, cal)
		}
	}
	if err := c.writeReport(e, rep, failedAt); err != nil {
		return err
	}
	return failed
}

// writeReport prints rep as --output says: indented JSON, or the table
// (failedAt: the point whose first error the error says, once, on stderr).
func (c *LoadCmd) writeReport(e *env, rep load.Report, failedAt string) error {
	if c.Output == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	writeLoadTable(e.stdout, rep, failedAt)
	return nil
}

// writeInterrupted prints the points of a run an interrupt cut short, as
// a finished run's output, and note (text: under the table).
func (c *LoadCmd) writeInterrupted(e *env, rep load.Report, note string) {
	_ = c.writeReport(e, rep, "")
	if c.Output != "json" {
		fmt.Fprintf(e.stdout, "\n%s\n", note)
	}
}

// loadSource is the calibration file's source: the load command line
// args as typed (commandLine), with the URL argument rawURL's password
// and every credential of header (load.Credentials: an --header item's
// key) replaced, as the output redacts them: a serve config names the
// file, which is kept in a ConfigMap or a repository.
func loadSource(args []string, rawURL string, header http.Header) string {
	shown := redactURL(rawURL)
	creds := load.Credentials(header)
	out := make([]string, len(args))
	for i, a := range args {
		if a == rawURL {
			a = shown
		}
		for _, c := range creds {
			a = strings.ReplaceAll(a, c, "[redacted]")
		}
		out[i] = a
	}
	return commandLine(out)
}

// loadHeader returns the header load sends with every request: the URL's
// user:password (userinfo, nil: none) as Authorization: Basic, replaced
// by apiKey (OPENAI_API_KEY, as vllm bench serve reads it) as
// Authorization: Bearer apiKey, then items (--header 'NAME: VALUE', as
// genai-perf's -H), an Authorization among them replacing the others (Go's
// client, too, sends a URL's user:password only without one); and where
// each field came from (a 401 or 403 names the source). A bad item is
// exit 2 naming it by position and name, never by value (a key).
func loadHeader(items []string, apiKey string, userinfo *url.Userinfo) (http.Header, load.HeaderSources, error) {
	h, from := http.Header{}, load.HeaderSources{}
	if userinfo != nil {
		pass, _ := userinfo.Password()
		r := http.Request{Header: h}
		r.SetBasicAuth(userinfo.Username(), pass)
		from["Authorization"] = load.FromURL
	}
	if key := strings.TrimSpace(apiKey); key != "" {
		if !httpguts.ValidHeaderFieldValue(key) {
			return nil, nil, invalidf("OPENAI_API_KEY: not a valid header value (a line break or control character in it?)")
		}
		h.Set("Authorization", "Bearer "+key)
		from["Authorization"] = load.FromAPIKey
	}
	given := http.Header{}
	for i, item := range items {
		name, value, ok := strings.Cut(item, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		switch {
		case !ok || name == "":
			return nil, nil, invalidf("--header item %d: want 'NAME: VALUE', such as 'X-Api-Key: KEY'", i+1)
		case !httpguts.ValidHeaderFieldName(name):
			return nil, nil, invalidf("--header item %d: %q is not a header name (letters, digits and !#$%%&'*+-.^_`|~)", i+1, name)
		case !httpguts.ValidHeaderFieldValue(value):
			return nil, nil, invalidf("--header item %d (%s): its value is not a valid header value (a line break or control character in it?)", i+1, name)
		}
		switch http.CanonicalHeaderKey(name) {
		case "Content-Type", "Accept", "Host", "Content-Length", "Transfer-Encoding", "Connection":
			return nil, nil, invalidf("--header item %d: %s is load's own (it sends JSON and reads an event stream to the URL's host)", i+1, http.CanonicalHeaderKey(name))
		}
		given.Add(name, value)
	}
	for name, vs := range given {
		h[name] = vs
		from[name] = load.FromHeaderFlag
	}
	return h, from, nil
}

// readyModel waits up to --ready-check-timeout for the server of cfg to
// be ready (load.WaitReady: on stderr when it starts waiting and when the
// server is ready, unless --progress never) and returns the model field of
// the requests: --served-model-name, or the first of GET /v1/models
// (load.DiscoverModel, without a wait).
func (c *LoadCmd) readyModel(e *env, cfg load.Config) (string, error) {
	if c.ReadyCheck <= 0 {
		if cfg.Model != "" {
			return cfg.Model, nil
		}
		return load.DiscoverModel(e.ctx, load.NewClient(1), cfg.URL, cfg.Header, cfg.HeaderSources)
	}
	start, waited := time.Now(), false
	model, err := load.WaitReady(e.ctx, cfg, c.ReadyCheck, func(why error) {
		waited = true
		if c.Progress != "never" {
			fmt.Fprintf(e.stderr, "load: waiting up to %s (--ready-check-timeout) for the server to be ready: %v\n", c.ReadyCheck, why)
		}
	})
	if err == nil && waited && c.Progress != "never" {
		fmt.Fprintf(e.stderr, "load: the server is ready after %s\n", time.Since(start).Round(time.Second))
	}
	return model, err
}

// kvPrompts returns the prompt lengths a calibration sweeps its fitted
// points at besides --prompt-tokens: given (checked against the server's
// max_model_len; none when --prompt-tokens alone is given), or
// load.KVPromptTokens's default (none when no length fits). The server
// is asked for the model and its max_model_len; one it cannot say
// (load.ErrMaxModelLenUnknown: no model list, or one without the model)
// or does not give is noted on stderr with the lengths left unchecked.
func (c *LoadCmd) kvPrompts(e *env, cfg load.Config, given []int) ([]int, error) {
	client := load.NewClient(1) // as the run's: no redirect followed
	model := cfg.Model
	if model == "" {
		m, err := load.DiscoverModel(e.ctx, client, cfg.URL, cfg.Header, cfg.HeaderSources)
		if err != nil {
			return nil, err
		}
		model = m
	}
	maxLen, err := load.MaxModelLen(e.ctx, client, cfg.URL, model, cfg.Header, cfg.HeaderSources)
	unknown := "" // why the max_model_len is unknown, said with what is done instead
	switch {
	case errors.Is(err, load.ErrMaxModelLenUnknown): // a server without /v1/models may still serve the run
		unknown = err.Error()
	case err != nil:
		return nil, err
	case maxLen == 0: // a list without max_model_len (llama.cpp's server's)
		unknown = fmt.Sprintf("GET %s/v1/models gives no max_model_len for %q", cfg.URL, model)
	}
	if c.KVPrompts != "" { // given: these lengths only (none besides --prompt-tokens, if it alone)
		for _, n := range given {
			if maxLen > 0 && n+c.MaxTokens > maxLen {
				return nil, invalidf("--calibrate-prompt-tokens %d: %d + --max-tokens %d = %d tokens, above the server's max_model_len %d for %s; give shorter prompts", n, n, c.MaxTokens, n+c.MaxTokens, maxLen, model)
			}
		}
		if unknown != "" && len(given) > 0 {
			fmt.Fprintf(e.stderr, "note: %s: --calibrate-prompt-tokens is not checked against it (a length above it fails its points' requests)\n", unknown)
		}
		return given, nil
	}
	if n := load.KVPromptTokens(c.PromptTokens, c.MaxTokens, maxLen); n > 0 && n != c.PromptTokens {
		if unknown != "" {
			fmt.Fprintf(e.stderr, "note: %s: the second prompt length is the default 2 x --prompt-tokens + --max-tokens / 2 = %d, not checked against it (if it is above the server's, give --calibrate-prompt-tokens)\n", unknown, n)
		}
		return []int{n}, nil
	}
	return nil, nil
}

// allFailed returns the label of the first point of rep whose every
// request failed and an error (exit 1) naming it, with that point's first
// error; "" and nil when each point had a success (a result, if a poor one).
func allFailed(rep load.Report) (string, error) {
	points := rep.Points
	if len(points) == 0 {
		points = []load.Summary{rep.Summary}
	}
	for _, p := range points {
		if p.Requests == 0 && p.Errors > 0 {
			return loadLabel(p), fmt.Errorf("%s: all %d requests failed; the first: %s", loadLabel(p), p.Errors, p.FirstError)
		}
	}
	return "", nil
}

// writeLoadTable prints one row per point, a bar chart of TTFT p95 and
// ITL p95 against load, each point's first error but that of the point
// labelled failedAt (the command's error says it), and the knee.
func writeLoadTable(w io.Writer, rep load.Report, failedAt string) {
	points := rep.Points
	if len(points) == 0 {
		points = []load.Summary{rep.Summary}
	}
	num := func(v load.Float, scale float64, format string) string {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return "-"
		}
		return fmt.Sprintf(format, float64(v)*scale)
	}
	ms := func(v load.Float) string { return num(v, 1000, "%.1f") }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	goodput := points[0].Goodput != nil
	head := "load\trequests\terrors\tTTFT p50 ms\tTTFT p95 ms\tITL p50 ms\tITL p95 ms\tTPOT p50 ms\te2e p50 s\toutput tok/s\t"
	if goodput {
		head += "goodput req/s\t"
	}
	fmt.Fprintln(tw, head)
	for _, p := range points {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t", loadLabel(p), p.Requests, p.Errors, ms(p.TTFTP50), ms(p.TTFTP95),
			ms(p.ITLP50), ms(p.ITLP95), ms(p.TPOTP50), num(p.E2EP50, 1, "%.2f"), p.OutputTokensPerS)
		if g := p.Goodput; g != nil {
			fmt.Fprintf(tw, "%.2f\t", g.RequestsPerS)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if g := points[0].Goodput; g != nil {
		fmt.Fprintf(w, "goodput: requests with %s, per second of the point\n", goodputText(g.SLO))
	}
	if len(rep.Points) > 1 {
		fmt.Fprintln(w)
		plotLoad(w, rep)
	}
	for _, p := range points {
		if p.Requests == 0 && p.Errors == 0 && p.Rate > 0 && p.UnsentFromS == nil {
			fmt.Fprintf(w, "%s: no request was sent: no arrival of its schedule fell within --duration (the mean gap at %g req/s is %s); give a longer --duration\n",
				loadLabel(p), p.Rate, time.Duration(float64(time.Second)/p.Rate).Round(time.Microsecond))
		}
		if p.UnsentFromS != nil {
			fmt.Fprintf(w, "%s: the arrivals due from second %.3g on were not sent before the point's --duration ended (the load generator fell behind its schedule: held by its --max-concurrency %d slots, or a rate it cannot keep up with): the point did not offer its load (not within the SLO); lower the load or raise --max-concurrency\n",
				loadLabel(p), *p.UnsentFromS, p.MaxConcurrency)
		}
		if p.SentLate > 0 {
			fmt.Fprintf(w, "%s: %d of %d requests were sent late, held for one of the --max-concurrency %d slots: the server did not keep up and the point did not offer its load (not within the SLO); raise --max-concurrency or lower the load\n",
				loadLabel(p), p.SentLate, p.Requests+p.Errors, p.MaxConcurrency)
		}
		if p.FirstError != "" && loadLabel(p) != failedAt {
			fmt.Fprintf(w, "%s: first error: %s\n", loadLabel(p), p.FirstError)
		}
	}
	if k := rep.Knee; k != nil {
		slo := fmt.Sprintf("TTFT p95 <= %gs and ITL p95 <= %gs", k.SLO.TTFTP95, k.SLO.ITLP95)
		if !k.Found {
			why := "already misses " + slo
			if len(points) > 0 && points[0].SentLate > 0 && points[0].Errors == 0 {
				why = fmt.Sprintf("already sent %d request(s) late (above)", points[0].SentLate)
			}
			if len(points) > 0 && points[0].Errors > 0 { // a point with errors is not within the SLO
				where := "above"
				if loadLabel(points[0]) == failedAt {
					where = "in the error below"
				}
				why = fmt.Sprintf("already has %d failed request(s) (a point with errors is not within the SLO; first error %s)", points[0].Errors, where)
			}
			if p := points[0]; p.Requests == 0 && p.Errors == 0 && p.Rate > 0 && p.UnsentFromS == nil {
				why = "sent no request (above)"
			}
			if p := points[0]; p.Requests > 0 && p.Errors == 0 && p.SentLate == 0 && p.UnsentFromS == nil &&
				math.IsNaN(float64(p.ITLP95)) && k.SLO.ITLP95 > 0 && (k.SLO.TTFTP95 <= 0 || float64(p.TTFTP95) <= k.SLO.TTFTP95) {
				// No interval to check: one-token answers miss no ITL SLO, they lack one.
				why = fmt.Sprintf("has no ITL p95 for --slo-itl %gs to check (no request streamed 2 or more text chunks, as with --max-tokens 1); give --slo-itl 0 to find the knee on TTFT p95 alone", k.SLO.ITLP95)
			}
			fmt.Fprintf(w, "\nno knee: the lowest load %s\n", why)
			return
		}
		at := fmt.Sprintf("concurrency %d", k.Concurrency)
		if k.Concurrency == 0 {
			at = fmt.Sprintf("rate %g req/s", k.Rate)
		}
		if k.LowerBound {
			fmt.Fprintf(w, "\nno knee up to %s: every point within %s; extend the sweep\nsuggested target per replica, a lower bound: metrics: [{type: %s, target: %g}] or more\n%s\n", at, slo, k.Metric, k.Target, kneeNote)
			return
		}
		fmt.Fprintf(w, "\nknee: %s (the highest load within %s)\nsuggested target per replica: metrics: [{type: %s, target: %g}]\n%s\n", at, slo, k.Metric, k.Target, kneeNote)
	}
}

// kneeNote says what the knee's target is beside tune's and the chart's
// (docs/queue-target.md).
const kneeNote = "the knee is a ceiling, not the target to deploy: tune picks the cheapest target below it that holds your traffic through a cold start (why they differ: docs/queue-target.md)"

func loadLabel(p load.Summary) string {
	switch {
	case p.Concurrency > 0:
		return fmt.Sprintf("c=%d", p.Concurrency)
	case math.IsInf(float64(p.Burstiness), 1):
		return fmt.Sprintf("%g req/s, burstiness inf", p.Rate) // as the flag takes it, not Go's +Inf
	case p.Rate > 0 && float64(p.Burstiness) != 1 && p.Burstiness != 0:
		return fmt.Sprintf("%g req/s, burstiness %g", p.Rate, float64(p.Burstiness))
	case p.Rate > 0:
		return fmt.Sprintf("%g req/s", p.Rate)
	}
	return "trace"
}

// parseGoodput reads --goodput: comma- or space-separated key:value pairs,
// keys ttft, tpot and e2el (vllm bench serve's; any case), each value a
// duration (500ms, 2s) or a bare number of milliseconds (vllm bench
// serve's unit), > 0 and at most a week. "" is no goodput (nil); a value
// with no pair in it (",") is an error, not an SLO that every request
// meets.
func parseGoodput(s string) (*load.Goodput, error) {
	const example = "give e.g. --goodput ttft:2s,tpot:100ms,e2el:30s"
	if s == "" {
		return nil, nil
	}
	items := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
	if len(items) == 0 {
		return nil, invalidf("--goodput %q: no SLO in it; %s (or leave the flag out)", s, example)
	}
	var g load.Goodput
	seen := map[string]bool{}
	for i, item := range items {
		key, val, ok := strings.Cut(item, ":")
		key = strings.ToLower(key)
		bad := func(why string) error {
			return invalidf("--goodput: item %d %q: %s; %s", i+1, item, why, example)
		}
		if !ok {
			return nil, bad("want key:value")
		}
		var slo *float64
		switch key {
		case "ttft":
			slo = &g.TTFT
		case "tpot":
			slo = &g.TPOT
		case "e2el":
			slo = &g.E2E
		default:
			return nil, bad("unknown key " + strconv.Quote(key) + ": want ttft, tpot or e2el")
		}
		if seen[key] {
			return nil, bad(key + " given twice")
		}
		seen[key] = true
		const bounds = "> 0 (vllm bench serve takes 0, which no request meets) and at most a week"
		var d time.Duration
		if ms, err := quantity.Decimal(val); err == nil || errors.Is(err, strconv.ErrRange) {
			// A bare number is milliseconds, as vllm bench serve reads
			// it; 1e400 parses as +Inf with ErrRange: too large.
			if !(ms > 0) || ms > float64(maxLoadDuration/time.Millisecond) {
				return nil, bad("want milliseconds " + bounds)
			}
			if d = time.Duration(ms * float64(time.Millisecond)); d <= 0 {
				// Below a nanosecond (1e-7 ms): 0 as a duration.
				return nil, bad("want milliseconds of at least 1e-6 (a nanosecond) and at most a week")
			}
		} else if d, err = time.ParseDuration(val); err != nil {
			return nil, bad("want a duration (500ms, 2s) or a number of milliseconds")
		}
		if d <= 0 || d > maxLoadDuration {
			return nil, bad("want a duration " + bounds)
		}
		*slo = d.Seconds()
	}
	return &g, nil
}

// readyFlagHint adds to kong's "unknown flag --ready-check-timeout-sec"
// (vllm bench serve's, in seconds) load's flag and its unit; other errors
// are returned as they are.
func readyFlagHint(err error) error {
	if !strings.HasPrefix(err.Error(), "unknown flag --ready-check-timeout-sec") {
		return err
	}
	return fmt.Errorf("%w: load's is --ready-check-timeout, a duration (vllm bench serve's --ready-check-timeout-sec 600 is --ready-check-timeout 600s or 10m)", err)
}

// goodputArgHint adds to kong's "unexpected argument tpot:50" how to give
// the SLOs when args hold --goodput (load's): vllm bench serve's --goodput
// takes them as separate arguments (--goodput ttft:100 tpot:50), load's as
// one value. Other errors, and a command line without --goodput (another
// command's stray argument), are returned as they are.
func goodputArgHint(err error, args []string) error {
	arg, ok := strings.CutPrefix(err.Error(), "unexpected argument ")
	key, _, pair := strings.Cut(arg, ":")
	if !ok || !pair || !slices.Contains([]string{"ttft", "tpot", "e2el"}, strings.ToLower(key)) {
		return err
	}
	if !slices.ContainsFunc(args, func(a string) bool { return a == "--goodput" || strings.HasPrefix(a, "--goodput=") }) {
		return err
	}
	return fmt.Errorf("%w: --goodput takes its SLOs as one value, separated by commas (--goodput ttft:100,tpot:50), not as separate arguments as vllm bench serve's", err)
}

// goodputText names g's SLOs, e.g. "TTFT <= 2s and TPOT <= 100ms".
func goodputText(g load.Goodput) string {
	var parts []string
	for _, x := range []struct {
		name string
		v    float64
	}{{"TTFT", g.TTFT}, {"TPOT", g.TPOT}, {"e2e", g.E2E}} {
		if x.v > 0 {
			parts = append(parts, fmt.Sprintf("%s <= %s", x.name, shortDuration(time.Duration(math.Round(x.v*float64(time.Second))))))
		}
	}
	return strings.Join(parts, " and ")
}

// plotLoad draws TTFT p95 and ITL p95 per point as bars scaled to the
// sweep's largest value, with the SLO's position marked.
func plotLoad(w io.Writer, rep load.Report) {
	const width = 40
	for _, m := range []struct {
		name  string
		get   func(load.Summary) float64
		limit float64
	}{{"TTFT p95", func(s load.Summary) float64 { return float64(s.TTFTP95) }, rep.Knee.SLO.TTFTP95},
		{"ITL p95", func(s load.Summary) float64 { return float64(s.ITLP95) }, rep.Knee.SLO.ITLP95}} {
		top := m.limit
		for _, p := range rep.Points {
			if v := m.get(p); v > top {
				top = v
			}
		}
		if !(top > 0) {
			continue
		}
		fmt.Fprintf(w, "%s (| marks the SLO %gs)\n", m.name, m.limit)
		// The row has one column past the longest bar, so that the mark of
		// an SLO above every value (mark == width) is drawn too.
		mark := int(math.Round(m.limit / top * width))
		for _, p := range rep.Points {
			v := m.get(p)
			n := 0
			if v > 0 {
				n = int(math.Round(v / top * width))
			}
			row := []byte(strings.Repeat("#", n) + strings.Repeat(" ", width+1-n))
			if m.limit > 0 && mark >= 0 && mark < len(row) {
				row[mark] = '|'
			}
			val := fmt.Sprintf("%.3fs", v)
			if math.IsNaN(v) { // no request of the point measured it: "-" as in the table
				val = "-"
			}
			fmt.Fprintf(w, "  %10s %s %s\n", loadLabel(p), row, val)
		}
	}
}

// loadProgress draws the progress bar on the commands' status line (a
// terminal only, unless --progress always), naming the sweep's point. Off a
// terminal under --progress auto, a sweep of several points instead writes
// a line as it starts and as each point ends (a log, a CI job), so that a
// calibration's minutes are not silent.
type loadProgress struct {
	line   *status.Line
	lines  io.Writer // off a terminal: a line per point; nil otherwise
	labels []string  // the sweep's points, "c=4" or "2 req/s"
	done   int       // points finished
	began  time.Time // the current point's start
	// end is the index in labels after the running sweep's last point, and
	// stops, if set, says whether it ends after a point (load.StopsAfter):
	// a point is announced as it starts, never one that does not (past a
	// point that missed the SLO, or a calibration's after a failed sweep).
	end   int
	stops func(load.Summary) bool
}

// newLoadProgress returns the progress of a run of loads (the sweep's
// points; concurrency or rates, the rates at burstiness, --burstiness) on w
// under mode (auto, always, never).
func newLoadProgress(w io.Writer, mode string, concurrency bool, loads []float64, burstiness float64) *loadProgress {
	line := status.New(w)
	p := &loadProgress{line: line}
	switch mode {
	case "always":
		line.SetActive(true)
	case "never":
		line.SetActive(false)
	default:
		if !line.Active() && len(loads) > 1 {
			p.lines = w
		}
	}
	for _, l := range loads {
		s := load.Summary{Rate: l, Burstiness: load.Float(burstiness)} // labelled as the table labels it
		if concurrency {
			s = load.Summary{Concurrency: int(l)}
		}
		p.labels = append(p.labels, loadLabel(s))
	}
	return p
}

// start says what the sweep will run (off a terminal).
func (p *loadProgress) start(cfg load.Config) {
	p.began = time.Now()
	if p.lines == nil {
		return
	}
	limit := fmt.Sprintf("%s or %d requests, whichever comes first", cfg.Duration, cfg.Requests)
	if cfg.Requests == 0 {
		limit = cfg.Duration.String()
	}
	sep := ", "
	if strings.Contains(p.labels[0], ",") { // "2 req/s, burstiness 0.5"
		sep = "; "
	}
	fmt.Fprintf(p.lines, "load: %d points (%s), each up to %s\n", len(p.labels), strings.Join(p.labels, sep), limit)
}

// sweep announces a sweep of the next n points (off a terminal), stops
// saying whether it ends after one of them (nil: it runs them all).
func (p *loadProgress) sweep(n int, stops func(load.Summary) bool) {
	p.end, p.stops = min(p.done+n, len(p.labels)), stops
	p.began = time.Now()
	if p.lines != nil && p.done < p.end {
		fmt.Fprintf(p.lines, "load: %s (%d of %d) started\n", p.labels[p.done], p.done+1, len(p.labels))
	}
}

// point is Sweep's callback after each point: clear the bar, and off a
// terminal say what the point did and which comes next.
func (p *loadProgress) point(s load.Summary) {
	p.line.Done()
	p.done++
	if p.lines != nil {
		label := loadLabel(s)
		if p.done <= len(p.labels) {
			label = p.labels[p.done-1]
		}
		fmt.Fprintf(p.lines, "load: %s (%d of %d) done in %.0fs: %d requests, %d errors\n",
			label, p.done, len(p.labels), time.Since(p.began).Seconds(), s.Requests, s.Errors)
		if p.done < p.end && (p.stops == nil || !p.stops(s)) {
			fmt.Fprintf(p.lines, "load: %s (%d of %d) started\n", p.labels[p.done], p.done+1, len(p.labels))
		}
	}
	p.began = time.Now()
}

func (p *loadProgress) update(done, total int) {
	point := ""
	if len(p.labels) > 1 && p.done < len(p.labels) {
		point = fmt.Sprintf("%s (%d of %d) ", p.labels[p.done], p.done+1, len(p.labels))
	}
	if total > 0 {
		p.line.Printf("%s%s %d/%d requests", point, status.Bar(float64(done)/float64(total), 30), done, total)
		return
	}
	p.line.Printf("%s%d requests", point, done)
}

func (p *loadProgress) reset() { p.line.Done() }

// calibrationPathOK checks, before the work that precedes the writing
// (after), that --calibrate names a file that can be written: its directory
// exists, it is not a directory itself (invalid input otherwise), and a
// file can be created there (outputDirWritable: exit 1 otherwise).
func calibrationPathOK(path, after string) error {
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return invalidf("--calibrate %s: %s (the file is written there after %s)", path, noDir(filepath.Dir(path)), after)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return invalidf("--calibrate %s: is a directory (want the path of a JSON file to write)", path)
	}
	return outputDirWritable("calibrate", path, filepath.Dir(path))
}

// writeCalibrationFile writes cal as the calibration file's JSON, durably
// (writeCalibrationData).
func writeCalibrationFile(path string, cal replica.Calibration) error {
	b, err := json.MarshalIndent(cal, "", "  ")
	if err != nil {
		return err
	}
	return writeCalibrationData(path, append(b, '\n'))
}

// writeCalibrationData is writeCalibrationFile's write: durable
// (atomicfile.WriteDurable), since a serve config's replica.calibration
// names the file and a restart reads it: a plain atomic write may leave
// it empty after a node crash on some file systems, and serve would then
// refuse its configuration. Once a run. A variable for the test that it
// is the durable one.
var writeCalibrationData = atomicfile.WriteDurable

// writeRendered writes what render produces to path as a whole: rendered
// in memory, then atomicfile.Write, so an interrupted or failed run leaves
// the old file or none, never half of one (plots, for instance).
// Not durable: a plot is for a reader, no later run reads it.
func writeRendered(path string, render func(io.Writer) error) error {
	var b bytes.Buffer
	if err := render(&b); err != nil {
		return err
	}
	return atomicfile.Write(path, b.Bytes())
}

// writeCalibration prints the fitted parameters and each point's
// prediction error, fitted and held out.
func writeCalibration(w io.Writer, path string, cal replica.Calibration) {
	fmt.Fprintf(w, "\ncalibration written to %s (%s on %d x %s):\n", path, cal.Model, cal.TP, cal.GPU)
	cal.WriteText(w, "concurrency", "ITL p50 ms")
}
