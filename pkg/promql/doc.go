// Package promql turns a target (a server profile and a label selector) into
// the PromQL that measures its load, runs those queries against the
// Prometheus HTTP API, and checks each answer (one number per target and
// signal, in range; no data is unknown, NaN, never 0). What the values mean
// as a recommend.Observation is pkg/serve's (promObservation).
//
// Reading guide:
//
//   - selector.go: ParseSelector (the target's label matchers, set on every
//     vector selector as the queries are built) and Validate (user queries;
//     errors keep the parser's position).
//   - shape.go / build.go: the query shapes per signal and server profile
//     (buildExprs). docs/promql.md explains each shape: per-pod sums over engines,
//     HA duplicates collapsed, stale pods of a rollout excluded, vLLM's old
//     and new KV names without double counting, TTFT from histogram buckets.
//   - client.go / client_batch.go / reason.go: the two-method API interface
//     over client_golang (range queries chunked under Prometheus's 11,000
//     points per series), the batched instant query, typed failure reasons.
//   - evaluate.go: Evaluate, one batched query per signal for many targets
//     (query count independent of pods and targets), with per-target results,
//     and the rule that no data is unknown (NaN), never 0.
//   - history.go / own.go: the same shapes for a backtest's range queries
//     (HistoryQueries), and infscale's own series read back (OwnSeries).
package promql
