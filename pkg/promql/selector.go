package promql

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// ErrInvalidQuery is wrapped by every error about a query or selector that
// does not parse or has the wrong shape. The wrapped message keeps the
// parser's position ("1:14: parse error: ...") and quotes the input.
var ErrInvalidQuery = errors.New("invalid PromQL")

// pql is the parser with Prometheus's default options (no experimental
// functions), i.e. what a default Prometheus server accepts.
var pql = parser.NewParser(parser.Options{})

// Validate parses a user-supplied PromQL expression (a `query:` override, a
// `replicas:` or `held:` query). The result must be an instant vector or a
// scalar. The error wraps ErrInvalidQuery and, for a syntax error, a
// *parser.ParseErr or parser.ParseErrors carrying the position.
func Validate(query string) (parser.Expr, error) {
	expr, err := pql.ParseExpr(query)
	if err != nil {
		return nil, fmt.Errorf("%w `%s`: %w", ErrInvalidQuery, query, err)
	}
	switch t := expr.Type(); t {
	case parser.ValueTypeVector, parser.ValueTypeScalar:
		return expr, nil
	default:
		what := string(t)
		if t == parser.ValueTypeMatrix {
			what = "range vector (matrix)"
		}
		return nil, fmt.Errorf("%w `%s`: evaluates to a %s, want an instant vector or a scalar", ErrInvalidQuery, query, what)
	}
}

// ParseSelector parses a target selector such as
// `{namespace="llm", pod=~"chat-.*"}` into its label matchers. A metric name
// is not allowed (the selector applies to every family of a profile), and at
// least one matcher is required. Errors wrap ErrInvalidQuery and keep the
// parser's position.
func ParseSelector(sel string) ([]*labels.Matcher, error) {
	ms, err := pql.ParseMetricSelector(sel)
	if err != nil {
		// Matchers without their braces (namespace="llm") parse once braced:
		// say so, where the parser said only "unexpected =".
		if t := strings.TrimSpace(sel); !strings.HasPrefix(t, "{") {
			if bms, berr := pql.ParseMetricSelector("{" + t + "}"); berr == nil && len(bms) > 0 {
				return nil, fmt.Errorf("%w: selector `%s`: label matchers go in braces: write '{%s}'", ErrInvalidQuery, sel, t)
			}
		}
		return nil, fmt.Errorf("%w: selector `%s`: %w", ErrInvalidQuery, sel, err)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w: selector `%s` has no label matchers", ErrInvalidQuery, sel)
	}
	for _, m := range ms {
		if m.Name == labels.MetricName {
			return nil, fmt.Errorf("%w: selector `%s` names a metric; give only label matchers, e.g. {namespace=\"llm\"}", ErrInvalidQuery, sel)
		}
	}
	return ms, nil
}

// MatcherSet is ms as text (each matcher's String, as PromQL writes it),
// sorted: two selectors of the same matchers in any order give equal sets.
func MatcherSet(ms []*labels.Matcher) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String()
	}
	slices.Sort(out)
	return out
}

// Covers reports whether every matcher of a is among b's (compared as
// MatcherSet's text): a selector of a's matchers then selects every series
// one of b's selects (true for equal sets too). Matchers compare as
// written: pod=~"chat-.*" does not cover pod=~"chat-prefill-.*".
func Covers(a, b []*labels.Matcher) bool {
	have := MatcherSet(b)
	for _, m := range a {
		if _, ok := slices.BinarySearch(have, m.String()); !ok {
			return false
		}
	}
	return true
}
