package backtest

import (
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
)

// tokenHistograms are the per-request token-length histogram families of
// the servers that export them (names without _bucket), prompt then output.
// vLLM docs "Production Metrics".
var tokenHistograms = map[modelserver.Server][2]string{
	modelserver.VLLM: {"vllm:request_prompt_tokens", "vllm:request_generation_tokens"},
}

// CheckServer reports whether server profile s exports what a backtest
// reads: a success counter and a running gauge (before any query is sent).
func CheckServer(s modelserver.Server) error { return promql.CheckHistory(s) }

// buildQueries returns the queries for server s, selector ms, a range of
// span, and the replicas query (empty: the number of live pods reporting
// the running gauge): pkg/promql's History, the shapes serve reads live.
// Errors: a server without a success counter or a running gauge, a
// replicas query that does not validate.
func buildQueries(s modelserver.Server, ms []*labels.Matcher, span time.Duration, replicas string) (promql.History, error) {
	th := tokenHistograms[s]
	return promql.HistoryQueries(promql.Target{Name: "backtest", Server: s, Selector: ms, Replicas: replicas}, promql.Options{}, span, th[0], th[1])
}
