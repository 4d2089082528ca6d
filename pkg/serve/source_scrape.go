package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/internal/sourcekey"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/histogram"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/scrape"
)

// ScrapeSource reads targets by scraping their `scrape:` URLs (embedded
// mode, no Prometheus): current replicas are the pages that answered, the
// gauges are pkg/scrape's Aggregate, the latency quantiles and demand rates
// come from the increase between this source's own scrapes (unknown until
// two scrapes span some requests), held from an activator's page; CPU is
// not available. docs/serve.md gives each signal's arithmetic.
type ScrapeSource struct {
	// Client fetches the pages; its Timeout bounds each scrape.
	Client *http.Client
	// Discover, when set, lists a target's URLs instead of its scrape: list
	// (service discovery; the demo lists the fleet's running replicas).
	Discover func(t *config.Target) []string
	// TTFTWindow, when > 0, observes the TTFT p95 over this window for
	// targets without a ttft metric (shown, not scaled on).
	TTFTWindow time.Duration
	// StuckAfter is how many consecutive scrapes a replica must look like a
	// stuck engine (scrape.StuckTracker), for at least StuckFor, before it
	// stops voting; 0 is scrape.DefaultStuckAfter. A replica that stopped voting is counted in
	// Current but not in the totals or Reporting: the HPA's missing-pods
	// rule (0 on a scale-up, at target on a scale-down) applies to it.
	StuckAfter int
	// StuckFor is how long, at least, a replica must have looked stuck
	// before it stops voting; 0 is scrape.DefaultStuckFor.
	StuckFor time.Duration

	stuck scrape.StuckTracker

	mu sync.Mutex
	// histWindow keeps, per histogram kind and target's URL (histKey), the
	// histograms seen within the longest window, oldest first.
	histWindow map[histKey][]histAt
	// last is each target's URL's previous page (keyed "<target>\x00<url>"),
	// the baseline of its counter rates.
	last map[string]*scrape.Page
	// seen are the URLs of the current Read; after it, the histWindow and
	// baselines of the others are dropped (a discovered pod that went).
	seen map[string]bool
}

// histKey names one replica's histogram of one kind.
type histKey struct {
	kind histKind
	url  string
}

// histKind is which histogram of a page a quantile reads.
type histKind int

const (
	histTTFT histKind = iota
	histQueueTime
	histITL
)

func (k histKind) of(p *scrape.Page) *scrape.Histogram {
	switch k {
	case histQueueTime:
		return p.QueueTime
	case histITL:
		return p.ITL
	}
	return p.TTFT
}

type histAt struct {
	at    time.Time
	h     *scrape.Histogram
	start float64 // process_start_time_seconds (NaN: unknown)
}

// NewScrapeSource returns a ScrapeSource whose scrapes time out after timeout.
func NewScrapeSource(timeout time.Duration) *ScrapeSource {
	return &ScrapeSource{Client: &http.Client{Timeout: timeout}, histWindow: map[histKey][]histAt{}, last: map[string]*scrape.Page{}}
}

// Name is "scrape".
func (s *ScrapeSource) Name() string { return "scrape" }

// Read scrapes every URL of every target concurrently.
func (s *ScrapeSource) Read(ctx context.Context, targets []*config.Target, now time.Time) []Reading {
	out := make([]Reading, len(targets))
	s.stuck.Begin()
	s.mu.Lock()
	s.seen = map[string]bool{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { defer crashlog.Recover(); out[i] = s.readTarget(ctx, t, now) })
	}
	wg.Wait()
	s.stuck.End()
	s.forget()
	return out
}

// forget drops the baselines and histograms of the URLs the last Read did
// not list: memory stays bounded by the replicas that exist while pods
// come and go.
func (s *ScrapeSource) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for u := range s.last {
		if !s.seen[u] {
			delete(s.last, u)
		}
	}
	for k := range s.histWindow {
		if !s.seen[k.url] {
			delete(s.histWindow, k)
		}
	}
}

// loadPages fetches the pages of t's scrape URLs (Discover's when set)
// at once, read with server's profile: pages[i] and errs[i] are urls[i]'s.
// keys[i] is urls[i]'s key in the baselines (counter rates, histogram
// windows, stuck counts): the target's own, so two targets that list one
// URL each keep theirs (a shared one gave the second target a rate over
// the milliseconds since the first's scrape, often 0).
func (s *ScrapeSource) loadPages(ctx context.Context, t *config.Target, server modelserver.Server) (urls []string, pages []*scrape.Page, errs []error, keys []string) {
	urls = t.Scrape.URLs
	if s.Discover != nil {
		urls = s.Discover(t)
	}
	pages = make([]*scrape.Page, len(urls))
	errs = make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() { defer crashlog.Recover(); pages[i], errs[i] = scrape.Load(ctx, s.Client, u, nil, server) })
	}
	wg.Wait()
	for i, p := range pages {
		// server: auto took an EPP's page for one replica's: its running
		// and waiting are the whole pool's, counted as one replica.
		if server == modelserver.Unknown && p != nil && p.Server == modelserver.EPP {
			pages[i], errs[i] = nil, eppPageError(t, urls[i])
		}
	}
	keys = make([]string, len(urls))
	for i, u := range urls {
		keys[i] = t.Key() + "\x00" + u
	}
	return urls, pages, errs, keys
}

// quantileOf is the quantile and window target t reads signal sig's
// histogram at: its metric's, else p95 over TTFTWindow (0: not read).
func (s *ScrapeSource) quantileOf(t *config.Target, sig recommend.Signal) (q float64, w time.Duration) {
	q, w = 0.95, s.TTFTWindow
	for _, m := range t.Metrics {
		if m.Type == sig {
			q, w = m.Quantile, time.Duration(m.Window)
		}
	}
	return q, w
}

func (s *ScrapeSource) readTarget(ctx context.Context, t *config.Target, now time.Time) Reading {
	if t.Server == modelserver.EPP { // one page per pool, not per replica (source_epp.go)
		return s.readEPP(ctx, t, now)
	}
	start := time.Now()
	// The activator's page is read beside the replicas' pages, not after
	// them: a page that hangs (a gone pod's IP) took the period from it,
	// and held was unknown at zero replicas, where nothing else activates.
	var held scrape.Held
	var heldErr error
	var heldRead sync.WaitGroup
	if t.Zero != nil && t.Zero.HeldScrape != "" {
		heldRead.Go(func() { defer crashlog.Recover(); held, heldErr = scrape.ReadHeld(ctx, s.Client, t.Zero.HeldScrape) })
	}
	urls, pages, errs, keys := s.loadPages(ctx, t, t.Server)
	heldRead.Wait()
	r := Reading{Obs: unknownObservation()}
	answered := 0
	after, span := s.StuckAfter, s.StuckFor
	if after <= 0 {
		after = scrape.DefaultStuckAfter
	}
	if span <= 0 {
		span = scrape.DefaultStuckFor
	}
	ballots, voting, tot := scrape.Vote(pages, errs, func(i int, p *scrape.Page) bool {
		n, d := s.stuck.Observe(keys[i], p, now)
		return n >= after && d >= span
	})
	for i, b := range ballots {
		switch b {
		case scrape.Unread:
			pages[i] = nil
			r.Errors = append(r.Errors, ReadError{Signal: "page", Reason: scrapeReason(errs[i]), Err: pairEPPHint(t, errs[i])})
			continue
		case scrape.Stuck: // answered but does not vote: a missing pod for the HPA's rule
			r.Stuck++
			r.StuckReplicas = append(r.StuckReplicas, urls[i])
		}
		answered++
	}
	if t.PodDeletionCost {
		r.Outstanding = outstanding(urls, pages, voting)
	}
	r.Obs.Running, r.Obs.Waiting, r.Obs.KV = tot.Running, tot.Waiting, tot.KV
	r.Obs.Reporting, r.Obs.Queued = tot.Reporting, tot.Queued
	if answered > 0 {
		r.Obs.Current, r.CurrentKnown = answered, true
	}
	for _, p := range voting {
		if p == nil {
			continue
		}
		for _, sig := range p.NonFinite {
			r.Errors = append(r.Errors, ReadError{Signal: "page", Reason: "nan", Err: fmt.Errorf("%s: %s has a NaN or infinite sample: unknown", p.Source, sig)})
		}
		// A family declared with another # TYPE is not read: its signal
		// is unknown (it said "NaN or infinite sample").
		for _, w := range p.WrongType {
			r.Errors = append(r.Errors, ReadError{Signal: "page", Reason: "bad_data", Err: fmt.Errorf("%s: %s", p.Source, w)})
		}
		// A page that answers with no load sample at all (an empty 200,
		// another exporter's page, a server before its first request)
		// is a missing replica: said, not counted as an error (a
		// server may be in that state until its first request).
		if !p.Reporting() && len(p.Unknown) == 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: no running, waiting or KV-cache sample (%s's families absent, or declared without samples: before the first request, or not its /metrics?): a missing replica", p.Source, p.Server))
		} else if !p.ReportsLoad() && len(p.Unknown) == 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: KV-cache usage but no running or waiting sample (%s's request families absent: renamed by another server version, or the page cut short?): its requests are unknown, a missing replica", p.Source, p.Server))
		}
	}
	if answered > r.Stuck && len(tot.Unknown) == 0 { // when every page is stuck, the stuck count says why nothing votes
		if math.IsNaN(tot.Running) {
			r.Errors = append(r.Errors, ReadError{Signal: "running", Reason: "empty", Err: errors.New("no page reports running requests")})
		}
		if math.IsNaN(tot.Waiting) {
			r.Errors = append(r.Errors, ReadError{Signal: "waiting", Reason: "empty", Err: errors.New("no page reports waiting requests")})
		}
	}
	if q, w := s.quantileOf(t, recommend.SignalTTFT); w > 0 {
		r.Obs.TTFT, r.Obs.NoneFinished = s.quantile(histTTFT, keys, pages, q, w, now)
	}
	if q, w := s.quantileOf(t, recommend.SignalQueueWait); w > 0 {
		r.Obs.QueueTime, _ = s.quantile(histQueueTime, keys, pages, q, w, now)
	}
	r.Obs.ITL, _ = s.quantile(histITL, keys, pages, demandITLQuantile, demandWindow, now)
	for _, o := range s.rates(&r.Obs, keys, pages) {
		r.Errors = append(r.Errors, o.readError(urls[o.i], pages[o.i].ProcessStart, "pod",
			"its counters and histograms give no rate or quantile until two scrapes in a row reach one process: list each pod's own URL, or use a scaleTargetRef (docs/kubernetes.md)"))
	}
	r.Errors = append(r.Errors, boundRates(&r.Obs)...)
	if t.Zero != nil && t.Zero.HeldScrape != "" {
		page, err := held, heldErr
		if ref := t.InferencePoolRef; err == nil && ref != nil && page.Pool != "" && page.Pool != ref.Name {
			// Another pool's EPP: its held requests would wake this one.
			page.Held, page.Ready = math.NaN(), math.NaN()
			r.Errors = append(r.Errors, ReadError{Signal: "held", Reason: "not_in_pool", Err: fmt.Errorf("%s (zero.held_scrape) is the Endpoint Picker of InferencePool %q, not of %q (inferencePoolRef): give held_scrape the /metrics of this pool's own EPP", sourcekey.Redact(t.Zero.HeldScrape), page.Pool, ref.Name)})
		}
		if err != nil {
			r.Errors = append(r.Errors, ReadError{Signal: "held", Reason: scrapeReason(err), Err: err})
		}
		r.Obs.Held = page.Held
		// No replica answered and the activator's probe finds no ready
		// endpoint: zero replicas is known, not a failed read.
		if answered == 0 && page.Ready == 0 {
			r.Obs.Current, r.CurrentKnown = 0, true
		}
	}
	// Known when some page answered (or none runs): with every page
	// unread, no replica was read and 0 stuck would be made up.
	r.StuckKnown = r.CurrentKnown
	r.Duration = time.Since(start)
	return r
}

// otherPage is a page of another process than its key's previous page
// (rates): its index, and the previous page's process start (unix
// seconds) and read time.
type otherPage struct {
	i         int
	prevStart float64
	prevAt    time.Time
}

// readError is the bad_data page error for o: url answered a page of
// process start cur (unix seconds), another process's than at its previous
// scrape, so several processes (pods, or EPP replicas: what names them) are
// behind one URL, a Service; then says what follows and what to do. A
// password in url is written xxxxx (sourcekey.Redact), as scrape.Load's
// errors write it.
func (o otherPage) readError(url string, cur float64, what, then string) ReadError {
	url = sourcekey.Redact(url)
	err := fmt.Errorf("%s answered another process's page than at its previous scrape (process_start_time_seconds %.0f, before the previous page's process started at %.0f): several %ss behind one URL (a Service?); %s",
		url, cur, o.prevStart, what, then)
	if cur > o.prevStart {
		// Later than the previous process but well before the previous
		// scrape: another process, or a restart whose clock is behind
		// serve's.
		err = fmt.Errorf("%s answered a page whose process started at %.0f (process_start_time_seconds), after the previous page's process (%.0f) but %.0f s before the previous scrape by serve's clock: several %ss behind one URL (a Service?), or this %s restarted with its clock over %v behind serve's (then rates resume at the next scrape); %s",
			url, cur, o.prevStart, float64(o.prevAt.UnixNano())/1e9-cur, what, what, scrape.RestartSlack, then)
	}
	return ReadError{Signal: "page", Reason: "bad_data", Err: err}
}

// rates sets o's demand rates from the requests, prompt-token,
// generation-token and prefix-cache counters' rates since each replica's
// previous scrape (scrape.Rate: resets counted the Prometheus way), summed
// over the replicas that have a baseline: ArrivalRate, PromptTokensRate,
// GenerationTokensRate, the mean lengths (recommend.MeanLengths) and
// PrefixHit (recommend.HitFraction of the hit and query token rates, over
// the replicas that have both counters). Each is NaN when no replica has a
// baseline for it (the first scrape, a fresh server whose families have no
// samples yet: absent, not 0). A replica seen for the first time adds
// nothing until its second scrape. ArrivalWindow is the shortest span
// between a replica's two scrapes that gave a request rate (the demand
// trend's noise gate reads it), 0 when none did. It returns the pages
// (their indices) that came from another process than the key's previous page
// (scrape.OtherProcess: several pods behind one URL), which add nothing,
// each with the previous page's process start and read time.
func (s *ScrapeSource) rates(o *recommend.Observation, keys []string, pages []*scrape.Page) (other []otherPage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	requests, prompt, generation, hits, queries := math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
	var window time.Duration
	add := func(acc *float64, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		if math.IsNaN(*acc) {
			*acc = 0
		}
		*acc += v
	}
	for i, u := range keys {
		if s.seen != nil { // nil outside Read (tests call rates alone)
			s.seen[u] = true
		}
		p := pages[i]
		if p == nil {
			continue
		}
		rt := scrape.Rate(s.last[u], p)
		if rt.OtherProcess {
			other = append(other, otherPage{i: i, prevStart: s.last[u].ProcessStart, prevAt: s.last[u].Time})
		}
		if !math.IsNaN(rt.Requests) && (window == 0 || rt.Interval < window) {
			window = rt.Interval // the shortest span: the noisiest rate
		}
		add(&requests, rt.Requests)
		add(&prompt, rt.PromptTokens)
		add(&generation, rt.GenerationTokens)
		add(&hits, rt.PrefixHits) // both or neither (scrape.Rates)
		add(&queries, rt.PrefixQueries)
		s.last[u] = p
	}
	o.ArrivalRate, o.PromptTokensRate, o.GenerationTokensRate, o.ArrivalWindow = requests, prompt, generation, window
	o.MeanPrompt, o.MeanOutput = recommend.MeanLengths(requests, prompt, generation)
	o.PrefixHit = recommend.HitFraction(hits, queries)
	return other
}

// boundRates makes unknown, with a bad_data error each, the demand rates
// and latency quantiles of o past the bounds serve's Prometheus reading
// puts on them (promql.MaxArrivalRate, MaxTokenRate, MaxLatency): a
// counter that jumped to 1e12 between two scrapes read as 5e11 requests a
// second and scaled a target up. The mean lengths go with their rates.
func boundRates(o *recommend.Observation) []ReadError {
	var errs []ReadError
	for _, b := range []struct {
		signal string
		v      *float64
		max    float64
		what   string
	}{{"arrivals", &o.ArrivalRate, promql.MaxArrivalRate, "requests a second"}, {"prompt_tokens", &o.PromptTokensRate, promql.MaxTokenRate, "tokens a second"},
		{"generation_tokens", &o.GenerationTokensRate, promql.MaxTokenRate, "tokens a second"}, {"ttft", &o.TTFT, promql.MaxLatency, "seconds"},
		{"queue_time", &o.QueueTime, promql.MaxLatency, "seconds"}, {"itl", &o.ITL, promql.MaxLatency, "seconds"}} {
		if *b.v > b.max {
			errs = append(errs, ReadError{Signal: b.signal, Reason: "bad_data",
				Err: fmt.Errorf("%s %v above %g %s over the pages: no measurement (a counter that jumped, or a broken exporter?)", b.signal, *b.v, b.max, b.what)})
			*b.v = math.NaN()
		}
	}
	if len(errs) > 0 {
		o.MeanPrompt, o.MeanOutput = recommend.MeanLengths(o.ArrivalRate, o.PromptTokensRate, o.GenerationTokensRate)
	}
	return errs
}

// quantile records this cycle's histograms of kind and returns the
// q-quantile of their increase over window, summed over the replicas that have a baseline, and
// whether no request finished in it (the window's +Inf bucket did not grow:
// the quantile is NaN and the metric abstains). A replica's increase is
// Prometheus's increase() over its scrapes in the window (windowIncrease):
// restarts inside it count what was observed since, never a negative or
// dropped increase.
func (s *ScrapeSource) quantile(kind histKind, keys []string, pages []*scrape.Page, q float64, window time.Duration, now time.Time) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum []scrape.Bucket
	for i, u := range keys {
		p := pages[i]
		if p == nil || kind.of(p) == nil {
			continue
		}
		key := histKey{kind, u}
		h := s.histWindow[key]
		// Drop entries older than the window, keeping at least one baseline.
		for len(h) > 1 && now.Sub(h[1].at) >= window {
			h = h[1:]
		}
		first := 0
		if len(h) > 1 && now.Sub(h[0].at) > window {
			first = 1
		}
		cur := histAt{at: now, h: kind.of(p), start: p.ProcessStart}
		if inc := windowIncrease(h[first:], cur); inc != nil {
			// Replicas of two layouts (a rollout to a server version
			// with other buckets) are merged, not the second dropped.
			sum = histogram.Merge(sum, inc.Buckets)
		}
		s.histWindow[key] = append(h, cur)
	}
	if len(sum) == 0 {
		return math.NaN(), false
	}
	return histogram.Quantile(q, sum), sum[len(sum)-1].Count == 0
}

// windowIncrease is the increase of one replica's histogram from the first
// of past (its scrapes inside the window, oldest first) to cur: the sum of
// the increases between consecutive scrapes (scrape.IncreaseSince, so a
// restart in between adds what was observed since it, as Prometheus's
// increase() adds a reset counter's new value). Nil without a baseline or
// when the bucket layout changed without a restart; after a restart that
// changed the layout, the increase since the restart. A page of another
// process than the one before it (scrape.OtherProcess) starts the window
// again: nil when cur is one.
func windowIncrease(past []histAt, cur histAt) *scrape.Histogram {
	if len(past) == 0 {
		return nil
	}
	var total *scrape.Histogram
	prev := past[0]
	for _, next := range append(past[1:len(past):len(past)], cur) {
		if scrape.OtherProcess(prev.at, prev.start, next.start) {
			// Another pod's page behind the same URL: no increase across
			// the two; the window starts again at next.
			total, prev = nil, next
			continue
		}
		inc := scrape.IncreaseSince(prev.h, next.h, scrape.Restarted(prev.start, next.start))
		if inc == nil {
			return nil
		}
		if total == nil {
			total = inc
		} else if b, ok := histogram.Add(total.Buckets, inc.Buckets); ok {
			total.Buckets, total.Count, total.Sum = b, total.Count+inc.Count, total.Sum+inc.Sum
		} else {
			total = inc
		}
		prev = next
	}
	return total
}

// scrapeReason maps a scrape error to a query_errors_total reason.
func scrapeReason(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, scrape.ErrFetch):
		return "unavailable"
	default:
		return "bad_response"
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// pairEPPHint turns the hint of err, an EPP's page in a P/D pool's scrape
// list, from server: epp (refused on a pair: the EPP's page is the whole
// InferencePool, both roles) to the role's own model-server pods.
func pairEPPHint(t *config.Target, err error) error {
	if src, ok := scrape.EPPRefused(nil, err); ok && t.Role != 0 {
		return eppPageError(t, src)
	}
	return err
}

// eppPageError is the read error of an llm-d EPP's page at source in the
// scrape list of target t, read as a model server's (a P/D pool's, or
// with server: auto): the EPP's page describes its whole InferencePool,
// so it is not one replica's page. It says what to give instead.
func eppPageError(t *config.Target, source string) error {
	if t.Role != 0 {
		return fmt.Errorf("%s: an llm-d Endpoint Picker's page, in the %s pool's scrape list: a P/D pair is read from each role's model-server pods, not from the EPP, whose page is the whole InferencePool (both roles); list the %s pods' /metrics in roles.%s.scrape", source, t.Role, t.Role, t.Role)
	}
	return fmt.Errorf("%s: an llm-d Endpoint Picker's page, read with server: auto as one replica's: the EPP's page describes its whole InferencePool (its ready endpoints, their mean load, the flow-control queue); give the target server: epp", source)
}
