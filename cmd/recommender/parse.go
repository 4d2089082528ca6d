package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/infscale/infscale/internal/sourcekey"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/scrape"
)

// minParseInterval and maxParseInterval bound parse --interval: shorter
// than 100ms, a counter's increase is a few engine steps (or none) and its
// rate noise; longer than an hour is a mistyped unit, not a wait to sit out.
const (
	minParseInterval = 100 * time.Millisecond
	maxParseInterval = time.Hour
)

// ParseCmd is `infscale parse PAGE...`: read model-server /metrics pages
// and print each replica's signals (docs/parse.md).
type ParseCmd struct {
	Pages      []string           `arg:"" name:"PAGE" help:"A /metrics page: a file, an http(s) URL, or - for stdin. Each page once (the same URL or file named twice is an error); --interval gives rates."`
	Server     modelserver.Server `default:"auto" placeholder:"S" help:"Server profile: auto (detect), ${servers} (default ${default})."`
	Output     string             `short:"o" enum:"text,json" default:"text" help:"Output format: text or json."`
	CPURequest float64            `name:"cpu-request" placeholder:"CORES" help:"The pod's CPU request in cores, to print CPU % of the request (needs two scrapes: --interval)."`
	Interval   *time.Duration     `placeholder:"D" help:"Scrape every page twice, D apart (100ms to 1h, e.g. 15s), and print counter rates; URLs only."`
	Timeout    time.Duration      `default:"10s" placeholder:"D" help:"Timeout of one URL fetch (default 10s)."`
}

// parseRow is one printed row: a page and, when an earlier scrape of the same
// source exists, the rates since it.
type parseRow struct {
	src   string // the PAGE argument (Page.Source hides a URL's password)
	page  *scrape.Page
	rates *scrape.Rates
	ttft  float64 // TTFT p95 over the interval, seconds; NaN when unknown
}

// ttftQuantile is the TTFT quantile parse prints with rates.
const ttftQuantile = 0.95

func newParseRow(prev, cur *scrape.Page) parseRow {
	r := scrape.Rate(prev, cur)
	return parseRow{page: cur, rates: &r, ttft: scrape.HistogramIncrease(prev, cur).Quantile(ttftQuantile)}
}

// Run reads every page and prints one row each.
func (c *ParseCmd) Run(e *env) error {
	if err := c.validate(e.given); err != nil {
		return err
	}
	if err := scrape.CheckDistinct(c.Pages); err != nil {
		return invalid(err)
	}
	client := &http.Client{Timeout: c.Timeout}
	var errs []error
	load := func(src string) *scrape.Page {
		p, err := scrape.Load(e.ctx, client, src, e.stdin, c.Server)
		if err != nil {
			if scrape.IsRuntime(err) {
				errs = append(errs, err)
			} else {
				errs = append(errs, invalid(err))
			}
		}
		return p
	}

	var rows []parseRow
	last := map[string]*scrape.Page{}
	for _, src := range c.Pages {
		p := load(src)
		if p == nil {
			continue
		}
		row := parseRow{page: p}
		if prev := last[p.Source]; prev != nil {
			row = newParseRow(prev, p)
		}
		row.src = src
		last[p.Source] = p
		rows = append(rows, row)
	}
	if c.Interval != nil && len(errs) == 0 {
		select {
		case <-e.ctx.Done():
			return fmt.Errorf("parse: interrupted while waiting %s for the second scrape: %w", *c.Interval, e.ctx.Err())
		case <-time.After(*c.Interval):
		}
		first := rows
		rows = nil
		for _, row := range first {
			p := load(row.src)
			if p == nil {
				continue
			}
			next := newParseRow(row.page, p)
			next.src = row.src
			rows = append(rows, next)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if c.Output == "json" {
		return c.writeJSON(e.stdout, rows)
	}
	return c.writeText(e.stdout, rows)
}

func (c *ParseCmd) validate(given map[string]bool) error {
	if math.IsNaN(c.CPURequest) || math.IsInf(c.CPURequest, 0) || c.CPURequest < 0 {
		return invalidf("--cpu-request %v: want a number of cores >= 0 (0 = unknown)", c.CPURequest)
	}
	if c.Timeout <= 0 {
		return invalidf("--timeout %s: want a duration > 0, e.g. 10s", c.Timeout)
	}
	stdin := 0
	for _, p := range c.Pages {
		if p == "-" {
			stdin++
		}
	}
	if stdin > 1 || (stdin == 1 && c.Interval != nil) {
		return invalidf("PAGE -: standard input can be read only once (no second scrape, no --interval)")
	}
	if err := needsFlag(given, "cpu-request", c.Interval != nil, "--interval (CPU % of the request is a rate: two scrapes)"); err != nil {
		return err
	}
	if err := needsFlag(given, "timeout", slices.ContainsFunc(c.Pages, sourcekey.IsHTTP), "a PAGE that is an http(s) URL (it bounds one fetch; a file or - is read as it is)"); err != nil {
		return err
	}
	if c.Interval == nil {
		return nil
	}
	if err := durationIn("interval", *c.Interval, minParseInterval, maxParseInterval, "the time between a page's two scrapes; e.g. 15s, a scrape interval"); err != nil {
		return err
	}
	for _, p := range c.Pages {
		if !sourcekey.IsHTTP(p) {
			return invalidf("--interval with PAGE %s: a file is the same page when read again (its rates would be 0); --interval scrapes http(s) URLs", p)
		}
	}
	return nil
}

// num formats a number of parse's table, the page's signals and the
// interval's rates alike: 3 significant digits (0.0162, 4.79, 53.5),
// whole numbers from 100 on (18433 tok/s, not 1.84e+04), never in
// exponent form above 1e-6; ABSENT (NaN, ±Inf) prints as "-". The table
// is read by eye, and a counter's rate over a few seconds is not known to
// 6 digits; --output json keeps every number in full.
func num(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1e-6:
		// 'g' with 3 digits, written in decimals: 0.0000123, not 1.23e-05.
		g, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
		return strconv.FormatFloat(g, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func (c *ParseCmd) writeText(w io.Writer, rows []parseRow) error {
	withRates := false
	for _, r := range rows {
		withRates = withRates || r.rates != nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "SOURCE\tSERVER\tRUNNING\tWAITING\tKV\tENGINES"
	if withRates {
		header += "\tINTERVAL\tPROMPT_TOK/S\tGEN_TOK/S\tREQ/S\tCPU_CORES\tCPU_%\tTTFT_P95_S"
	}
	fmt.Fprintln(tw, header)
	var notes []string
	for _, r := range rows {
		p := r.page
		run, wait, kv := known(p)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d", p.Source, p.Server, num(run), num(wait), num(kv), p.Engines)
		if withRates {
			if r.rates == nil {
				fmt.Fprint(tw, "\t-\t-\t-\t-\t-\t-\t-")
			} else {
				rt := r.rates
				fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\t%s\t%s\t%s", rt.Interval.Round(time.Millisecond), num(rt.PromptTokens), num(rt.GenerationTokens),
					num(rt.Requests), num(rt.CPUCores), num(rt.CPUPercent(c.CPURequest)), num(r.ttft))
				if rt.Suspect != "" {
					notes = append(notes, p.Source+": "+rt.Suspect)
				}
				if rt.Reset {
					notes = append(notes, p.Source+": counter reset (restart) in the interval: increase counted from 0")
				}
			}
		}
		fmt.Fprintln(tw)
		if p.Suspect != "" {
			notes = append(notes, p.Source+": "+p.Suspect)
		}
		for _, w := range p.WrongType {
			notes = append(notes, p.Source+": "+w)
		}
		for _, sig := range p.NonFinite {
			finite := "no sample is finite"
			if v := map[string]float64{"running": p.Running, "waiting": p.Waiting, "kv": p.KV}[sig]; !math.IsNaN(v) {
				finite = "the finite samples give " + num(v)
			}
			notes = append(notes, fmt.Sprintf("%s: %s has a NaN or infinite sample (an engine that reports no number): unknown, as decide and serve read it (%s)",
				p.Source, sig, finite))
		}
		if pl := p.Pool; pl != nil {
			notes = append(notes, fmt.Sprintf("%s: llm-d EPP of pool %q: %s ready endpoints, %s held in flow control, %s in flight, saturation %s (unknown when fail-closed: empty pool or stale endpoints)",
				p.Source, pl.Name, num(pl.Ready), num(pl.FlowQueue), num(pl.RequestRunning), num(pl.Effective)))
			if pl.FlowQueueErr != nil { // held unknown, as serve reads it
				notes = append(notes, fmt.Sprintf("%s: flow-control queue not read: %v", p.Source, pl.FlowQueueErr))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "(- = absent or unknown, not 0: no finite sample on the page (a family the server does not export, such as llama.cpp's KV usage), or a NaN beside finite ones (a note: line below names it))")
	for _, n := range notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

// parseJSON is one element of `--output json`; numbers are null when absent.
type parseJSON struct {
	Source           string          `json:"source"`
	Server           string          `json:"server"`
	Time             string          `json:"time,omitempty"`
	Running          *float64        `json:"running"`
	Waiting          *float64        `json:"waiting"`
	KVUsage          *float64        `json:"kv_usage"`
	Engines          int             `json:"engines"`
	Models           []string        `json:"models"`
	ReadFrom         scrape.Chosen   `json:"read_from"`
	CPUSeconds       *float64        `json:"cpu_seconds_total"`
	PromptTokens     *float64        `json:"prompt_tokens_total"`
	GenerationTokens *float64        `json:"generation_tokens_total"`
	Requests         *float64        `json:"requests_total"`
	PrefixHits       *float64        `json:"prefix_cache_hits_total"`
	PrefixQueries    *float64        `json:"prefix_cache_queries_total"`
	MaxRunning       *float64        `json:"max_running"`
	Suspect          string          `json:"suspect,omitempty"`
	Unknown          []string        `json:"unknown,omitempty"`
	Rates            *parseRatesJSON `json:"rates,omitempty"`
	Pool             *parsePoolJSON  `json:"pool,omitempty"`
}

// parsePoolJSON is an llm-d EPP page's pool (scrape.Pool); numbers are null
// when absent, effective_saturation also when fail-closed.
type parsePoolJSON struct {
	Name                string             `json:"name"`
	ReadyEndpoints      *float64           `json:"ready_endpoints"`
	EndpointQueue       map[string]float64 `json:"endpoint_queue,omitempty"`
	RequestRunning      *float64           `json:"request_running"`
	InflightRequests    *float64           `json:"inflight_requests"`
	InflightTokens      *float64           `json:"inflight_tokens"`
	FlowControlQueue    *float64           `json:"flow_control_queue"`
	Saturation          map[string]float64 `json:"saturation,omitempty"`
	StaleEndpoints      *float64           `json:"stale_endpoints"`
	EffectiveSaturation *float64           `json:"effective_saturation"`
	ReadFrom            map[string]string  `json:"read_from"`
}

type parseRatesJSON struct {
	IntervalSeconds  float64  `json:"interval_seconds"`
	PromptTokens     *float64 `json:"prompt_tokens_per_second"`
	GenerationTokens *float64 `json:"generation_tokens_per_second"`
	Requests         *float64 `json:"requests_per_second"`
	CPUCores         *float64 `json:"cpu_cores"`
	CPUPercent       *float64 `json:"cpu_percent"`
	PrefixCacheHit   *float64 `json:"prefix_cache_hit_ratio"`
	TTFTP95          *float64 `json:"ttft_p95_seconds"`
	Reset            bool     `json:"reset"`
	Suspect          string   `json:"suspect,omitempty"`
}

// known is the page's running, waiting and KV as decide and serve read
// them: NaN (unknown) for a signal with a NaN or infinite sample beside
// finite ones (scrape.Page.NonFinite), whose Page value is the finite
// samples' sum or max.
func known(p *scrape.Page) (running, waiting, kv float64) {
	running, waiting, kv = p.Running, p.Waiting, p.KV
	for _, sig := range p.NonFinite {
		switch sig {
		case "running":
			running = math.NaN()
		case "waiting":
			waiting = math.NaN()
		case "kv":
			kv = math.NaN()
		}
	}
	return running, waiting, kv
}

// jnum is v, or nil (JSON null) when v is absent or not finite.
func jnum(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func (c *ParseCmd) writeJSON(w io.Writer, rows []parseRow) error {
	out := make([]parseJSON, 0, len(rows))
	for _, r := range rows {
		p := r.page
		run, wait, kv := known(p)
		j := parseJSON{
			Source: p.Source, Server: p.Server.String(),
			Running: jnum(run), Waiting: jnum(wait), KVUsage: jnum(kv), Unknown: p.NonFinite,
			Engines: p.Engines, Models: p.Models, ReadFrom: p.Chosen,
			CPUSeconds: jnum(p.CPUSeconds), PromptTokens: jnum(p.PromptTokens),
			GenerationTokens: jnum(p.GenerationTokens), Requests: jnum(p.Requests),
			PrefixHits: jnum(p.PrefixHits), PrefixQueries: jnum(p.PrefixQueries),
			MaxRunning: jnum(p.MaxRunning),
			Suspect:    p.Suspect,
		}
		if j.Models == nil {
			j.Models = []string{}
		}
		if !p.Time.IsZero() {
			j.Time = p.Time.UTC().Format(time.RFC3339Nano)
		}
		if pl := p.Pool; pl != nil {
			j.Pool = &parsePoolJSON{Name: pl.Name, ReadyEndpoints: jnum(pl.Ready), EndpointQueue: pl.EndpointQueue,
				RequestRunning: jnum(pl.RequestRunning), InflightRequests: jnum(pl.InflightRequests), InflightTokens: jnum(pl.InflightTokens),
				FlowControlQueue: jnum(pl.FlowQueue), Saturation: pl.Saturation, StaleEndpoints: jnum(pl.Stale),
				EffectiveSaturation: jnum(pl.Effective), ReadFrom: pl.Chosen}
		}
		if rt := r.rates; rt != nil {
			j.Rates = &parseRatesJSON{
				IntervalSeconds: rt.Interval.Seconds(),
				PromptTokens:    jnum(rt.PromptTokens), GenerationTokens: jnum(rt.GenerationTokens),
				Requests: jnum(rt.Requests), CPUCores: jnum(rt.CPUCores), CPUPercent: jnum(rt.CPUPercent(c.CPURequest)),
				PrefixCacheHit: jnum(recommend.HitFraction(rt.PrefixHits, rt.PrefixQueries)),
				TTFTP95:        jnum(r.ttft),
				Reset:          rt.Reset, Suspect: rt.Suspect,
			}
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
