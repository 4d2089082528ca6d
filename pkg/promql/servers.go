package promql

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// metricsQLProbe parses in MetricsQL only: PromQL has no WITH templates,
// so Prometheus answers it with bad_data (Thanos Query and Mimir parse
// with its parser: bad_data too), and VictoriaMetrics with 1.
const metricsQLProbe = `WITH (infscale_probe = 1) infscale_probe`

// MetricsQL reports whether api evaluates MetricsQL (VictoriaMetrics)
// rather than PromQL, by one instant query that only MetricsQL parses. A
// failed probe (server down, timeout) reads as PromQL: the queries that
// follow fail on their own. docs/promql.md#servers says what differs.
func MetricsQL(ctx context.Context, api API) bool {
	v, _, err := api.Instant(ctx, metricsQLProbe, time.Now())
	return err == nil && len(v) == 1 && float64(v[0].Value) == 1
}

// latencyOffsetArg is the latency_offset every query carries. VictoriaMetrics
// hides the last 30 s of every query by default (-search.latencyOffset,
// for samples still on their way), so serve read a burst's queue 20 s
// after Prometheus did; 1 s keeps the latest scrape. Prometheus ignores
// the parameter, as it does any it does not know, and so do Thanos Query
// v0.42 and Mimir (measured: docs/promql.md#servers).
const latencyOffsetArg = "1s"

// latencyOffset adds latency_offset=latencyOffsetArg to the query API's
// requests.
type latencyOffset struct{ rt http.RoundTripper }

func (l latencyOffset) RoundTrip(req *http.Request) (*http.Response, error) {
	if p := req.URL.Path; strings.HasSuffix(p, "/api/v1/query") || strings.HasSuffix(p, "/api/v1/query_range") {
		req = req.Clone(req.Context())
		q := req.URL.Query()
		q.Set("latency_offset", latencyOffsetArg)
		req.URL.RawQuery = q.Encode()
	}
	return l.rt.RoundTrip(req)
}
