package modelserver

import (
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// pql is Prometheus's PromQL parser with default options.
var pql = parser.NewParser(parser.Options{})

// Series splits a family alternative of Families into the metric name and
// the label matchers that select its series. A plain name (`vllm:num_requests_running`)
// selects every series of the family: matchers is nil. An alternative
// written as a PromQL selector (`nv_trt_llm_request_metrics{request_type="active"}`,
// read with Prometheus's own parser) selects the series whose labels match,
// for exporters that put several signals into one family told apart by a
// label (Triton's TensorRT-LLM backend). The returned matchers never
// include the name's. An alternative that does not parse panics: the
// tables are constants, and TestSeriesParses reads every one.
func Series(alternative string) (name string, matchers []*labels.Matcher) {
	if !strings.ContainsRune(alternative, '{') {
		return alternative, nil
	}
	ms, err := pql.ParseMetricSelector(alternative)
	if err != nil {
		panic(fmt.Sprintf("modelserver: family alternative %q is not a selector: %v", alternative, err))
	}
	for _, m := range ms {
		if m.Name == labels.MetricName {
			name = m.Value
			continue
		}
		matchers = append(matchers, m)
	}
	return name, matchers
}
