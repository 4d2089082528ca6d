// Package promql turns a target (a server profile and a label selector) into
// the PromQL that measures its load, runs those queries against the
// Prometheus HTTP API, and folds the answers into a recommend.Observation.
//
// Reading guide:
//
//   - selector.go: ParseSelector, Inject (label matchers added to every vector
//     selector by walking the parsed AST, as prom-label-proxy's enforcer does)
//     and Validate (user queries; errors keep the parser's position).
//   - shape.go / build.go: the query shapes per signal and server profile
//     (Build). docs/promql.md explains each shape: per-pod sums over engines,
//     HA duplicates collapsed, stale pods of a rollout excluded, vLLM's old
//     and new KV names without double counting, TTFT from histogram buckets.
//   - client.go / reason.go / range.go: the two-method API interface over
//     client_golang, typed failure reasons, range queries chunked under
//     Prometheus's 11,000 points per series.
//   - evaluate.go: Evaluate, one batched query per signal for many targets
//     (query count independent of pods and targets), with per-target results,
//     and the rule that no data is unknown (NaN), never 0.
package promql
