package promql

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/pkg/modelserver"
)

// flowPoolLabel names the InferencePool on the EPP's flow-control series,
// as pkg/scrape's page check reads it.
const flowPoolLabel = "inference_pool"

// poolGaugeNames are the EPP's pool gauges, one series per pool on a page
// (ready endpoints and the averages, both spellings), and flowNames its
// flow-control families that held reads: the queue and the saturation
// (both spellings; held is 0 with the saturation alone, the queue's
// series collected), as pkg/scrape's checkPools checks them.
func poolGaugeNames() []string {
	f := modelserver.EPPFamilies()
	var out []string
	for _, t := range []modelserver.Twin{f.ReadyEndpoints, f.AvgRunning, f.AvgQueue, f.AvgKV} {
		out = append(out, t.Names()...)
	}
	return out
}

func flowNames() []string {
	f := modelserver.EPPFamilies()
	return append(f.FlowQueue.Names(), f.Saturation.Names()...)
}

// pageLabels are the labels that tell one scraped page's series from
// another's: the scrape's job and instance, the pod, and the HA replica
// labels (the copies of an HA pair are two pages' worth, each one series).
func (o Options) pageLabels() []string {
	o = o.withDefaults()
	return append([]string{model.JobLabel, model.InstanceLabel, o.PodLabel}, o.ReplicaLabels...)
}

// namesSelector is {__name__=~"<names>", extra..., sel...}, the names
// written compactly (namesRegexp): the query is sent for every EPP target
// every cycle.
func namesSelector(names []string, sel []*labels.Matcher, extra ...*labels.Matcher) *parser.VectorSelector {
	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, namesRegexp(names))}
	ms = append(append(ms, extra...), sel...)
	return &parser.VectorSelector{LabelMatchers: ms}
}

// namesRegexp matches exactly names: the names sharing a first word are
// written once as their common prefix (to a "_") and (?:rest|rest), as
// llm_d_epp_(?:ready_endpoints|average_queue_size), in names' order.
func namesRegexp(names []string) string {
	var order []string
	groups := map[string][]string{}
	for _, n := range names {
		w, _, _ := strings.Cut(n, "_")
		if _, ok := groups[w]; !ok {
			order = append(order, w)
		}
		groups[w] = append(groups[w], n)
	}
	alts := make([]string, 0, len(order))
	for _, w := range order {
		g := groups[w]
		if len(g) == 1 {
			alts = append(alts, regexp.QuoteMeta(g[0]))
			continue
		}
		p := g[0]
		for _, n := range g[1:] {
			for !strings.HasPrefix(n, p) {
				p = p[:len(p)-1]
			}
		}
		p = p[:strings.LastIndex(p, "_")+1] // w is in every name: p holds w
		rests := make([]string, len(g))
		for k, n := range g {
			rests[k] = regexp.QuoteMeta(n[len(p):])
		}
		alts = append(alts, regexp.QuoteMeta(p)+"(?:"+strings.Join(rests, "|")+")")
	}
	return strings.Join(alts, "|")
}

// poolSeriesExpr is the PoolSeries query: the most series of one pool
// gauge on one page, or (flow) the pools the flow-control series and the
// ready gauges name together (above 1: flows of two pools, or of another
// pool than the gauges'; an EPP without --pool-name writes its flows
// without one, and they are not counted).
func (b shapes) poolSeriesExpr(flow bool) parser.Expr {
	perPage := aggregate(parser.COUNT, false, append([]string{labels.MetricName}, b.o.pageLabels()...), namesSelector(poolGaugeNames(), b.sel))
	if !flow {
		return aggregate(parser.MAX, false, nil, perPage)
	}
	// The pools the flows name, and the pool the ready gauges name (label
	// name, renamed to the flows' label to be counted with them): a flow
	// of another pool than the gauges' is another EPP's held request.
	flows := aggregate(parser.GROUP, false, []string{flowPoolLabel},
		namesSelector(flowNames(), b.sel, labels.MustNewMatcher(labels.MatchNotEqual, flowPoolLabel, "")))
	gauges := aggregate(parser.GROUP, false, []string{flowPoolLabel}, call("label_replace",
		namesSelector(modelserver.EPPFamilies().ReadyEndpoints.Names(), b.sel, labels.MustNewMatcher(labels.MatchNotEqual, poolLabel, "")),
		&parser.StringLiteral{Val: flowPoolLabel}, &parser.StringLiteral{Val: "$1"}, &parser.StringLiteral{Val: poolLabel}, &parser.StringLiteral{Val: "(.+)"}))
	pools := aggregate(parser.COUNT, false, nil, binary(parser.LOR, flows, gauges, nil))
	// The per-page counts carry __name__, the pools count none: or keeps both.
	return aggregate(parser.MAX, false, nil, binary(parser.LOR, perPage, pools, nil))
}

// poolSeriesDetail is what an EPP target's series show when its
// PoolSeries count is above 1: an error for the pool gauges (gauge) or the
// flow-control series (flow), nil for neither.
type poolSeriesDetail struct {
	gauge, flow error
}

// poolSeriesRound asks, for each EPP target whose PoolSeries count is
// above 1 (usually none: then no query is sent), for its pool gauges' and
// flow-control series, one unbatched query each, to name the family and
// the labels that differ. It returns the details by target index and the
// queries sent.
func (e *Evaluator) poolSeriesRound(ctx context.Context, p *Plan, t time.Time, values []sigValues) (map[int]poolSeriesDetail, int) {
	var out map[int]poolSeriesDetail
	sent := 0
	for i, tg := range p.targets {
		if n, ok := values[i].get(PoolSeries); !ok || !(n > 1) || p.buildErrs[i] != nil {
			continue
		}
		sel := newShapes(tg, p.opts).sel
		flow := tg.FlowControlHeld && tg.Held == ""
		names := poolGaugeNames()
		if flow {
			names = append(names, flowNames()...)
		}
		q := namesSelector(names, sel).String()
		vec, _, err := e.API.Instant(ctx, q, t)
		sent++
		if out == nil {
			out = map[int]poolSeriesDetail{}
		}
		if err != nil {
			// The count alone: the series could not be read to name them.
			out[i] = poolSeriesDetail{gauge: fmt.Errorf("target %q: %.0f series of one EPP pool gauge on one page, or flow-control series of %.0f InferencePools (the series could not be read to name them: %v)", tg.Name, values[i].v[PoolSeries], values[i].v[PoolSeries], err)}
			continue
		}
		out[i] = describePoolSeries(tg.Name, vec, p.opts.pageLabels(), flow)
	}
	return out, sent
}

// describePoolSeries names, in vec (a target's pool gauge and flow-control
// series), the first pool gauge with two series on one page (by page
// labels) and the labels in which they differ, and (flow) the first two
// InferencePools the flow-control series name.
func describePoolSeries(target string, vec model.Vector, page []string, flow bool) poolSeriesDetail {
	var d poolSeriesDetail
	gauges := map[string]bool{}
	for _, n := range poolGaugeNames() {
		gauges[n] = true
	}
	ms := make([]model.Metric, 0, len(vec))
	for _, s := range vec {
		ms = append(ms, s.Metric)
	}
	slices.SortFunc(ms, func(a, b model.Metric) int { return strings.Compare(a.String(), b.String()) })
	key := func(m model.Metric) string {
		var b strings.Builder
		b.WriteString(string(m[model.MetricNameLabel]))
		for _, l := range page {
			fmt.Fprintf(&b, "\xff%s", m[model.LabelName(l)])
		}
		return b.String()
	}
	ready := map[string]bool{}
	for _, n := range modelserver.EPPFamilies().ReadyEndpoints.Names() {
		ready[n] = true
	}
	first := map[string]model.Metric{}
	var pools, gaugePools []string
	for _, m := range ms {
		name := string(m[model.MetricNameLabel])
		if gauges[name] && d.gauge == nil {
			k := key(m)
			if a, ok := first[k]; ok {
				d.gauge = twoSeriesError(target, name, a, m, page)
			} else {
				first[k] = m
			}
		}
		if p := string(m[poolLabel]); ready[name] && p != "" && !slices.Contains(gaugePools, p) {
			gaugePools = append(gaugePools, p)
		}
		if p := string(m[flowPoolLabel]); flow && !gauges[name] && p != "" && !slices.Contains(pools, p) {
			pools = append(pools, p)
		}
	}
	switch {
	case len(pools) > 1:
		d.flow = fmt.Errorf("target %q: the flow-control series (label %s) name %d InferencePools (%q and %q): an Endpoint Picker serves one pool, and their held requests would be summed into one; give a selector that matches one pool's EPP (its service or job label)",
			target, flowPoolLabel, len(pools), pools[0], pools[1])
	case len(pools) == 1 && len(gaugePools) == 1 && pools[0] != gaugePools[0]:
		// (Gauges of two pools: the Pools check makes every signal unknown.)
		d.flow = fmt.Errorf("target %q: the flow-control series (label %s) are of InferencePool %q, the ready endpoints (label %s) of %q: an Endpoint Picker writes its one pool on both, so the held requests are another pool's EPP's; give a selector that matches one pool's EPP (its service or job label)",
			target, flowPoolLabel, pools[0], poolLabel, gaugePools[0])
	}
	return d
}

// twoSeriesError says that a and b, two series of the pool gauge name on
// one page, differ in the labels it names.
func twoSeriesError(target, name string, a, b model.Metric, page []string) error {
	var diff []string
	seen := map[model.LabelName]bool{}
	for _, m := range []model.Metric{a, b} {
		for l := range m {
			if !seen[l] && a[l] != b[l] {
				seen[l] = true
				diff = append(diff, fmt.Sprintf("%s (%q, %q)", l, a[l], b[l]))
			}
		}
	}
	slices.Sort(diff)
	where := []string{}
	for _, l := range page {
		if v := a[model.LabelName(l)]; v != "" {
			where = append(where, fmt.Sprintf("%s=%q", l, v))
		}
	}
	if a[model.InstanceLabel] == "" && a[model.LabelName(page[2])] == "" {
		// No instance and no pod: a relabel dropped what tells one scraped
		// page from another, so two EPP replicas' series (one each) look
		// like one page's two. Refused all the same (fail closed), with the
		// way out: their own series were one each.
		return fmt.Errorf("target %q: %s has two series that no %s or %s label tells apart {%s}, differing in %s: the router writes one per pool (label %s) on each EPP replica's page, and a relabel that drops %s and %s leaves two replicas' series (or one page's two) indistinguishable, so which is the pool's is unknown; keep %s or %s on the EPP's series (or, if %s names the EPP's pod, relabel it to %s)",
			target, name, model.InstanceLabel, page[2], strings.Join(where, ","), strings.Join(diff, ", "), poolLabel, model.InstanceLabel, page[2], model.InstanceLabel, page[2], strings.Join(diffNames(a, b), " or "), page[2])
	}
	return fmt.Errorf("target %q: %s has two series on one EPP page {%s}, differing in %s: the router writes one per pool (label %s), so which is the pool's is unknown (an extra label: a newer or patched router, or relabelling; read as one, the larger would be taken); drop the extra label (metric_relabel_configs) or scrape the EPP's own /metrics (its pods' port 9090)",
		target, name, strings.Join(where, ","), strings.Join(diff, ", "), poolLabel)
}

// diffNames are the names of the labels in which a and b differ, sorted.
func diffNames(a, b model.Metric) []string {
	var out []string
	for _, m := range []model.Metric{a, b} {
		for l := range m {
			if a[l] != b[l] && !slices.Contains(out, string(l)) {
				out = append(out, string(l))
			}
		}
	}
	slices.Sort(out)
	return out
}

// onePoolSeries reads PoolSeries (no series: 0) and, with d, makes the
// signals read from the doubled series unknown (ReasonAmbiguous): every
// signal but the target's own queries for a pool gauge, held for the
// flow-control series. It reports whether a pool gauge was doubled.
func onePoolSeries(tg Target, has signalSet, vals *sigValues, errs map[Signal]error, d *poolSeriesDetail) bool {
	if ReasonOf(errs[PoolSeries]) == ReasonEmpty {
		delete(errs, PoolSeries)
		vals.put(PoolSeries, 0)
	}
	n, ok := vals.get(PoolSeries)
	if !ok || n <= 1 || d == nil {
		return false
	}
	if d.gauge == nil && d.flow == nil {
		// Counted, not seen when asked again (a page scraped between the two
		// queries): unknown all the same, the count named.
		d.gauge = fmt.Errorf("target %q: %.0f series of one EPP pool gauge on one page or flow-control series of %.0f InferencePools, gone when asked for by name", tg.Name, n, n)
	}
	if d.flow != nil {
		if _, own := tg.Overrides[Held]; !own && tg.Held == "" && has.has(Held) {
			vals.drop(Held)
			errs[Held] = &QueryError{Reason: ReasonAmbiguous, Err: d.flow}
		}
	}
	if d.gauge == nil {
		return false
	}
	unknownBut(tg, has, vals, errs, &QueryError{Reason: ReasonAmbiguous, Err: d.gauge}, PoolSeries, Pools)
	return true
}

// unknownBut makes every signal of tg unknown with err, but its own
// queries (overrides, a replicas query's Current) and keep.
func unknownBut(tg Target, has signalSet, vals *sigValues, errs map[Signal]error, err error, keep ...Signal) {
	for _, s := range Signals() {
		if _, own := tg.Overrides[s]; own || slices.Contains(keep, s) || (s == Current && tg.Replicas != "") {
			continue
		}
		if has.has(s) || s == Current {
			vals.drop(s)
			errs[s] = err
		}
	}
}
