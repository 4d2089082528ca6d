package promql

import (
	"context"
	"time"
)

// metricsQLProbe parses in MetricsQL only: PromQL has no WITH templates,
// so Prometheus, Thanos Query and Mimir answer it with bad_data, and
// VictoriaMetrics with 1.
const metricsQLProbe = `WITH (infscale_probe = 1) infscale_probe`

// MetricsQL reports whether api evaluates MetricsQL (VictoriaMetrics)
// rather than PromQL, by one instant query that only MetricsQL parses. A
// failed probe (server down, timeout) reads as PromQL: the queries that
// follow fail on their own. docs/promql.md#servers says what differs.
func MetricsQL(ctx context.Context, api API) bool {
	v, _, err := api.Instant(ctx, metricsQLProbe, time.Now())
	return err == nil && len(v) == 1 && float64(v[0].Value) == 1
}
