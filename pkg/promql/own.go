package promql

import (
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// OwnSeries is `max(<metric>{target="<target>"})` printed canonically: one
// target's series among infscale's own exported metrics, as Prometheus
// scraped them back from serve (serve rebuilds its state from them after a
// restart), copies from an HA Prometheus pair collapsed by max. The target
// name is a label value, quoted and escaped by the printer.
func OwnSeries(metric, target string) string {
	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "target", target)}
	return aggregate(parser.MAX, false, nil, selector(metric, ms)).String()
}

// OwnSeriesBy is `max by (<by>) (<metric>{target="<target>"})`: OwnSeries
// keeping the labels by, e.g. the policy and state of
// infscale_tuned_policy_info, each combination a series of its own.
func OwnSeriesBy(metric, target string, by ...string) string {
	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "target", target)}
	return aggregate(parser.MAX, false, by, selector(metric, ms)).String()
}
