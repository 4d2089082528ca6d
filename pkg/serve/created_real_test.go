package serve

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
)

// TestCreatedTimestampFirstIncrement: a counter series that first appears
// with its first count (the first decision for a reason, the first query
// error of a kind) reads 1 at its first scrape, so increase() and rate()
// see nothing of it. Every counter of serve carries its created timestamp
// (the protobuf exposition's created_timestamp): a real Prometheus started
// with --enable-feature=created-timestamp-zero-ingestion (which then
// scrapes the protobuf format first) stores a 0 at that time, and
// increase() over a minute sees the one decision and the one error (about
// 1; over 0.5 leaves room for its extrapolation).
func TestCreatedTimestampFirstIncrement(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "test")
	m.Init("chat")
	srv := httptest.NewServer(metricsHandler(reg, m.table))
	defer srv.Close()
	prom := promtest.Start(t, promtest.Options{Targets: []promtest.Target{{URL: srv.URL + "/metrics"}},
		ScrapeInterval: time.Second, Flags: []string{"--enable-feature=created-timestamp-zero-ingestion"}})
	one := func(v model.Vector) bool { return len(v) == 1 }
	prom.WaitFor(t, `infscale_scale_reversals_total{target="chat"}`, 30*time.Second, one) // scraped before the counts
	m.Record(Snapshot{Target: "chat", At: time.Now(), Decided: true, Valid: true, Desired: 2, Current: 1, Reason: "ScaleUpLimit"})
	m.QueryError("chat", "timeout")
	for _, q := range []string{
		`increase(infscale_decisions_total{target="chat",reason="ScaleUpLimit"}[1m]) > 0.5`,
		`increase(infscale_query_errors_total{target="chat",reason="timeout"}[1m]) > 0.5`,
	} {
		prom.WaitFor(t, q, 30*time.Second, one)
	}
}
