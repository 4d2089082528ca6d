package scrape

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"

	"github.com/infscale/infscale/pkg/modelserver"
)

// The families of an `infscale activator`'s /metrics (pkg/activator
// exports them) that serve reads in embedded mode: the requests held while
// no upstream endpoint is ready, and whether one was ready at the last
// probe (1 or 0). Both are gauges.
const (
	HeldFamily  = "infscale_activator_held_requests"
	ReadyFamily = "infscale_activator_upstream_ready"
)

// HeldScrapeHeader marks ReadHeld's request (pkg/activator's constant of
// the same name): an activator's proxy port (--listen with
// --metrics-listen) answers it at once, naming the metrics port, rather
// than holding it as a request for the upstream's /metrics.
const HeldScrapeHeader = "Infscale-Held-Scrape"

// Held is what a holder's /metrics page says: the requests it holds and
// whether its upstream had a ready endpoint (1 or 0; NaN when absent or
// unreadable), and on an llm-d EPP's page the InferencePool it is of (its
// pool gauges' label name, else its flows' inference_pool, else its
// saturation's; "" when none says, or an activator's page).
type Held struct {
	Held, Ready float64
	Pool        string
}

// ReadHeld fetches a holder's /metrics page at rawURL (an infscale
// activator's, or a third party's exporting the same families, or an llm-d
// EPP's: its flow-control queue read as a server: epp target's page reads
// it, readFlowQueue, and ready when ready_endpoints > 0) and reads its held
// requests (summed over series) and readiness; the page is fetched and
// parsed as every page is (get, parsePage). Ready is NaN (unknown) when
// absent, or outside 0..1 (the activator's) or 0..MaxEndpoints (an EPP's
// ready endpoints). Held is NaN with an error naming the page when the URL
// is not one to fetch (ErrSource), the page cannot be fetched (ErrFetch)
// or parsed (ErrInvalidPage), lacks the held family, declares it other
// than a gauge (ErrWrongType: a counter's value is not read as a gauge's,
// nor as 0), or holds NaN, ±Inf, a negative count or one above
// MaxRequests (an EPP's flows: ErrNotCount), and on an EPP's page when its
// flows or pool gauges name two InferencePools or a pool gauge has two
// series (checkPools). A held count that is unknown keeps the target from
// scaling to zero; it never reads as 0.
func ReadHeld(ctx context.Context, client *http.Client, rawURL string) (Held, error) {
	bad := Held{Held: math.NaN(), Ready: math.NaN()}
	b, contentType, url, _, err := get(ctx, client, rawURL, http.Header{HeldScrapeHeader: {"1"}})
	if err != nil {
		return bad, err
	}
	raw, _, err := parsePage(b, contentType, url)
	if err != nil {
		return bad, err
	}
	h := Held{Held: gaugeSum(raw, HeldFamily), Ready: gaugeSum(raw, ReadyFamily)}
	if !(h.Ready >= 0 && h.Ready <= 1) {
		// Not the 1 or 0 the activator writes: no readiness known (a
		// garbage 0 would say zero replicas are known).
		h.Ready = math.NaN()
	}
	if !raw.has(HeldFamily) {
		// An llm-d EPP's page: its flow-control queue holds the requests
		// (readFlowQueue: the current family, else its deprecated twin,
		// never both), and the pool is ready when it has a ready endpoint.
		held, name, err := readFlowQueue(raw)
		if err != nil {
			return bad, fmt.Errorf("%s: %w", url, err)
		}
		if name != "" {
			// An EPP serves one pool: flows or pool gauges of two are not
			// this pool's held count (checkPools).
			if _, err := checkPools(raw); err != nil {
				var pools *severalPools
				if errors.As(err, &pools) {
					pools.heldScrape = true // its advice names zero.held_scrape
				}
				return bad, fmt.Errorf("%s: not one Endpoint Picker's page: %w", url, err)
			}
			h.Held, h.Pool, h.Ready = held, poolName(raw), math.NaN()
			for _, name := range modelserver.EPPFamilies().ReadyEndpoints.Names() {
				if r := gaugeSum(raw, name); !math.IsNaN(r) {
					// A count of endpoints (0..MaxEndpoints); anything
					// else (-2 read as none ready) is unknown.
					if r >= 0 && r <= MaxEndpoints {
						h.Ready = 0
						if r > 0 {
							h.Ready = 1
						}
					}
					break
				}
			}
			return h, nil
		}
	}
	if err := raw.checkType(HeldFamily, gaugeKind); err != nil {
		return bad, fmt.Errorf("%s: %w", url, err)
	}
	if !raw.has(HeldFamily) {
		return bad, fmt.Errorf("%s: no %s (nor an llm-d EPP's flow-control queue)", url, HeldFamily)
	}
	if math.IsNaN(h.Held) || math.IsInf(h.Held, 0) || h.Held < 0 || h.Held > MaxRequests {
		return bad, fmt.Errorf("%s: %s is %v: not a count of requests (allowed: 0 to %g)", url, HeldFamily, h.Held, MaxRequests)
	}
	return h, nil
}

// gaugeSum is the sum of name's samples, NaN when it has none or is
// declared other than a gauge (the sum is NaN or ±Inf when a sample is).
func gaugeSum(raw *rawPage, name string) float64 {
	if raw.checkType(name, gaugeKind) != nil || len(raw.byName[name]) == 0 {
		return math.NaN()
	}
	t := 0.0
	for _, j := range raw.byName[name] {
		t += raw.samples[j].Value
	}
	return t
}
