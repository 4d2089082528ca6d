package activator

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// HeldMetric is the gauge of held requests on an activator's /metrics;
// ReadyMetric the gauge of its upstream's readiness.
const (
	HeldMetric  = "infscale_activator_held_requests"
	ReadyMetric = "infscale_activator_upstream_ready"
)

// Page is what an activator's /metrics says: the requests it holds and
// whether its upstream had a ready endpoint at the last probe (1 or 0;
// NaN when absent).
type Page struct {
	Held, Ready float64
}

// ReadHeld fetches an activator's /metrics page at url and returns its
// held requests (summed when several series are present) and its
// upstream's readiness. An error when the page cannot be fetched or
// parsed, lacks the held gauge, or holds NaN, ±Inf or a negative count.
func ReadHeld(ctx context.Context, client *http.Client, url string) (Page, error) {
	bad := Page{Held: math.NaN(), Ready: math.NaN()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return bad, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return bad, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return bad, fmt.Errorf("%s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return bad, fmt.Errorf("%s: %w", url, err)
	}
	sum := func(name string) float64 {
		fam, ok := fams[name]
		if !ok || len(fam.GetMetric()) == 0 {
			return math.NaN()
		}
		total := 0.0
		for _, m := range fam.GetMetric() {
			if g := m.GetGauge(); g != nil {
				total += g.GetValue()
			} else {
				total += m.GetUntyped().GetValue() // a page without # TYPE
			}
		}
		return total
	}
	p := Page{Held: sum(HeldMetric), Ready: sum(ReadyMetric)}
	if _, ok := fams[HeldMetric]; !ok {
		return bad, fmt.Errorf("%s: no %s", url, HeldMetric)
	}
	if math.IsNaN(p.Held) || math.IsInf(p.Held, 0) || p.Held < 0 {
		return bad, fmt.Errorf("%s: %s is %v: not a count of requests", url, HeldMetric, p.Held)
	}
	return p, nil
}
