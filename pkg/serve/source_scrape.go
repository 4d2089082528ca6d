package serve

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/infscale/infscale/pkg/activator"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/profile"
	"github.com/infscale/infscale/pkg/scrape"
)

// ScrapeSource reads targets by scraping their `scrape:` URLs (embedded
// mode, no Prometheus). Current replicas = pages that answered; running and
// waiting are summed, KV averaged over the pages reporting it (pkg/scrape's
// Aggregate); TTFT is the quantile of the summed histogram increase over the
// metric's window, from the pages this source has seen (unknown until two
// scrapes of a replica span some requests). Held is read from an
// activator's /metrics (zero.held_scrape); CPU is not available in
// embedded mode (config refuses it).
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
	// stuck engine (stuck.go), for at least StuckFor, before it stops
	// voting; 0 is DefaultStuckAfter. A replica that stopped voting is counted in
	// Current but not in the totals or Reporting: the HPA's missing-pods
	// rule (0 on a scale-up, at target on a scale-down) applies to it.
	StuckAfter int
	// StuckFor is how long, at least, a replica must have looked stuck
	// before it stops voting; 0 is DefaultStuckFor.
	StuckFor time.Duration

	stuck stuckTracker

	mu sync.Mutex
	// history keeps, per URL, the TTFT histograms seen within the longest
	// window, oldest first.
	history map[string][]histAt
}

type histAt struct {
	at time.Time
	h  *scrape.Histogram
}

// NewScrapeSource returns a ScrapeSource whose scrapes time out after timeout.
func NewScrapeSource(timeout time.Duration) *ScrapeSource {
	return &ScrapeSource{Client: &http.Client{Timeout: timeout}, history: map[string][]histAt{}}
}

// Name is "scrape".
func (s *ScrapeSource) Name() string { return "scrape" }

// Read scrapes every URL of every target concurrently.
func (s *ScrapeSource) Read(ctx context.Context, targets []*config.Target, now time.Time) []Reading {
	out := make([]Reading, len(targets))
	s.stuck.begin()
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { out[i] = s.readTarget(ctx, t, now) })
	}
	wg.Wait()
	s.stuck.end()
	return out
}

func (s *ScrapeSource) readTarget(ctx context.Context, t *config.Target, now time.Time) Reading {
	start := time.Now()
	server, _ := profile.ParseServer(t.Server)
	urls := t.Scrape
	if s.Discover != nil {
		urls = s.Discover(t)
	}
	pages := make([]*scrape.Page, len(urls))
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() { pages[i], errs[i] = scrape.Load(ctx, s.Client, u, nil, server) })
	}
	wg.Wait()
	r := Reading{Obs: unknownObservation(), StuckKnown: true}
	answered := 0
	after, span := s.StuckAfter, s.StuckFor
	if after <= 0 {
		after = DefaultStuckAfter
	}
	if span <= 0 {
		span = DefaultStuckFor
	}
	voting := make([]*scrape.Page, len(pages))
	for i, err := range errs {
		if err != nil {
			pages[i] = nil
			r.Errors = append(r.Errors, ReadError{Signal: "page", Reason: scrapeReason(err), Err: err})
			continue
		}
		answered++
		if n, d := s.stuck.observe(urls[i], pages[i], now); n >= after && d >= span {
			// Answered but does not vote: a missing pod for the HPA's rule.
			r.Stuck++
			r.StuckReplicas = append(r.StuckReplicas, urls[i])
			continue
		}
		voting[i] = pages[i]
	}
	tot := scrape.Aggregate(voting)
	r.Obs.Running, r.Obs.Waiting, r.Obs.KV = tot.Running, tot.Waiting, tot.KV
	r.Obs.Reporting = tot.Reporting
	if answered > 0 {
		r.Obs.Current, r.CurrentKnown = answered, true
	}
	if answered > r.Stuck { // when every page is stuck, the stuck count says why nothing votes
		if math.IsNaN(tot.Running) {
			r.Errors = append(r.Errors, ReadError{Signal: "running", Reason: "empty", Err: errors.New("no page reports running requests")})
		}
		if math.IsNaN(tot.Waiting) {
			r.Errors = append(r.Errors, ReadError{Signal: "waiting", Reason: "empty", Err: errors.New("no page reports waiting requests")})
		}
	}
	q, w := 0.95, s.TTFTWindow
	for _, m := range t.Metrics {
		if m.Type == "ttft" {
			q, w = m.Quantile, time.Duration(m.Window)
		}
	}
	if w > 0 {
		r.Obs.TTFT = s.ttft(urls, pages, q, w, now)
	}
	if t.Zero != nil && t.Zero.HeldScrape != "" {
		page, err := activator.ReadHeld(ctx, s.Client, t.Zero.HeldScrape)
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
	r.Duration = time.Since(start)
	return r
}

// ttft records this cycle's histograms and returns the q-quantile of their
// increase over window, summed over the replicas that have a baseline.
func (s *ScrapeSource) ttft(urls []string, pages []*scrape.Page, q float64, window time.Duration, now time.Time) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var prev, cur *scrape.Histogram
	for i, u := range urls {
		p := pages[i]
		if p == nil || p.TTFT == nil {
			continue
		}
		h := s.history[u]
		// Drop entries older than the window, keeping at least one baseline.
		for len(h) > 1 && now.Sub(h[1].at) >= window {
			h = h[1:]
		}
		if len(h) > 0 {
			base := h[0]
			if now.Sub(base.at) > window && len(h) > 1 {
				base = h[1]
			}
			if base.h.Count <= p.TTFT.Count && sameLayout(base.h, p.TTFT) {
				prev, cur = addHist(prev, base.h), addHist(cur, p.TTFT)
			}
		}
		s.history[u] = append(h, histAt{at: now, h: p.TTFT})
	}
	if cur == nil {
		return math.NaN()
	}
	return histogramQuantile(q, prev, cur)
}

func sameLayout(a, b *scrape.Histogram) bool {
	if len(a.Buckets) != len(b.Buckets) {
		return false
	}
	for i := range a.Buckets {
		if a.Buckets[i].UpperBound != b.Buckets[i].UpperBound {
			return false
		}
	}
	return true
}

// addHist returns acc + h bucket by bucket (acc nil: a copy of h); a layout
// mismatch keeps acc.
func addHist(acc, h *scrape.Histogram) *scrape.Histogram {
	if acc == nil {
		c := *h
		c.Buckets = append([]scrape.Bucket(nil), h.Buckets...)
		return &c
	}
	if !sameLayout(acc, h) {
		return acc
	}
	for i := range acc.Buckets {
		acc.Buckets[i].Count += h.Buckets[i].Count
	}
	acc.Count += h.Count
	acc.Sum += h.Sum
	return acc
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
