package promql

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/pkg/modelserver"
)

// eppExprs are the queries of a target read from an llm-d Endpoint Picker
// (server epp, pkg/modelserver's epp.go): its series describe the whole pool,
// so there is no per-pod sum and no liveness join (the EPP's pool gauges
// cover the endpoints with fresh metrics already). The selector picks the
// pool's EPP (its scrape labels: namespace, service or job). Each family is
// asked under its llm_d_epp_ name, else its deprecated twin
// (`A_new or A_old`, each side aggregated to one series): never both.
//
//	reporting, current  max(ready_endpoints)
//	pools               count(count by (name) (ready_endpoints) or count by (name) (<its twin>))
//	pool_series         max(count by (__name__, <page labels>) ({__name__=~"<pool gauges>"})
//	                      or count(group by (inference_pool) ({__name__=~"<flow-control families>",inference_pool!=""})))
//	running, waiting    round(max(average_* * ready_endpoints)) or round(max(average_*) * max(ready_endpoints)) or (max(ready_endpoints) == 0)
//	kv                  max(average_kv_cache_utilization) and (max(ready_endpoints) > 0)
//	held                sum(clamp_min(max without (<HA labels>) (flow_control_queue_size), 0) or <the twin's, likewise>)    (Target.FlowControlHeld)
//	                      or (0 * group({__name__=~"<saturation twins>"}) and on () (group(last_over_time(flow_control_queue_size[L])) or <the twin's>))
//	                      or -1 * group({__name__=~"<saturation twins>"})    (flowQueueGone: an error wrapping ErrFlowQueueGone)
//	queued              count(max by (<endpoint>) (per_endpoint_queue_size) > 0)   (Target.Demand)
//	arrivals, tokens    sum(sum by (instance) (max without (<HA labels>) (rate(request_total[w]))) or <the twin's, likewise>), ..._input_tokens_sum, ..._output_tokens_sum
//	ttft, itl           histogram_quantile over request_ttft_seconds / request_streaming_itl_seconds
//
// max() of a pool gauge: the EPP's replicas (and an HA Prometheus pair)
// write the same pool's value (a product of two gauges is taken per replica
// first: a replica a refresh behind has another count and average); the counters and the flow-control queue
// are each EPP replica's own and add up.
// poolLabel names an EPP's pool on its pool gauges (the InferencePool's
// name), as scrape's page check reads it.
const poolLabel = "name"

// eppInstance is the label that tells an EPP's replicas apart in
// Prometheus: the scrape's instance (each replica pod's address).
const eppInstance = "instance"

func (b shapes) eppExprs(t Target) map[Signal]parser.Expr {
	f := modelserver.EPPFamilies()
	out := map[Signal]parser.Expr{}
	maxOf := func(name string) parser.Expr { return aggregate(parser.MAX, false, nil, selector(name, b.sel)) }
	twin := func(tw modelserver.Twin, per func(cur bool, name string) parser.Expr) parser.Expr {
		var es []parser.Expr
		for i, n := range tw.Names() {
			es = append(es, per(i == 0, n))
		}
		return orChain(es)
	}
	ready := func(cur bool) string {
		if cur {
			return f.ReadyEndpoints.Current
		}
		return f.ReadyEndpoints.Deprecated
	}
	out[Reporting] = twin(f.ReadyEndpoints, func(_ bool, n string) parser.Expr { return maxOf(n) })
	// One pool's EPP, or max() would mix two pools' gauges (check). The
	// names are united over both spellings: an older router's EPP writes
	// only the twin, so beside a current one the current name alone saw
	// one pool while every signal read that pool's series only.
	byPool := twin(f.ReadyEndpoints, func(_ bool, n string) parser.Expr {
		return aggregate(parser.COUNT, false, []string{poolLabel}, selector(n, b.sel))
	})
	out[Pools] = aggregate(parser.COUNT, false, nil, byPool)
	out[PoolSeries] = b.poolSeriesExpr(t.FlowControlHeld && t.Held == "")
	if t.Replicas == "" {
		out[Current] = twin(f.ReadyEndpoints, func(_ bool, n string) parser.Expr { return maxOf(n) })
	}
	total := func(avg modelserver.Twin) parser.Expr {
		return twin(avg, func(cur bool, n string) parser.Expr {
			// Each EPP replica's own average x its own ready count (their
			// series match one to one), the largest: max() of each gauge
			// alone put one replica's average with another's count.
			// Series whose labels do not pair (a label on one gauge only)
			// multiply to nothing: then the gauges' maxima, as before.
			prod := call("round", aggregate(parser.MAX, false, nil, binary(parser.MUL, selector(n, b.sel), selector(ready(cur), b.sel), nil)))
			apart := call("round", binary(parser.MUL, maxOf(n), maxOf(ready(cur)), nil))
			return binary(parser.LOR, binary(parser.LOR, prod, apart, nil), binary(parser.EQLC, maxOf(ready(cur)), number(0), nil), nil)
		})
	}
	out[Running], out[Waiting] = total(f.AvgRunning), total(f.AvgQueue)
	out[KV] = twin(f.AvgKV, func(cur bool, n string) parser.Expr {
		return binary(parser.LAND, maxOf(n), binary(parser.GTR, maxOf(ready(cur)), number(0), nil), nil)
	})
	// The copies an HA Prometheus pair returns (Thanos, Mimir, federation
	// without dedup) differ in a replica label only: one of each is summed.
	noCopies := func(e parser.Expr) parser.Expr {
		if len(b.o.ReplicaLabels) > 0 {
			return aggregate(parser.MAX, true, b.o.ReplicaLabels, e)
		}
		return e
	}
	if t.FlowControlHeld && t.Held == "" {
		// Each flow's series clamped at 0 before the sum: one flow's gauge
		// can dip below 0 after its garbage collection, and it cancels no
		// other flow's held requests (pkg/scrape's flowHeld). The twins are
		// chosen series by series inside the sum, not for the whole query:
		// embedded mode takes each EPP page's own family, and an older
		// router's replica (the twin only) beside a current one (both
		// names, same labels: its twin copy is dropped by the or) holds
		// requests of its own.
		var flows []parser.Expr
		for _, n := range f.FlowQueue.Names() {
			flows = append(flows, call("clamp_min", noCopies(selector(n, b.sel)), number(0)))
		}
		// No queue series now: the router writes a flow's series from its
		// first request and deletes it when it collects the idle flow, while
		// it writes the saturation every dispatch cycle. 0 then (as
		// embedded mode reads such a page), but only if a queue series was
		// under the selector within the lookback: a relabel that drops the
		// queue family alone (one series per flow) and keeps the saturation
		// read 0 forever, and a pool at zero never woke. Each twin's
		// lookback is grouped apart: a backend whose last_over_time drops
		// the metric name (as PromQL's other _over_time functions do) would
		// make the twins of one flow two series of one label set.
		var seen []parser.Expr
		for _, n := range f.FlowQueue.Names() {
			seen = append(seen, aggregate(parser.GROUP, false, nil, call("last_over_time", rangeOf(selector(n, b.sel), t.flowQueueLookback()))))
		}
		saturation := func() parser.Expr {
			return aggregate(parser.GROUP, false, nil, namesSelector(f.Saturation.Names(), b.sel))
		}
		idle := binary(parser.LAND, binary(parser.MUL, number(0), saturation(), nil), orChain(seen), []string{})
		// The saturation without any queue series within the lookback
		// reads flowQueueGone, a marker the evaluator turns into an error
		// wrapping ErrFlowQueueGone (flowHeldHint): serve tells it from no
		// saturation at all (flow control off, the EPP not scraped) and
		// carries a pool idle at zero through it (docs/llm-d.md).
		gone := binary(parser.MUL, number(flowQueueGone), saturation(), nil)
		out[Held] = orChain([]parser.Expr{aggregate(parser.SUM, false, nil, orChain(flows)), idle, gone})
	}
	// A counter's name is chosen per EPP replica (its scrape's instance),
	// as embedded mode takes each page's own family: during a rollout of
	// the router an older replica writes the twin only, and the current
	// name chosen for the whole pool dropped its requests (the arrivals
	// read low, a scale-down in the middle of an upgrade). The twins'
	// labels differ (fairness_id on the current name only), so the or is
	// taken on the per-instance sums.
	rateOf := func(tw modelserver.Twin, suffix string) parser.Expr {
		var per []parser.Expr
		for _, n := range tw.Names() {
			per = append(per, aggregate(parser.SUM, false, []string{eppInstance}, noCopies(call("rate", rangeOf(selector(n+suffix, b.sel), b.o.DemandWindow)))))
		}
		return aggregate(parser.SUM, false, nil, orChain(per))
	}
	if _, own := t.Overrides[Waiting]; !own && t.Demand {
		// The endpoints holding a queue, by the endpoint's label (the
		// twin's is model_server_pod); max by it: the EPP's replicas write
		// the same endpoint's gauge. Stale endpoints count too: serve caps
		// it at the ready ones.
		out[Queued] = twin(f.EndpointQueue, func(cur bool, n string) parser.Expr {
			label := "model_server_pod"
			if cur {
				label = "model_server_endpoint"
			}
			perEndpoint := aggregate(parser.MAX, false, []string{label}, selector(n, b.sel))
			return aggregate(parser.COUNT, false, nil, binary(parser.GTR, perEndpoint, number(0), nil))
		})
	}
	if t.Demand {
		out[Arrivals] = rateOf(f.Requests, "")
		out[PromptTokens] = rateOf(f.InputTokens, "_sum")
		out[GenerationTokens] = rateOf(f.OutputTokens, "_sum")
	}
	if t.TTFTQuantile != 0 {
		out[TTFT] = b.ttft(f.TTFT.Names(), t.TTFTQuantile, t.TTFTWindow)
	}
	if t.ITLQuantile != 0 {
		out[ITL] = b.ttft(f.ITL.Names(), t.ITLQuantile, t.ITLWindow)
	}
	return out
}

// DefaultFlowQueueLookback is Target.FlowQueueLookback when 0:
// FlowQueueLookbackFor the default cooldownPeriod (5 minutes).
const DefaultFlowQueueLookback = 20 * time.Minute

// flowCollectMargin is how long after a flow's last request llm-d's
// router may still write its queue series: it collects an idle flow, and
// deletes the series, 5 to 10 minutes after its last request (a fixed
// 5-minute flow timeout, checked every 5 minutes); 5 minutes to spare.
const flowCollectMargin = 15 * time.Minute

// FlowQueueLookbackFor is the FlowQueueLookback of a target that goes to
// zero after cooldown: cooldown + 15 minutes, so that held stays known
// (0 once the router collects the idle flows) through the whole cooldown
// that follows the last request.
func FlowQueueLookbackFor(cooldown time.Duration) time.Duration {
	return cooldown + flowCollectMargin
}

func (t Target) flowQueueLookback() time.Duration {
	if t.FlowQueueLookback <= 0 {
		return DefaultFlowQueueLookback
	}
	return t.FlowQueueLookback
}

// flowQueueGone is the value of Held's last branch (the flow controller's
// saturation present, no flow-control queue series under the selector now
// nor within the lookback): no count of requests (held is a sum of
// clamped gauges, >= 0), so it cannot be read as one.
const flowQueueGone = -1

// ErrFlowQueueGone is wrapped by the error of Held of a target reading the
// flow-control queue (server epp, zero.flow_control) when the flow
// controller's saturation is under the selector and no queue series is,
// now or within the lookback (Target.FlowQueueLookback): held unknown
// (ReasonEmpty), which serve reads as 0 only for a pool it saw idle at
// zero with held known 0 (docs/llm-d.md, "Scale from zero on the
// flow-control queue"). Without the saturation the error does not wrap it.
var ErrFlowQueueGone = errors.New("flow-control saturation without a queue series within the lookback")

// negativeValue is the error of a query that answered a value below 0
// (branchValues.single): every signal is a count, a rate, a fraction or a
// duration.
type negativeValue float64

func (v negativeValue) Error() string { return fmt.Sprintf("negative value %v", float64(v)) }

// flowHeldHint says what to do when Held of a target reading the
// flow-control queue is unknown for want of series: the saturation without
// a queue series within the lookback (the flowQueueGone marker: an error
// wrapping ErrFlowQueueGone), or no saturation either (flow control off,
// the EPP not scraped under the selector). "no series" alone named
// nothing. Held stays unknown, ReasonEmpty both.
func flowHeldHint(tg Target, errs map[Signal]error) {
	if tg.Server != modelserver.EPP || !tg.FlowControlHeld || tg.Held != "" {
		return
	}
	qe, ok := errs[Held].(*QueryError)
	if _, own := tg.Overrides[Held]; own || !ok {
		return
	}
	f := modelserver.EPPFamilies()
	l := model.Duration(tg.flowQueueLookback())
	var nv negativeValue
	switch {
	case qe.Reason == ReasonNaN && errors.As(qe.Err, &nv) && nv == flowQueueGone:
		errs[Held] = &QueryError{Reason: ReasonEmpty, Query: qe.Query, Err: fmt.Errorf(
			"%w: the flow controller's saturation (%s or %s) is under the selector, but no flow-control queue series (%s or %s) is, now or in the last %s, to show that it is no request held: "+
				"a pool idle for longer than %s (the router deletes an idle flow's series) or an EPP restarted with no request since reads unknown until its next request writes the series "+
				"(serve reads 0 at zero replicas when the stay at zero began with held known 0: docs/llm-d.md); "+
				"else, does the scrape keep the queue family (a metric_relabel_configs drop of it leaves held unknown; read as 0, a pool at zero would never wake)?",
			ErrFlowQueueGone, f.Saturation.Current, f.Saturation.Deprecated, f.FlowQueue.Current, f.FlowQueue.Deprecated, l, l)}
	case qe.Reason == ReasonEmpty:
		errs[Held] = &QueryError{Reason: qe.Reason, Query: qe.Query, Err: fmt.Errorf(
			"%w: no flow-control queue series (%s or %s) under the selector, nor the flow controller's saturation (%s or %s): "+
				"is the flowControl feature gate on, and is the EPP scraped under this selector?",
			qe.Err, f.FlowQueue.Current, f.FlowQueue.Deprecated, f.Saturation.Current, f.Saturation.Deprecated)}
	}
}
