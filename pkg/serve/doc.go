// Package serve is `infscale serve`: every interval, for each configured
// target, it reads the signals (from Prometheus through pkg/promql, or by
// scraping the replicas' /metrics through pkg/scrape when no Prometheus is
// configured), runs recommend.Decider (Decide and the rules around it, the
// code the replay runs too) with the loop's clock, and exports
// infscale_desired_replicas and friends for KEDA or the HPA.
//
// Reading guide: service.go (Run: wiring, HTTP server, SIGHUP reload,
// graceful shutdown), loop.go (NewLoop, Loop: one cycle, its writes
// concurrent with per-write deadlines), source*.go (Source and its two implementations),
// metrics.go (the exporter, names in docs/metrics.md), store.go (restart
// safety: per-target state files under --state-dir, pkg/statefile),
// http.go (endpoints), target.go (per-target run-time state and the Record
// shown by /debug/decisions and the audit log).
package serve
