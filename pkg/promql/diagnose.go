package promql

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/pkg/modelserver"
)

// Namer lists the metric names of the series a selector matches.
// *Client is one.
type Namer interface {
	// Names returns the distinct __name__ values of the series matching
	// sel (label matchers, at least one) with samples in [start, end]
	// (zero times: all the data Prometheus holds).
	Names(ctx context.Context, sel []*labels.Matcher, start, end time.Time) ([]string, error)
}

// Names implements Namer with Prometheus's label values endpoint
// (/api/v1/label/__name__/values?match[]=...), an index lookup that
// evaluates no query. Errors: *QueryError as for a query; a selector with
// no matcher (Prometheus refuses to list every series).
func (c *Client) Names(ctx context.Context, sel []*labels.Matcher, start, end time.Time) ([]string, error) {
	if len(sel) == 0 {
		return nil, fmt.Errorf("names: a selector with no label matcher")
	}
	match := SelectorText(sel)
	ctx, cancel, _ := c.context(ctx)
	defer cancel()
	vals, _, _, err := c.api.LabelValues(ctx, labels.MetricName, []string{match}, start, end)
	if err != nil {
		return nil, c.queryError(ctx, "label values of __name__ for "+match, err)
	}
	c.answered.Store(true)
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	return out, nil
}

// SelectorText is sel as PromQL's printer writes it in a selector:
// {namespace="llm",pod=~"chat-.*"}.
func SelectorText(sel []*labels.Matcher) string {
	return (&parser.VectorSelector{LabelMatchers: sel}).String()
}

// Diagnose says in one sentence why the queries of a target of server
// whose selector is sel found no series, from names, the metric names of
// the series sel matches (Namer.Names over the same time, which span
// words: "in the range", "in the last 5 minutes"): nothing
// matches the labels; the series are another model server's; they are the
// server's metrics renamed with '_' for ':' (an OpenTelemetry or
// remote-write path: infscale reads the names the server exports); or none
// of them is the server's. It returns "" when some name is one of the
// server's families: the selector is right, and what is missing is a
// family the server's version does not export. server Unknown (auto)
// accepts any known server's families.
func Diagnose(names []string, server modelserver.Server, sel []*labels.Matcher, span string) string {
	text := SelectorText(sel)
	if len(names) == 0 {
		return "no series in Prometheus match the selector " + text + " " + span + ": its labels match nothing (compare them with count by (job, namespace, service, pod) (up))"
	}
	servers := []modelserver.Server{server}
	if server == modelserver.Unknown {
		servers = modelserver.Servers()
	}
	for _, s := range servers {
		if ofServer(names, s) != "" {
			return ""
		}
	}
	want := "a known model server's"
	example := modelserver.VLLM.Families().Running[0]
	if server != modelserver.Unknown {
		want = server.String() + "'s"
		if q := server.Families().Queue(); len(q) > 0 {
			example = q[0]
		}
		for _, o := range modelserver.Servers() {
			if n := ofServer(names, o); o != server && n != "" {
				return fmt.Sprintf("the series the selector %s matches are %s's (%s), not %s: is the server %s?", text, o, n, want, o)
			}
		}
	}
	for _, s := range servers {
		for _, f := range s.Families().All() {
			u := strings.ReplaceAll(f, ":", "_")
			if u == f {
				continue
			}
			for _, n := range names {
				if familyOf(n, u) {
					return fmt.Sprintf("the selector %s matches %s, %s's %s with '_' for ':': a collector or remote-write path renamed it; infscale reads the names the server exports (export them unchanged)", text, n, s, f)
				}
			}
		}
	}
	return fmt.Sprintf("the selector %s matches %s, none of them %s (such as %s): does it select the model server's pods?", text, nameList(names), want, example)
}

// nameList is names counted and the first 5 in order: "7 metric names
// (a, b, c, d, e and 2 more)".
func nameList(names []string) string {
	shown := slices.Clone(names)
	slices.Sort(shown)
	more := ""
	if len(shown) > 5 {
		more = fmt.Sprintf(" and %d more", len(shown)-5)
		shown = shown[:5]
	}
	count := fmt.Sprintf("%d metric names", len(names))
	if len(names) == 1 {
		count = "1 metric name"
	}
	return fmt.Sprintf("%s (%s%s)", count, strings.Join(shown, ", "), more)
}

// DiagnoseSelector asks n for the names sel matches over [start, end]
// (span words it) and diagnoses them (Diagnose). When none has samples
// there, it asks again over all the data Prometheus holds: a selector
// whose series lie outside the span (a range before the data or past the
// retention, pods no longer scraped) is said to be so, not to match
// nothing. "" when Diagnose has nothing to say or the first names query
// failed.
func DiagnoseSelector(ctx context.Context, n Namer, server modelserver.Server, sel []*labels.Matcher, start, end time.Time, span string) string {
	names, err := n.Names(ctx, sel, start, end)
	if err != nil {
		return ""
	}
	if len(names) > 0 {
		if why := Diagnose(names, server, sel, span); why != "" {
			return why
		}
		return serverLabelled(ctx, n, server, sel, start, end, span)
	}
	all, err := n.Names(ctx, sel, time.Time{}, time.Time{})
	if err != nil || len(all) == 0 {
		return Diagnose(nil, server, sel, span)
	}
	why := fmt.Sprintf("no series match the selector %s %s, but Prometheus holds series it matches outside that span, %s: check the span and Prometheus's retention, and whether they are still scraped", SelectorText(sel), span, nameList(all))
	if d := Diagnose(all, server, sel, span); d != "" {
		why += "; and " + d
	}
	return why
}

// serverLabelled says, for a vLLM target whose selector sel matches the
// server's families in [start, end], when none of them is left once
// ownSeries adds server="": every series carries a server label, so the
// queries, which leave those out as the vLLM production-stack router's
// copies, read nothing, and Diagnose, on sel, had nothing to say. ""
// otherwise (or when the names query fails).
func serverLabelled(ctx context.Context, n Namer, server modelserver.Server, sel []*labels.Matcher, start, end time.Time, span string) string {
	own := ownSeries(server, sel)
	if len(own) == len(sel) {
		return "" // not vLLM, or sel names server itself
	}
	names, err := n.Names(ctx, own, start, end)
	if err != nil || ofServer(names, server) != "" {
		return ""
	}
	return fmt.Sprintf("the %s series the selector %s matches %s all carry a %s label, which infscale's queries leave out as the vLLM production-stack router's copies of its engines' series (%s): if your engines' series carry it (a relabelling or an external label), name it in the selector (%s=~\".+\"), else select the engines' pods, not the router's",
		server, SelectorText(sel), span, modelserver.VLLMRouterServerLabel, SelectorText(own), modelserver.VLLMRouterServerLabel)
}

// ofServer is the first of names that is one of s's families (a
// histogram's _bucket, _sum and _count series included) or in its
// namespace (Families.Prefixes); "" when none is.
func ofServer(names []string, s modelserver.Server) string {
	f := s.Families()
	for _, n := range names {
		for _, fam := range f.All() {
			if familyOf(n, fam) {
				return n
			}
		}
		for _, p := range f.Prefixes {
			if strings.HasPrefix(n, p) {
				return n
			}
		}
	}
	return ""
}

// familyOf reports whether the series name n belongs to the family fam:
// the name itself, or a histogram's or summary's _bucket, _sum, _count, or
// a counter's _created.
func familyOf(n, fam string) bool {
	rest, ok := strings.CutPrefix(n, fam)
	return ok && (rest == "" || rest == "_bucket" || rest == "_sum" || rest == "_count" || rest == "_created")
}
