package promql

import (
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/pkg/modelserver"
)

// The helpers below build query ASTs node by node; the printer
// (parser.Expr.String) turns them into canonical PromQL. No query text is
// ever assembled from strings.

// selector returns name{ms...}, with the __name__ matcher the engine selects
// on; a family alternative written as a selector (modelserver.Series,
// name{label="value"}) adds its own matchers.
func selector(name string, ms []*labels.Matcher) *parser.VectorSelector {
	name, own := modelserver.Series(name)
	all := make([]*labels.Matcher, 0, len(ms)+len(own)+1)
	all = append(all, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, name))
	all = append(all, own...)
	all = append(all, ms...)
	return &parser.VectorSelector{Name: name, LabelMatchers: all}
}

// rangeOf returns v[window].
func rangeOf(v *parser.VectorSelector, window time.Duration) *parser.MatrixSelector {
	return &parser.MatrixSelector{VectorSelector: v, Range: window}
}

// aggregate returns op by (grouping) (e), or op without (grouping) (e).
func aggregate(op parser.ItemType, without bool, grouping []string, e parser.Expr) *parser.AggregateExpr {
	return &parser.AggregateExpr{Op: op, Expr: e, Grouping: grouping, Without: without}
}

// call returns fn(args...); fn must be a known PromQL function.
func call(fn string, args ...parser.Expr) *parser.Call {
	return &parser.Call{Func: parser.Functions[fn], Args: args}
}

func number(v float64) *parser.NumberLiteral { return &parser.NumberLiteral{Val: v} }

// paren wraps binary expressions so that they print unambiguously as an
// operand of another binary expression.
func paren(e parser.Expr) parser.Expr {
	if _, ok := e.(*parser.BinaryExpr); ok {
		return &parser.ParenExpr{Expr: e}
	}
	return e
}

// binary returns lhs op rhs with optional on(...) matching; set operators
// (and, or, unless) are many-to-many as the parser makes them.
func binary(op parser.ItemType, lhs, rhs parser.Expr, on []string) *parser.BinaryExpr {
	b := &parser.BinaryExpr{Op: op, LHS: paren(lhs), RHS: paren(rhs)}
	if lhs.Type() == parser.ValueTypeVector && rhs.Type() == parser.ValueTypeVector {
		card := parser.CardOneToOne
		if op.IsSetOperator() {
			card = parser.CardManyToMany
		}
		b.VectorMatching = &parser.VectorMatching{Card: card, MatchingLabels: on, On: on != nil}
	}
	return b
}

// orChain returns es[0] or es[1] or ...: the first operand that has a
// series for a label set wins (PromQL's or keeps the left side's series and
// adds right-side series only for label sets the left side lacks). or is
// left-associative, so the chain prints without parentheses.
func orChain(es []parser.Expr) parser.Expr {
	if len(es) == 0 {
		return nil
	}
	out := es[0]
	for _, e := range es[1:] {
		out = &parser.BinaryExpr{
			Op: parser.LOR, LHS: out, RHS: paren(e),
			VectorMatching: &parser.VectorMatching{Card: parser.CardManyToMany},
		}
	}
	return out
}
