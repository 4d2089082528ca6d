// Package load drives an OpenAI-compatible endpoint (vLLM, the simulated
// fleet, anything serving /v1/completions or /v1/chat/completions) and
// measures what each request saw, with the definitions of vLLM's `vllm
// bench serve` (vllm/benchmarks/serve.py): TTFT is the time from sending
// the request to the first streamed chunk carrying text; ITL the times
// between successive text chunks (after the first, any chunk with a
// text field, "" too: a token that shows nothing), pooled over all
// requests; TPOT a request's (e2e - TTFT) / (output tokens - 1); e2e the
// time to the last text chunk; output tokens per second the output tokens of all successful
// requests over the run's duration. Output token counts are the server's
// `usage` (stream_options.include_usage), the count of text chunks when a
// server sends none or a count of 0.
//
// Load is closed loop (Concurrency clients, each sending its next request
// when the last one ends, as `vllm bench serve --max-concurrency`), open
// loop at Rate (Poisson arrivals, or gamma-distributed gaps of shape
// Burstiness), or a trace replayed at its timestamps with its token
// counts; the open loop keeps at most MaxConcurrency requests in flight.
// A run is bounded by Duration (no request starts after it, but an
// open-loop arrival due within it and reached on time) and Requests.
package load

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/infscale/infscale/internal/bodyexcerpt"
	"github.com/infscale/infscale/internal/httpurl"
	"github.com/infscale/infscale/pkg/trace"
	"gonum.org/v1/gonum/stat/distuv"
)

// Config is one load run. Exactly one of Concurrency, Rate or Trace is set.
type Config struct {
	// URL is the server's base URL (http://127.0.0.1:8000); the endpoint
	// path is appended.
	URL string
	// Chat selects /v1/chat/completions (messages) instead of
	// /v1/completions (prompt).
	Chat bool
	// Model is the model field ("" leaves it out; Run asks /v1/models).
	Model string
	// PromptTokens is the synthesised prompt's length: that many common
	// English words, each about one token (default 512).
	PromptTokens int
	// MaxTokens is max_tokens of each request (default 128); ignore_eos is
	// set so a vLLM generates all of them.
	MaxTokens int
	// Concurrency is the closed loop's client count.
	Concurrency int
	// Rate is the open loop's arrival rate, requests per second.
	Rate float64
	// Burstiness is the shape of the gamma distribution the open loop's
	// gaps between arrivals are drawn from, their mean 1/Rate (vllm bench
	// serve's --burstiness): 1 (or 0, the default) Poisson arrivals, below
	// 1 burstier, above 1 more regular, +Inf every gap 1/Rate.
	Burstiness float64
	// Goodput, when set, counts the requests that meet each of its SLOs
	// (Summary.Goodput).
	Goodput *Goodput
	// MaxConcurrency bounds the open loop's (Rate, Trace) requests in
	// flight (vllm bench serve's --max-concurrency): an arrival that finds
	// them all taken is sent when one ends, late (Record.Late). 0:
	// DefaultMaxConcurrency.
	MaxConcurrency int
	// Trace is replayed open loop at its timestamps with its token counts.
	Trace *trace.Source
	// Duration bounds the time requests start in (default 60 s).
	Duration time.Duration
	// Requests bounds the requests sent (0: Duration only).
	Requests int
	// Warmup is how many of the first requests are sent but left out of
	// the records (genai-perf's --warmup-request-count); with RampUp, the
	// concurrency's worth of first requests land at arbitrary points of the
	// server's steps, later ones at the steady state's.
	Warmup int
	// RampUp spreads the closed loop's clients' first requests evenly over
	// it (0: all at once).
	RampUp time.Duration
	// Timeout bounds one request (default 5 min).
	Timeout time.Duration
	// Seed seeds the prompts and the open loop's arrivals.
	Seed uint64
	// Client is the HTTP client (default: one with a connection per
	// client).
	Client *http.Client
	// Header is sent with every request, GET /v1/models too: the API key
	// as Authorization: Bearer KEY (vllm bench serve's OPENAI_API_KEY), a
	// gateway's header. A credential's value (Credentials) never appears
	// in an error.
	Header http.Header
	// HeaderSources says where Header's fields came from, for a 401 or
	// 403 to name the credential sent, its scheme and its source (nil:
	// their names and schemes alone).
	HeaderSources HeaderSources
	// Progress, if set, is called after every finished request with the
	// count finished and the count expected (0 when unknown).
	Progress func(done, total int)
}

// Record is one request's measurements: TTFT, ITL and E2E in seconds
// (as vllm bench serve reports them), Start and Late as durations.
type Record struct {
	Start        time.Duration // since the run started
	TTFT         float64       // seconds from the send to the first text chunk
	ITL          []float64     // seconds between successive text chunks
	E2E          float64       // seconds from the send to the last text chunk
	PromptTokens int
	OutputTokens int
	Err          error
	// Late is how long after its arrival time the open loop sent the
	// request because every slot of Config.MaxConcurrency was taken: held
	// for one itself, or due while the loop held an earlier arrival (0:
	// sent on time).
	Late time.Duration
}

// DefaultMaxConcurrency is the open loop's bound on requests in flight
// when Config.MaxConcurrency is 0: the load generator's memory (some tens
// of KiB a request) stays under a GiB whatever the rate; a server that
// keeps up has far fewer in flight.
const DefaultMaxConcurrency = 10000

// Run performs one load run and returns every request's record (in start
// order) and the run's duration: the first (measured) request's send to the
// last successful request's last chunk.
func Run(ctx context.Context, cfg Config) ([]Record, time.Duration, error) {
	p, err := RunPoint(ctx, cfg)
	return p.Records, p.Duration, err
}

// Point is one load run's outcome (RunPoint).
type Point struct {
	// Records are every request's, in start order; Duration the run's
	// (Run's).
	Records  []Record
	Duration time.Duration
	// UnsentFrom is the arrival time, in seconds since the run's start,
	// of the first arrival of the open loop that was due within Duration
	// but not sent because Duration had passed when the loop reached it
	// (behind its schedule: held by Config.MaxConcurrency's slots, or a
	// rate the load generator cannot keep up with); nil when every due
	// arrival was sent. One due within Duration and reached within
	// wakeSlack of its due time is sent, even just past the end.
	UnsentFrom *float64
}

// RunPoint is Run with what the open loop left unsent (Point.UnsentFrom).
func RunPoint(ctx context.Context, cfg Config) (Point, error) {
	if err := cfg.defaults(); err != nil {
		return Point{}, err
	}
	if cfg.Model == "" {
		m, err := DiscoverModel(ctx, cfg.Client, cfg.URL, cfg.Header, cfg.HeaderSources)
		if err != nil {
			return Point{}, err
		}
		cfg.Model = m
	}
	r := &runner{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15))}
	recs, dur, err := r.run(ctx)
	return Point{Records: recs, Duration: dur, UnsentFrom: r.unsent}, err
}

func (c *Config) defaults() error {
	modes := 0
	if c.Concurrency > 0 {
		modes++
	}
	if c.Rate > 0 {
		modes++
	}
	if c.Trace != nil {
		modes++
	}
	if modes != 1 {
		return errors.New("load: want exactly one of concurrency, rate or trace")
	}
	if c.Burstiness == 0 {
		c.Burstiness = 1
	}
	if !(c.Burstiness > 0) {
		return fmt.Errorf("load: burstiness %g: want > 0 (1: Poisson)", c.Burstiness)
	}
	if c.MaxConcurrency == 0 {
		c.MaxConcurrency = DefaultMaxConcurrency
	}
	if c.MaxConcurrency < 0 {
		return fmt.Errorf("load: max concurrency %d: want >= 1", c.MaxConcurrency)
	}
	if c.PromptTokens <= 0 {
		c.PromptTokens = 512
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = 128
	}
	if c.Duration <= 0 {
		c.Duration = time.Minute
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Minute
	}
	if c.Client == nil {
		c.Client = NewClient(max(c.Concurrency, 64))
	}
	c.URL = strings.TrimRight(c.URL, "/")
	return nil
}

// NewClient returns load's HTTP client (Config.Client's default), keeping
// up to conns idle connections: it follows no redirect (the redirect is
// answered, and redirected names it), so no request, nor its header,
// leaves the server CheckLoopback checked; it asks for no compression and
// gives up a connection not made within 5 s.
func NewClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxIdleConns: conns, DisableCompression: true,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// modelsTimeout bounds a GET of /v1/models.
const modelsTimeout = 10 * time.Second

// newRequest is a request of load's with header's fields set (a copy).
func newRequest(ctx context.Context, method, url string, body io.Reader, header http.Header) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = slices.Clone(vs)
	}
	return req, nil
}

// DiscoverModel returns the first model id of GET URL/v1/models, sent
// with header (Config.Header, whose sources are Config.HeaderSources), or
// an error saying the server did not answer within 10 s, or answered a
// status other than 2xx: its status and message (statusError, redacted),
// then after a status every request would get too (refusesEveryRequest:
// 401, 403, 429) what to do about it (statusHint), after one of a server
// not ready yet (502, 503, 504) that it is not and how to wait for it,
// after any other to give --served-model-name. The errors of a server
// not ready (nothing listens, no answer, a 502, 503 or 504) wrap
// ErrNotReady.
func DiscoverModel(parent context.Context, client *http.Client, base string, header http.Header, sources HeaderSources) (string, error) {
	base = strings.TrimRight(base, "/")
	ctx, cancel := context.WithTimeout(parent, modelsTimeout)
	defer cancel()
	req, err := newRequest(ctx, http.MethodGet, base+"/v1/models", nil, header)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		switch {
		case errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil:
			return "", notReady{fmt.Errorf("load: finding the model: GET %s/v1/models: no answer within %s", base, modelsTimeout), "give --served-model-name, or check that the URL is the server's; " + waitHint}
		case parent.Err() != nil:
			return "", err
		case refused(err):
			// Nothing listens there: --served-model-name would not help.
			return "", notReady{fmt.Errorf("load: finding the model: %w", err), "is the server up? check the URL's host and port; a vLLM listens once its model is loaded: " + waitHint}
		case closedEarly(err):
			return "", notReady{fmt.Errorf("load: finding the model: %w", err), "the connection closed before an answer: a server starting, or a port-forward whose pod is not ready? " + waitHint}
		}
		return "", fmt.Errorf("load: finding the model: %w (check the URL's scheme, host and port)", err)
	}
	defer resp.Body.Close()
	if err := redirected(resp, "/v1/models"); err != nil {
		return "", fmt.Errorf("load: GET %s/v1/models: %w", base, err)
	}
	if resp.StatusCode/100 != 2 {
		hint := "give --served-model-name"
		switch {
		case resp.StatusCode == http.StatusBadRequest:
			hint = "" // a GET without a body: the server's message says why (an HTTP request to an HTTPS port)
		case refusesEveryRequest(resp.StatusCode):
			hint = statusHint(resp.StatusCode, header, sources)
		case unavailable(resp.StatusCode):
			return "", notReady{redact(fmt.Errorf("load: GET %s/v1/models: %w", base, statusError(resp, "", header)), header), notReadyHint}
		}
		return "", redact(fmt.Errorf("load: GET %s/v1/models: %w", base, statusError(resp, hint, header)), header)
	}
	list, err := readModels(resp, header)
	if err != nil {
		return "", fmt.Errorf("load: GET %s/v1/models: %w: is the URL an OpenAI-compatible server's base URL? (or give --served-model-name)", base, err)
	}
	if len(list) == 0 {
		return "", fmt.Errorf("load: GET %s/v1/models lists no model (give --served-model-name)", base)
	}
	return list[0].ID, nil
}

// modelCard is an entry of GET /v1/models' list (vLLM's ModelCard): its
// id and max_model_len (0: none given).
type modelCard struct {
	ID          string `json:"id"`
	MaxModelLen int    `json:"max_model_len"`
}

// readModels reads resp's body (at most 1 MiB), a 2xx of GET /v1/models,
// as an OpenAI model list; an error says what it is instead: empty, or
// not JSON (quoted: a proxy's login page by its title).
func readModels(resp *http.Response, header http.Header) ([]modelCard, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the model list: %w", resp.Status, err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, fmt.Errorf("%s with an empty body, not a model list", resp.Status)
	}
	var list struct {
		Data []modelCard `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		what := ""
		if ct, _, perr := mime.ParseMediaType(resp.Header.Get("Content-Type")); perr == nil {
			what = " but " + ct
		}
		if ex := quote(resp.Status, resp.Header.Get("Content-Type"), body, header); ex != "" {
			what += fmt.Sprintf(": %q", ex)
		}
		return nil, fmt.Errorf("not a model list%s (%v)", what, err)
	}
	return list.Data, nil
}

// ErrMaxModelLenUnknown is MaxModelLen's error when GET /v1/models gives
// no model list the run's requests would not also be refused by: a
// status other than 2xx that refusesEveryRequest does not name (a server
// or gateway without /v1/models: 404), a 2xx that is no JSON model
// list, or a list without the run's model (a --served-model-name it does
// not list). The max_model_len is then 0, unknown, and the run may go on.
var ErrMaxModelLenUnknown = errors.New("the server's max_model_len is unknown")

// MaxModelLen returns the max_model_len GET URL/v1/models gives the
// model (vLLM's ModelCard: the longest prompt plus output it serves), or
// 0 when the server gives none (not every OpenAI-compatible server does;
// nil error). The request is sent with header (Config.Header, from
// sources). Errors: the request's; a redirect (redirected); a status
// every request would get too (refusesEveryRequest: 401, 403, 429), its
// status and message (statusError, redacted) and statusHint's advice;
// any other status than 2xx, or a body that is no model list, quoted the
// same way and wrapping ErrMaxModelLenUnknown, with 0; likewise a list
// without model, naming (the first five of) the ids it lists.
func MaxModelLen(ctx context.Context, client *http.Client, base, model string, header http.Header, sources HeaderSources) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	req, err := newRequest(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/v1/models", nil, header)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("load: GET %s/v1/models: %w", base, err)
	}
	defer resp.Body.Close()
	if err := redirected(resp, "/v1/models"); err != nil {
		return 0, fmt.Errorf("load: GET %s/v1/models: %w", strings.TrimRight(base, "/"), err)
	}
	if resp.StatusCode/100 != 2 {
		if refusesEveryRequest(resp.StatusCode) {
			return 0, redact(fmt.Errorf("load: GET %s/v1/models: %w", base, statusError(resp, statusHint(resp.StatusCode, header, sources), header)), header)
		}
		return 0, redact(fmt.Errorf("load: GET %s/v1/models: %w: %w", base, statusError(resp, "", header), ErrMaxModelLenUnknown), header)
	}
	list, err := readModels(resp, header)
	if err != nil {
		return 0, fmt.Errorf("load: GET %s/v1/models: %w: %w", base, err, ErrMaxModelLenUnknown)
	}
	var ids []string
	for _, m := range list {
		if m.ID == model || model == "" {
			return max(m.MaxModelLen, 0), nil
		}
		ids = append(ids, strconv.Quote(m.ID))
	}
	listed := "no model"
	if len(ids) > 0 {
		listed = "only " + strings.Join(ids[:min(len(ids), 5)], ", ")
		if len(ids) > 5 {
			listed += fmt.Sprintf(" and %d more", len(ids)-5)
		}
	}
	return 0, redact(fmt.Errorf("load: GET %s/v1/models lists %s, not %q (a vLLM answers 404 to a model it does not serve; a llama.cpp server of one model takes any name): %w", base, listed, model, ErrMaxModelLenUnknown), header)
}

type runner struct {
	cfg   Config
	rng   *rand.Rand
	mu    sync.Mutex
	recs  []Record
	begin time.Time
	last  time.Time
	sent  int
	done  int
	// unsent is Point.UnsentFrom (the open loop's goroutine alone sets it).
	unsent *float64
}

// wakeSlack is how long after its due time the open loop may reach an
// arrival and still count it on time (a timer's wake-up on a busy
// machine): such an arrival due within Duration is sent even when the
// wake-up passed the end.
const wakeSlack = 100 * time.Millisecond

// cutAt notes that the open loop's arrival due at second at was not sent
// (take refused it) because Duration had passed, not Requests
// (Point.UnsentFrom).
func (r *runner) cutAt(at float64) {
	r.mu.Lock()
	capped := r.cfg.Requests > 0 && r.sent >= r.cfg.Requests
	r.mu.Unlock()
	if !capped {
		r.unsent = &at
	}
}

// job is one request to send.
type job struct {
	prompt, output int
	seed           uint64
	late           time.Duration // held for a slot (Record.Late)
}

// total is the requests expected (0: unknown, bounded by time).
func (r *runner) total() int { return r.cfg.Requests }

// take reserves the next request slot; false once the run's bounds are
// reached.
func (r *runner) take(now time.Time) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.begin) >= r.cfg.Duration || (r.cfg.Requests > 0 && r.sent >= r.cfg.Requests) {
		return 0, false
	}
	r.sent++
	r.recs = append(r.recs, Record{})
	return r.sent - 1, true
}

func (r *runner) record(i int, rec Record) {
	r.mu.Lock()
	r.recs[i] = rec
	if end := r.begin.Add(rec.Start + time.Duration(rec.E2E*float64(time.Second))); rec.Err == nil && end.After(r.last) {
		r.last = end
	}
	r.done++
	done := r.done
	r.mu.Unlock()
	if r.cfg.Progress != nil {
		r.cfg.Progress(done, r.total())
	}
}

func (r *runner) run(ctx context.Context) ([]Record, time.Duration, error) {
	r.begin = time.Now()
	var wg sync.WaitGroup
	send := func(i int, j job) {
		defer wg.Done()
		rec := r.one(ctx, j)
		rec.Late = j.late
		r.record(i, rec)
	}
	// The open loop's slots (Config.MaxConcurrency): slot takes one for an
	// arrival due at due, waiting while all are taken (false when ctx ends
	// first), and returns how late past due the arrival is sent: 0 when a
	// slot was free and the loop was not held since due (it was sent on
	// time, give or take the timer's wake-up); else the time since due.
	// An arrival due while the loop held an earlier one is late too, slot
	// free or not when the loop reaches it: several slots freed together
	// (a batch's requests ending at one step) let it through at once.
	// The request gives its slot back when it ends.
	slots := make(chan struct{}, max(r.cfg.MaxConcurrency, 1))
	var heldTill time.Time // when the loop's last wait for a slot ended
	slot := func(due time.Time) (time.Duration, bool) {
		select {
		case slots <- struct{}{}:
			if now := time.Now(); due.Before(heldTill) {
				return max(now.Sub(due), 1), true
			}
			return 0, true
		default:
		}
		select {
		case slots <- struct{}{}:
			heldTill = time.Now()
			return max(heldTill.Sub(due), 1), true
		case <-ctx.Done():
			return 0, false
		}
	}
	// arrive is the open loop's arrival due at second at (of prompt and
	// output tokens): it waits until then and for a slot, then sends it;
	// false when the run ends there (interrupted, or its bounds reached:
	// cutAt notes a due arrival left unsent).
	arrive := func(at float64, prompt, output int) bool {
		due := r.begin.Add(time.Duration(at * float64(time.Second)))
		if !sleep(ctx, time.Until(due)) {
			return false
		}
		late, ok := slot(due)
		if !ok {
			return false
		}
		// Reached on time, give or take the timer's wake-up: taken at its
		// due time, so one due just before the end is sent, not cut.
		now := time.Now()
		if late == 0 && now.Sub(due) <= wakeSlack {
			now = due
		}
		i, ok := r.take(now)
		if !ok {
			<-slots
			r.cutAt(at)
			return false
		}
		j := job{prompt: prompt, output: output, seed: r.rng.Uint64(), late: late} // the seed drawn here: rng is the loop's
		wg.Add(1)
		go func() {
			defer func() { <-slots }()
			send(i, j)
		}()
		return true
	}
	switch {
	case r.cfg.Concurrency > 0:
		for c := range r.cfg.Concurrency {
			wg.Add(1)
			delay := r.cfg.RampUp * time.Duration(c) / time.Duration(r.cfg.Concurrency)
			seed := r.rng.Uint64()
			go func() {
				defer wg.Done()
				if delay >= r.cfg.Duration {
					return // a client ramped up past Duration starts nothing
				}
				if !sleep(ctx, delay) {
					return
				}
				rng := rand.New(rand.NewPCG(seed, 1))
				for ctx.Err() == nil {
					i, ok := r.take(time.Now())
					if !ok {
						return
					}
					wg.Add(1)
					send(i, job{prompt: r.cfg.PromptTokens, output: r.cfg.MaxTokens, seed: rng.Uint64()})
				}
			}()
		}
	case r.cfg.Rate > 0:
		// Arrivals in seconds: an arrival at or past Duration starts
		// nothing and ends the run at once (not after sleeping out a gap of
		// 20 s at 0.05 req/s; a gap of 1e300 s as a time.Duration
		// overflows and would send every request at once).
		at := 0.0
		gap := r.gaps()
		for ctx.Err() == nil {
			at += gap()
			if !(at < r.cfg.Duration.Seconds()) {
				break
			}
			if !arrive(at, r.cfg.PromptTokens, r.cfg.MaxTokens) {
				break
			}
		}
	default:
		rd, err := r.cfg.Trace.Open()
		if err != nil {
			return nil, 0, err
		}
		defer rd.Close()
		for ctx.Err() == nil {
			q, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				wg.Wait()
				return nil, 0, err
			}
			// Compared in seconds: an arrival past Duration starts nothing
			// (time.Duration of 1e15 s overflows and would send it at once).
			if !(q.Arrival < r.cfg.Duration.Seconds()) {
				break
			}
			if !arrive(q.Arrival, int(q.Prompt), int(q.Output)) {
				break
			}
		}
	}
	wg.Wait()
	recs := r.recs
	if ctx.Err() != nil {
		// A request the interrupt cancelled did not fail: it is left out,
		// not counted as an error.
		recs = slices.DeleteFunc(recs, func(rec Record) bool { return errors.Is(rec.Err, context.Canceled) })
	}
	// The duration starts at the first measured request's send (as
	// genai-perf's), not at the run's start: an open loop's first arrival
	// comes a random gap after it (1/Rate on average), a trace's at its
	// first timestamp, and that idle time is no part of the throughput.
	from := r.begin
	if w := min(r.cfg.Warmup, len(recs)); w > 0 {
		from = r.begin.Add(recs[w-1].Start)
		recs = recs[w:]
	}
	if len(recs) > 0 {
		first := slices.MinFunc(recs, func(a, b Record) int { return cmp.Compare(a.Start, b.Start) })
		from = r.begin.Add(first.Start)
	}
	dur := r.last.Sub(from)
	if dur <= 0 {
		dur = time.Since(from)
	}
	return recs, dur, ctx.Err()
}

// gaps returns the open loop's source of gaps between arrivals, in
// seconds: gamma-distributed with shape Burstiness and mean 1/Rate (vllm
// bench serve's get_request), exponential at 1 (ExpFloat64: a Poisson
// run's arrivals depend on the seed alone), 1/Rate each at +Inf. The draw is of unit
// rate, divided by the shape and then the rate: a rate parameter of
// shape x Rate underflows to 0 at an extreme small shape (5e-324 at 0.5
// req/s, which gonum refuses with a panic) and overflows to +Inf at a
// large one (1e306 at 1000 req/s, every gap 0 and the point one burst).
// A gap may be +Inf (a tiny shape's rare huge gap): no later arrival.
func (r *runner) gaps() func() float64 {
	b, rate := r.cfg.Burstiness, r.cfg.Rate
	switch {
	case b == 1:
		return func() float64 { return r.rng.ExpFloat64() / rate }
	case math.IsInf(b, 1):
		return func() float64 { return 1 / rate }
	}
	g := distuv.Gamma{Alpha: b, Beta: 1, Src: r.rng}
	return func() float64 { return g.Rand() / b / rate }
}

// sleep waits d or until ctx is done; false when ctx is done.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// vocabulary is common English words, each one token in the Llama-3, GPT
// and Qwen tokenizers when preceded by a space.
var vocabulary = strings.Fields(`the of and to in is was for on that with as by at from his it an were are which this
be or has had first one their its new after who they have her she two been other when there all during into school
time may years more most only over city some world would where later up such used many can state about national out
known university united then made between through three years team number each part people well also back under
high game name group family series while season music both water work line house film book world great day long`)

// Prompt is n words drawn from a fixed vocabulary with seed: about n
// tokens for a real tokenizer, exactly n for the simulated fleet. Distinct
// seeds give distinct prompts, so a server's prefix cache does not help.
func Prompt(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 2))
	var b strings.Builder
	b.Grow(n * 6)
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[rng.IntN(len(vocabulary))])
	}
	return b.String()
}

// chunk is the part of a streamed completion chunk the client reads. A
// text field is nil when the chunk has none (or null), "" when it has an
// empty one.
type chunk struct {
	Choices []struct {
		Text  *string `json:"text"`
		Delta struct {
			Content *string `json:"content"`
			// A reasoning model's thinking: vLLM's delta.reasoning (since
			// its PR 27752), reasoning_content before it (and DeepSeek's).
			Reasoning        *string `json:"reasoning"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"delta"`
		// FinishReason is vLLM's stop, length, abort, error or
		// repetition (raw: a server may send an object).
		FinishReason json.RawMessage `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	// An error event in the stream: vLLM's {"error": {"message": ...}}
	// (older: {"object": "error", "message": ...}), or {"error": "..."}.
	Error   json.RawMessage `json:"error"`
	Object  string          `json:"object"`
	Message string          `json:"message"`
}

// streamError is the message of an error event, "" when c is none.
func (c chunk) streamError() string {
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return errorMessage(c.Error)
	}
	if c.Object == "error" {
		return cmp.Or(c.Message, "(no message)")
	}
	return ""
}

// errorMessage is the message of an error's JSON: a string; an object's
// "message" (llama.cpp's {"code", "message", "type"}); or its "error", a
// string or an object with a message (vLLM's {"error": {"message": ...}}).
// Anything else (not JSON, no message) is raw itself.
func errorMessage(raw []byte) string {
	var text string
	var e struct {
		Message string          `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	switch {
	case json.Unmarshal(raw, &text) == nil && text != "":
		return text
	case json.Unmarshal(raw, &e) != nil:
	case e.Message != "":
		return e.Message
	case len(e.Error) > 0 && string(e.Error) != "null":
		return errorMessage(e.Error)
	}
	return string(raw)
}

// givenUp returns the finish_reason of a choice of c the server gave up
// on ("abort" or "error", vLLM's FinishReason), "" when none did.
func (c chunk) givenUp() string {
	for _, ch := range c.Choices {
		var why string
		if json.Unmarshal(ch.FinishReason, &why) == nil && (why == "abort" || why == "error") {
			return why
		}
	}
	return ""
}

// token reports whether a choice of c carries a token's text: text when
// some of it is not empty; any when one has a text field at all, "" too
// (vLLM streams a chunk for every token, its text "" for a special token
// or a part of a character). A chat's role chunk before the first token
// ("content": "") is one only by the second rule; llama.cpp's last chunk
// ("delta": {} beside its finish_reason) by neither.
func (c chunk) token() (text, some bool) {
	for _, ch := range c.Choices {
		for _, f := range []*string{ch.Text, ch.Delta.Content, ch.Delta.Reasoning, ch.Delta.ReasoningContent} {
			if f != nil {
				some = true
				text = text || *f != ""
			}
		}
	}
	return text, some
}

// finished reports whether a choice of c gives a finish_reason (not null,
// not ""): the server's last chunk of an answer, usage aside.
func (c chunk) finished() bool {
	for _, ch := range c.Choices {
		var why string
		if raw := string(ch.FinishReason); raw != "" && raw != "null" && (json.Unmarshal(ch.FinishReason, &why) != nil || why != "") {
			return true
		}
	}
	return false
}

// one sends one streaming request and measures it. A request still
// unanswered (or still streaming) after Timeout fails saying so.
func (r *runner) one(ctx context.Context, j job) Record {
	rec := r.request(ctx, j)
	if rec.Err != nil && errors.Is(rec.Err, context.DeadlineExceeded) && ctx.Err() == nil {
		what := "no answer"
		if rec.TTFT > 0 {
			what = "the stream did not end"
		}
		rec.Err = fmt.Errorf("timed out: %s within the timeout of %s (--timeout): %w", what, r.cfg.Timeout, rec.Err)
	}
	rec.Err = redact(rec.Err, r.cfg.Header)
	return rec
}

// Credentials returns the values of header's fields that are secrets, to
// be kept out of every output: those of Authorization, Proxy-Authorization
// and Cookie, and of a field whose name says key, token, secret or auth
// (X-Api-Key); of a value "SCHEME CREDENTIALS" (Bearer KEY) also the
// credentials alone.
func Credentials(header http.Header) []string {
	var out []string
	for name, vs := range header {
		if !isCredential(name) {
			continue
		}
		for _, v := range vs {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
			if _, cred, ok := strings.Cut(v, " "); ok && strings.TrimSpace(cred) != "" {
				out = append(out, strings.TrimSpace(cred))
			}
		}
	}
	// The longest first: a value replaced whole, not its credentials part.
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// isCredential reports whether a header field of name holds a secret
// (Credentials).
func isCredential(name string) bool {
	n := strings.ToLower(name)
	return slices.Contains([]string{"authorization", "proxy-authorization", "cookie"}, n) ||
		strings.Contains(n, "key") || strings.Contains(n, "token") || strings.Contains(n, "secret") || strings.Contains(n, "auth")
}

// redact returns err with every credential of header (Credentials) in its
// text replaced by [redacted] (a server that echoes the key it refused),
// err itself when none is there. The result wraps err (errors.Is).
// load's own advice in it (statusError's hint) is kept as written: it
// names where a credential came from, never its value, and a short key
// ("k") replaced in it read "chec[redacted] the [redacted]ey".
func redact(err error, header http.Header) error {
	if err == nil {
		return nil
	}
	creds := Credentials(header)
	text := func(s string) string {
		for _, c := range creds {
			s = strings.ReplaceAll(s, c, "[redacted]")
		}
		return s
	}
	msg := err.Error()
	var h hinted
	if errors.As(err, &h) && strings.Contains(msg, " ("+h.hint+")") {
		own := " (" + h.hint + ")"
		i := strings.LastIndex(msg, own)
		msg = text(msg[:i]) + own + text(msg[i+len(own):])
	} else {
		msg = text(msg)
	}
	if msg == err.Error() {
		return err
	}
	return redacted{msg, err}
}

// quote is bodyexcerpt.Excerpt of a server's body (its status and
// Content-Type as Excerpt takes them) with every credential of header
// (Credentials) replaced by [redacted] first: a server may echo the key
// it refused, and redacted after the cut at bodyexcerpt.Max a key across
// it showed its first bytes.
func quote(status, contentType string, body []byte, header http.Header) string {
	for _, c := range Credentials(header) {
		body = bytes.ReplaceAll(body, []byte(c), []byte("[redacted]"))
	}
	return bodyexcerpt.Excerpt(status, contentType, body)
}

// hinted is an error with load's own advice after it in parentheses
// (statusError's hint).
type hinted struct {
	err  error
	hint string
}

func (e hinted) Error() string { return e.err.Error() + " (" + e.hint + ")" }
func (e hinted) Unwrap() error { return e.err }

// redacted is an error said with its credentials replaced (redact).
type redacted struct {
	msg string
	err error
}

func (e redacted) Error() string { return e.msg }
func (e redacted) Unwrap() error { return e.err }

// maxChunks is the most text chunks a request of max_tokens output may
// stream: twice max_tokens and 16 more, room for a server that splits a
// token's text in two. A text chunk carries at least one token, so a
// stream past it ignores max_tokens (and ignore_eos would not end it).
func maxChunks(output int) int { return 2*output + 16 }

// statusError is the error of resp, an answer that is not the one
// asked for: its status, an excerpt of its body (quote: an HTML
// page by its title, any other by its first line, at most 200 bytes of
// the first 4 KiB; a proxy's error page is a screenful) and hint ("":
// none) in parentheses. The caller redacts the rest (redact).
func statusError(resp *http.Response, hint string, header http.Header) error {
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	err := errors.New(resp.Status)
	if ex := quote(resp.Status, resp.Header.Get("Content-Type"), msg, header); ex != "" {
		err = fmt.Errorf("%s: %s", resp.Status, ex)
	}
	if hint != "" {
		err = hinted{err, hint}
	}
	return err
}

// headBuffer keeps the first 4 KiB written to it (a body's start, as
// statusError reads of one).
type headBuffer []byte

func (h *headBuffer) Write(p []byte) (int, error) {
	if n := 4<<10 - len(*h); n > 0 {
		*h = append(*h, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

// doneDrain bounds the read of a response's rest after data: [DONE].
const doneDrain = time.Second

// newCompletion is the streamed request of j to c's endpoint and its
// path: /v1/completions, or /v1/chat/completions when c.Chat.
func (c *Config) newCompletion(ctx context.Context, j job) (string, *http.Request, error) {
	body := map[string]any{"max_tokens": j.output, "stream": true, "ignore_eos": true, "temperature": 0,
		"stream_options": map[string]any{"include_usage": true}}
	if c.Model != "" {
		body["model"] = c.Model
	}
	path := "/v1/completions"
	prompt := Prompt(j.prompt, j.seed)
	if c.Chat {
		path = "/v1/chat/completions"
		body["messages"] = []map[string]string{{"role": "user", "content": prompt}}
	} else {
		body["prompt"] = prompt
	}
	b, _ := json.Marshal(body)
	req, err := newRequest(ctx, http.MethodPost, c.URL+path, bytes.NewReader(b), c.Header)
	if err != nil {
		return path, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	return path, req, nil
}

// request is one's request, bounded by Timeout.
func (r *runner) request(ctx context.Context, j job) Record {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	path, req, err := r.cfg.newCompletion(ctx, j)
	start := time.Now()
	rec := Record{Start: start.Sub(r.begin), PromptTokens: j.prompt}
	if err != nil {
		rec.Err = err
		return rec
	}
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		rec.Err = err
		return rec
	}
	defer resp.Body.Close()
	if err := redirected(resp, path); err != nil {
		rec.Err = err
		return rec
	}
	if resp.StatusCode != http.StatusOK {
		hint := statusHint(resp.StatusCode, r.cfg.Header, r.cfg.HeaderSources)
		if resp.StatusCode == http.StatusNotFound {
			// Which endpoint: a server or gateway may serve one alone.
			other, otherPath := "chat", "/v1/chat/completions"
			if r.cfg.Chat {
				other, otherPath = "completions", "/v1/completions"
			}
			hint += fmt.Sprintf(": this request went to %s; --endpoint %s sends %s, which a server may serve alone", path, other, otherPath)
		}
		rec.Err = statusError(resp, hint, r.cfg.Header)
		return rec
	}
	var head headBuffer // the body's start, quoted when it is no stream
	sc := bufio.NewScanner(io.TeeReader(resp.Body, &head))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var last time.Time
	chunks := 0
	usageTokens := 0
	done := false     // the stream's data: [DONE] came
	finished := false // a chunk gave a finish_reason
	event := ""       // the SSE event field of the event being read
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			event = "" // an event ends at a blank line
			continue
		}
		if name, ok := bytes.CutPrefix(line, []byte("event:")); ok {
			event = string(bytes.TrimSpace(name))
			continue
		}
		// An error event: llama.cpp's server before its PR 16109 (2025)
		// wrote a field of its own, error: {"code", "message", "type"},
		// then data: [DONE]; the event-stream standard's way is event:
		// error before its data. Either is the server's failure, not a
		// chunk to skip (the [DONE] after it read as a success).
		raw, isError := bytes.CutPrefix(line, []byte("error:"))
		data, isData := bytes.CutPrefix(line, []byte("data:"))
		if isData && event == "error" {
			raw, isError = data, true
		}
		if isError {
			if sc.Err() != nil {
				break // a line the read broke off in: said below
			}
			msg := errorMessage(bytes.TrimSpace(raw))
			rec.Err = fmt.Errorf("the server streamed an error after %d text chunks: %s", chunks, quote("", "", []byte(msg), r.cfg.Header))
			return rec
		}
		if !isData {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			// To the end, so that the connection is reused; but the answer
			// is complete: a response kept open past [DONE] is cut after
			// doneDrain, not left to hold the client until the timeout.
			drained := time.AfterFunc(doneDrain, cancel)
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			drained.Stop()
			done = true
			break
		}
		now := time.Now()
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			if sc.Err() != nil {
				// The rest of a line the read broke off in (the timeout, a
				// reset): said below as what broke it, not a bad chunk.
				break
			}
			rec.Err = fmt.Errorf("bad stream chunk after %d text chunks: %v: %s", chunks, err, quote("", "", data, r.cfg.Header))
			return rec
		}
		if msg := c.streamError(); msg != "" {
			// The server gave up on the request mid-stream: a failure,
			// not an answer cut short that reads as a success.
			rec.Err = fmt.Errorf("the server streamed an error after %d text chunks: %s", chunks, quote("", "", []byte(msg), r.cfg.Header))
			return rec
		}
		if why := c.givenUp(); why != "" {
			// vLLM ends a request it aborted (a pause, a shutdown) with
			// finish_reason abort: an answer cut short, not a success.
			rec.Err = fmt.Errorf("the server ended the request with finish_reason %q after %d text chunks (it aborted it: was it paused, restarted or overloaded?)", why, chunks)
			return rec
		}
		finished = finished || c.finished()
		if c.Usage != nil {
			usageTokens = c.Usage.CompletionTokens
			if c.Usage.PromptTokens > 0 {
				rec.PromptTokens = c.Usage.PromptTokens
			}
		}
		// The first token is the first chunk with text (TTFT: a chat's role
		// chunk comes before it); after it every chunk of a token's text,
		// empty or not, as vllm bench serve counts them, so that e2e and
		// ITL take in the tokens that show nothing (after an end of turn
		// under ignore_eos).
		if text, some := c.token(); !text && (chunks == 0 || !some) {
			continue
		}
		if chunks == maxChunks(j.output) {
			// A server that ignores max_tokens streams on until the
			// timeout, its intervals kept a float each: tens of MB a
			// second of a fast stream, gigabytes at a few clients.
			rec.Err = fmt.Errorf("the server streamed more than %d text chunks for max_tokens %d: it does not honour max_tokens (each text chunk carries at least one token)", chunks, j.output)
			return rec
		}
		if chunks == 0 {
			rec.TTFT = now.Sub(start).Seconds()
		} else {
			rec.ITL = append(rec.ITL, now.Sub(last).Seconds())
		}
		last = now
		chunks++
	}
	if err := sc.Err(); err != nil {
		switch {
		case ctx.Err() != nil: // the timeout (one names it) or an interrupt
			rec.Err = err
		case errors.Is(err, bufio.ErrTooLong):
			rec.Err = fmt.Errorf("bad stream after %d text chunks: a line over 4 MiB", chunks)
		case finished:
			// The text came whole, but a broken stream is a failed request
			// to vllm bench serve (aiohttp's read raises, and any exception
			// is success=False), genai-perf (curl's error is HTTP code 400
			// to perf_analyzer) and AIPerf alike: counted as they count it.
			rec.Err = fmt.Errorf("the connection broke after the answer's finish_reason (%d text chunks), before data: [DONE]: a failure, as vllm bench serve and genai-perf count a broken stream, though its text came whole (the server or a proxy closed or reset it): %w", chunks, err)
		default:
			// A chunked body without its last chunk (unexpected EOF) or a
			// reset: the server died mid-answer, as a clean close without
			// [DONE] says below.
			rec.Err = fmt.Errorf("cut off: the connection broke after %d text chunks, before data: [DONE] (the server closed or reset it mid-answer): %w", chunks, err)
		}
		return rec
	}
	if chunks == 0 {
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			// What came instead, quoted: a proxy's login page by its title.
			what := fmt.Sprintf("the answer is %q", ct)
			if len(bytes.TrimSpace(head)) == 0 {
				what = fmt.Sprintf("the answer is %s with an empty body (Content-Type %q)", resp.Status, ct)
			} else if ex := quote(resp.Status, ct, head, r.cfg.Header); ex != "" {
				what += fmt.Sprintf(" (%q)", ex)
			}
			rec.Err = fmt.Errorf("no output: %s, not a stream (text/event-stream): load sends \"stream\": true and needs a server that streams (an OpenAI-compatible one)", what)
		} else {
			rec.Err = errors.New("no output: the stream ended without a chunk that carries text")
		}
		return rec
	}
	if !done && !finished {
		// A clean end after a finish_reason is an answer whole: TGI sent no
		// [DONE] before its 2.2. Without either, the server died mid-answer.
		rec.Err = fmt.Errorf("cut off: the stream ended after %d text chunks without data: [DONE] (the server closed it mid-answer)", chunks)
		return rec
	}
	rec.E2E = last.Sub(start).Seconds()
	// A usage of 0 completion tokens beside streamed text (a proxy's
	// placeholder usage) is no count: the chunks are, as vllm bench serve
	// falls back when its usage count is 0.
	rec.OutputTokens = chunks
	if usageTokens > 0 {
		rec.OutputTokens = usageTokens
	}
	return rec
}

// redirected returns an error for a redirect (a 3xx with a Location) of
// the request to path, nil for any other answer. Load's client does not
// follow redirects: a 301, 302 or 303 turns the POST into a GET (which a
// server answers 405, hiding the redirect), and one to another host would
// leave the loopback check behind (CheckLoopback). The error names where
// the server redirects and the base URL to give instead; a redirect to
// another path, or with a query (a proxy's login page), that it is no API
// moved and to give the API's own URL or the proxy's key.
func redirected(resp *http.Response, path string) error {
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil
	}
	loc, err := resp.Location()
	if err != nil {
		return nil // no Location: not a redirect to follow, a status like any other
	}
	if !strings.HasSuffix(loc.Path, path) || loc.RawQuery != "" || loc.Fragment != "" {
		// Not the API moved: a proxy's login page (its query the page to
		// return to), whose URL is no base URL to give.
		return fmt.Errorf("%s: the server redirects to %s, not to %s under another base URL: a proxy's login page? load follows no redirect: "+
			"give the URL of the server's API itself, or what the proxy takes (its key with --header 'NAME: VALUE')", resp.Status, loc, path)
	}
	u := *loc
	u.Path, u.RawPath = strings.TrimSuffix(loc.Path, path), ""
	return fmt.Errorf("%s: the server redirects to %s, which load does not follow (a 301, 302 or 303 turns the POST into a GET, and a redirect may leave loopback): give %s as the URL", resp.Status, loc, u.String())
}

// CheckLoopback refuses a URL whose host is not a loopback address (or a
// name resolving only to loopback addresses), so that a load test cannot be
// pointed at a shared server by accident.
func CheckLoopback(ctx context.Context, raw string) error {
	u, err := httpurl.Parse(raw)
	if errors.Is(err, httpurl.ErrPort) {
		return fmt.Errorf("%q: %v", raw, err)
	}
	if err != nil {
		return fmt.Errorf("%q: want an http(s) base URL such as http://127.0.0.1:8000", raw)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return fmt.Errorf("%s is not a loopback address (pass --allow-remote to load a server you own)", host)
		}
		return nil
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return fmt.Errorf("URL %s: host %s does not resolve (%w): check the URL, or give the server's IP address", raw, host, err)
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return fmt.Errorf("%s resolves to %s, not a loopback address (pass --allow-remote to load a server you own)", host, ip.IP)
		}
	}
	return nil
}

// percentile is numpy's default (linear) percentile of sorted values, p in
// [0, 100]; NaN for none.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(rank-float64(lo))
}
