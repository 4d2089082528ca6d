package backtest

import (
	"fmt"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/pkg/profile"
)

// tokenHistograms are the per-request token-length histogram families of
// the servers that export them (names without _bucket), prompt then output.
// vLLM docs "Production Metrics".
var tokenHistograms = map[profile.Server][2]string{
	profile.VLLM: {"vllm:request_prompt_tokens", "vllm:request_generation_tokens"},
}

// queries are the PromQL a backtest runs for one target, built as ASTs and
// printed canonically (no query text is assembled from strings).
type queries struct {
	success, successTS string // the success counter's series and their sample timestamps
	running, waiting   string // fleet sums per grid point
	replicas           string // replica count per grid point
	promptHist         string // sum by (le) (increase(bucket[range])), instant at the end
	outputHist         string
	promptMean         string // token counters / success counter over the range
	outputMean         string
	ttftHist           string // TTFT buckets over the whole range
	ttftHourly         string // p95 TTFT over each hour
}

func sel(name string, ms []*labels.Matcher) *parser.VectorSelector {
	all := append([]*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, name)}, ms...)
	return &parser.VectorSelector{Name: name, LabelMatchers: all}
}

func call(fn string, args ...parser.Expr) *parser.Call {
	return &parser.Call{Func: parser.Functions[fn], Args: args}
}

func agg(op parser.ItemType, by []string, e parser.Expr) *parser.AggregateExpr {
	return &parser.AggregateExpr{Op: op, Expr: e, Grouping: by}
}

func increase(v *parser.VectorSelector, w time.Duration) parser.Expr {
	return call("increase", &parser.MatrixSelector{VectorSelector: v, Range: w})
}

func div(a, b parser.Expr) parser.Expr {
	return &parser.BinaryExpr{Op: parser.DIV, LHS: a, RHS: b, VectorMatching: &parser.VectorMatching{Card: parser.CardOneToOne}}
}

// CheckServer reports whether server profile s exports what a backtest
// reads: a success counter and a running gauge (before any query is sent).
func CheckServer(s profile.Server) error {
	f := s.Families()
	if len(f.Requests) == 0 || len(f.Running) == 0 {
		return fmt.Errorf("server %s: backtest needs a success counter and a running gauge; the profile has none (allowed: servers with both, e.g. vllm, sglang, trtllm)", s)
	}
	return nil
}

// buildQueries returns the queries for server s, selector ms, a range of
// span, and the replicas query (empty: the number of pods reporting the
// running gauge). Errors: a server without a success counter or a running
// gauge.
func buildQueries(s profile.Server, ms []*labels.Matcher, span time.Duration, replicas string) (queries, error) {
	if err := CheckServer(s); err != nil {
		return queries{}, err
	}
	f := s.Families()
	var q queries
	q.success = sel(f.Requests[0], ms).String()
	q.successTS = call("timestamp", sel(f.Requests[0], ms)).String()
	q.running = agg(parser.SUM, nil, sel(f.Running[0], ms)).String()
	if len(f.Waiting) > 0 {
		q.waiting = agg(parser.SUM, nil, sel(f.Waiting[0], ms)).String()
	}
	q.replicas = replicas
	if q.replicas == "" {
		q.replicas = agg(parser.COUNT, nil, agg(parser.SUM, []string{"pod"}, sel(f.Running[0], ms))).String()
	}
	le := []string{"le"}
	hist := func(family string, w time.Duration) parser.Expr {
		return agg(parser.SUM, le, increase(sel(family+"_bucket", ms), w))
	}
	if th, ok := tokenHistograms[s]; ok {
		q.promptHist = hist(th[0], span).String()
		q.outputHist = hist(th[1], span).String()
	}
	done := agg(parser.SUM, nil, increase(sel(f.Requests[0], ms), span))
	if len(f.PromptTokens) > 0 {
		q.promptMean = div(agg(parser.SUM, nil, increase(sel(f.PromptTokens[0], ms), span)), done).String()
	}
	if len(f.GenerationTokens) > 0 {
		q.outputMean = div(agg(parser.SUM, nil, increase(sel(f.GenerationTokens[0], ms), span)), done).String()
	}
	if len(f.TTFT) > 0 {
		q.ttftHist = hist(f.TTFT[0], span).String()
		q.ttftHourly = call("histogram_quantile", &parser.NumberLiteral{Val: 0.95}, hist(f.TTFT[0], time.Hour)).String()
	}
	return q, nil
}
