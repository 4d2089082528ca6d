// Package backtest rebuilds an inference fleet's workload from its
// Prometheus history and replays it through the simulator (pkg/replay)
// under several policies, next to the replicas that actually ran.
//
// Data flow: Fetch (fetch.go) runs range queries through a promql.API and
// returns raw per-series samples with their sample timestamps (History);
// Reconstruct (reconstruct.go) turns them into a Workload: arrivals per step,
// token-length distributions, coverage (gaps), the actual replica timeline
// and the observed TTFT; Workload.Source (source.go) streams requests for the
// replay with a seeded source; Run (run.go) replays every policy and the
// actual timeline and returns a Report (report.go).
//
// Arrival reconstruction (docs/backtest.md): requests that arrived in a step =
// completions (the success counter's increase, per series, resets handled:
// a drop means the counter restarted from 0, so the increase is the new
// value) + the change in requests in flight (running + waiting). Each
// counter increase is spread over the time between the two samples that
// bound it (their sample timestamps, not the query steps), so an increase
// across a scrape gap is spread over the gap: the total stays right and the
// gap is never read as zero traffic. Gaps are where no series has a sample
// for longer than a threshold (Coverage).
//
// Limits: requests that were in flight on a pod when it restarted or died
// never complete and are not counted; requests a pod finished between its
// last scrape and its restart are lost with its counter (Prometheus's
// increase() has the same limit); within a gap the shape of traffic is
// interpolated; token lengths come from the whole range's histograms, not
// per step; HA duplicates are collapsed by dropping the replica labels.
package backtest
