package promql

import (
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// OwnSeries is `max(<metric>{target="<target>", <installation>})` printed
// canonically: one target's series among infscale's own exported metrics,
// as Prometheus scraped them back from serve (serve rebuilds its state from
// them after a restart), copies from an HA Prometheus pair collapsed by max.
// installation holds the labels the scrape gives this serve's series
// (prometheus.series_labels: namespace, service, ...), each an equality
// matcher beside target (the printer sorts the matchers by name), so that another installation's
// target of the same name stays out; nil or empty matches target alone.
// Values are label values, quoted and escaped by the printer; the names
// are config.Prometheus's, validated there.
func OwnSeries(metric, target string, installation map[string]string) string {
	return aggregate(parser.MAX, false, nil, selector(metric, ownMatchers(target, installation))).String()
}

// OwnSeriesBy is `max by (<by>) (<metric>{target="<target>", <installation>})`:
// OwnSeries keeping the labels by, e.g. the policy and state of
// infscale_tuned_policy_info, each combination a series of its own.
func OwnSeriesBy(metric, target string, installation map[string]string, by ...string) string {
	return aggregate(parser.MAX, false, by, selector(metric, ownMatchers(target, installation))).String()
}

// ownMatchers is target="<target>" and installation's labels, all
// equality matchers, in an order of their own (sorted by name).
func ownMatchers(target string, installation map[string]string) []*labels.Matcher {
	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "target", target)}
	names := make([]string, 0, len(installation))
	for n := range installation {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, n, installation[n]))
	}
	return ms
}
