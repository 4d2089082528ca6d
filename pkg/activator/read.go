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

// HeldMetric is the gauge of held requests on an activator's /metrics.
const HeldMetric = "infscale_activator_held_requests"

// ReadHeld fetches an activator's /metrics page at url and returns its
// held requests (summed when several series are present). An error when
// the page cannot be fetched or parsed, or lacks the gauge.
func ReadHeld(ctx context.Context, client *http.Client, url string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return math.NaN(), err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return math.NaN(), err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return math.NaN(), fmt.Errorf("%s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return math.NaN(), fmt.Errorf("%s: %w", url, err)
	}
	fam, ok := fams[HeldMetric]
	if !ok || len(fam.GetMetric()) == 0 {
		return math.NaN(), fmt.Errorf("%s: no %s", url, HeldMetric)
	}
	total := 0.0
	for _, m := range fam.GetMetric() {
		total += m.GetGauge().GetValue()
	}
	return total, nil
}
