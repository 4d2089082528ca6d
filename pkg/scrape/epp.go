package scrape

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/infscale/infscale/pkg/modelserver"
)

// Pool is what an llm-d Endpoint Picker's /metrics page says of its
// InferencePool (modelserver.EPP; the families and their router commit are in
// pkg/modelserver's epp.go). Every float is NaN when absent, never 0. Each
// signal is read from the current llm_d_epp_ family when the page has it,
// else from its deprecated twin, never both (the EPP writes both).
type Pool struct {
	// Name is the pool (poolName: label name of the pool gauges, else
	// inference_pool of the flow-control queue, else of the saturation),
	// "" when absent.
	Name string
	// Ready is the endpoints with fresh metrics (ready_endpoints).
	Ready float64
	// Running and Waiting are the model servers' running and waiting
	// requests over the ready endpoints: the EPP's averages times Ready,
	// rounded to a whole request (the averages are rounded to two
	// decimals, so the product is off by at most 0.005 x Ready: exact up to
	// 100 endpoints); 0 when Ready is 0 (the EPP then leaves its averages
	// at their last value).
	Running, Waiting float64
	// KV is the mean KV-cache usage (0..1) over the ready endpoints; NaN
	// when Ready is 0.
	KV float64
	// EndpointQueue is each endpoint's waiting requests by endpoint name
	// (every endpoint the EPP knows, stale ones too); nil when absent.
	EndpointQueue map[string]float64
	// RequestRunning is requests in flight through the EPP (summed over
	// models, fairness ids and priorities).
	RequestRunning float64
	// InflightRequests and InflightTokens are the in-flight load
	// producer's requests and tokens, summed over endpoints (absent unless
	// the producer is configured).
	InflightRequests, InflightTokens float64
	// FlowQueue is the requests held in the flow-control queue, summed over
	// flows and priorities, each flow's series clamped at 0 first
	// (readFlowQueue): the held count of a pool at zero. NaN when absent
	// (FlowQueueErr nil) or not read (FlowQueueErr says why).
	FlowQueue float64
	// FlowQueueErr is why the page's flow-control queue is not read: its
	// family declared other than a gauge (ErrWrongType) or not a count
	// (ErrNotCount: a flow NaN, ±Inf or beyond MaxRequests). It names the
	// family or series, not the page.
	FlowQueueErr error
	// Saturation is flow_control_pool_saturation by stage (prefill, decode,
	// effective) as read; nil when absent.
	Saturation map[string]float64
	// Stale is flow_control_stale_endpoints summed over detectors.
	Stale float64
	// Effective is the saturation that gates dispatch (stage effective,
	// else the largest stage) when it measures load, NaN when it is absent
	// or fail-closed: the pool is empty (Ready 0), an endpoint's metrics are
	// stale (Stale > 0), or it reads exactly 1.0 with Ready or Stale
	// unknown (docs/metrics.md of llm-d-router: "a reading pinned at exactly
	// 1.0 can be fail-closed stale-metrics or an empty pool rather than
	// genuine overload").
	Effective float64
	// Chosen maps each signal read (ready, running, waiting, kv,
	// endpoint_queue, request_running, flow_queue, saturation, requests,
	// input_tokens, output_tokens) to the family it was read from.
	Chosen map[string]string
}

// Queued is the endpoints of EndpointQueue with a request waiting, at most
// ready (the EPP keeps stale endpoints' gauges): the replicas holding the
// pool's queue (recommend.Observation.Queued); 0 (unknown) without the
// per-endpoint family.
func (p *Pool) Queued(ready int) int {
	n := 0
	for _, v := range p.EndpointQueue {
		if v > 0 {
			n++
		}
	}
	return max(0, min(n, ready))
}

// eppPool reads an EPP page into a Pool and sets the Page's per-target
// signals from it: Running, Waiting and KV (pool totals and mean), the
// request counter (generic), prompt and generation token counters (the
// token histograms' _sum).
func eppPool(raw *rawPage, p *Page) {
	f := modelserver.EPPFamilies()
	pool := &Pool{Chosen: map[string]string{}}
	get := func(key string, t modelserver.Twin, agg func([]float64) float64, want kind) float64 {
		v, name := pick(raw, t.Names(), agg, want)
		if name != "" {
			pool.Chosen[key] = name
		}
		return v
	}
	pool.Ready = get("ready", f.ReadyEndpoints, maxOf, gaugeKind)
	avgRun := get("running", f.AvgRunning, maxOf, gaugeKind)
	avgQueue := get("waiting", f.AvgQueue, maxOf, gaugeKind)
	pool.KV = get("kv", f.AvgKV, maxOf, gaugeKind)
	pool.RequestRunning = get("request_running", f.RequestRunning, sum, gaugeKind)
	pool.InflightRequests = get("inflight_requests", f.InflightRequests, sum, gaugeKind)
	pool.InflightTokens = get("inflight_tokens", f.InflightTokens, sum, gaugeKind)
	var flow string
	pool.FlowQueue, flow, pool.FlowQueueErr = readFlowQueue(raw)
	if flow != "" {
		pool.Chosen["flow_queue"] = flow
	}
	pool.Stale = get("stale", f.StaleEndpoints, sum, gaugeKind)
	pool.Name = poolName(raw)
	total := func(avg float64) float64 {
		switch {
		case math.IsNaN(pool.Ready) || math.IsNaN(avg):
			if pool.Ready == 0 {
				return 0
			}
			return math.NaN()
		case pool.Ready == 0:
			return 0
		}
		return math.Round(avg * pool.Ready)
	}
	pool.Running, pool.Waiting = total(avgRun), total(avgQueue)
	if pool.Ready == 0 {
		pool.KV = math.NaN()
	}
	for i, name := range f.EndpointQueue.Names() {
		if raw.checkType(name, gaugeKind) != nil || !raw.hasFinite(name) {
			continue
		}
		label := []string{"model_server_endpoint", "model_server_pod"}[i]
		pool.EndpointQueue = map[string]float64{}
		for _, j := range raw.byName[name] {
			if s := raw.samples[j]; finite(s.Value) {
				pool.EndpointQueue[s.Labels.Get(label)] += s.Value
			}
		}
		pool.Chosen["endpoint_queue"] = name
		break
	}
	for _, name := range f.Saturation.Names() {
		if raw.checkType(name, gaugeKind) != nil || !raw.hasFinite(name) {
			continue
		}
		pool.Saturation = map[string]float64{}
		for _, j := range raw.byName[name] {
			if s := raw.samples[j]; finite(s.Value) {
				pool.Saturation[s.Labels.Get("stage")] = math.Max(pool.Saturation[s.Labels.Get("stage")], s.Value)
			}
		}
		pool.Chosen["saturation"] = name
		break
	}
	pool.Effective = effective(pool)

	p.Pool = pool
	p.Running, p.Waiting, p.KV = pool.Running, pool.Waiting, pool.KV
	p.Chosen.Running, p.Chosen.Waiting, p.Chosen.KV = pool.Chosen["running"], pool.Chosen["waiting"], pool.Chosen["kv"]
	if p.Chosen.Requests != "" {
		pool.Chosen["requests"] = p.Chosen.Requests
	}
	sums := func(t modelserver.Twin) []string {
		var out []string
		for _, n := range t.Names() {
			out = append(out, n+"_sum")
		}
		return out
	}
	p.PromptTokens, p.Chosen.PromptTokens = pick(raw, sums(f.InputTokens), sum, histogramKind)
	p.GenerationTokens, p.Chosen.GenerationTokens = pick(raw, sums(f.OutputTokens), sum, histogramKind)
	if p.Chosen.PromptTokens != "" {
		pool.Chosen["input_tokens"] = p.Chosen.PromptTokens
	}
	if p.Chosen.GenerationTokens != "" {
		pool.Chosen["output_tokens"] = p.Chosen.GenerationTokens
	}
}

// effective is the gating saturation when it measures load (Pool.Effective).
func effective(pool *Pool) float64 {
	if pool.Saturation == nil {
		return math.NaN()
	}
	v, ok := pool.Saturation["effective"]
	if !ok {
		stages := make([]string, 0, len(pool.Saturation))
		for s := range pool.Saturation {
			stages = append(stages, s)
		}
		sort.Strings(stages)
		v = math.Inf(-1)
		for _, s := range stages {
			v = math.Max(v, pool.Saturation[s])
		}
	}
	switch {
	case pool.Ready == 0, pool.Stale > 0:
		return math.NaN()
	case v == 1 && (math.IsNaN(pool.Ready) || math.IsNaN(pool.Stale)):
		return math.NaN()
	}
	return v
}

// poolName is the InferencePool an EPP page is of: the label name of its
// ready endpoints (either spelling), else (a page without them: an
// exporter passing on the flow-control families alone, or a router whose
// pool is not yet initialized) the label inference_pool of its
// flow-control queue, else of its saturation (a page read as 0 held by
// readFlowQueue is then of a pool, and serve compares it with
// inferencePoolRef); "" when none says (checkPools refuses a page where
// they differ).
func poolName(raw *rawPage) string {
	f := modelserver.EPPFamilies()
	for _, name := range f.ReadyEndpoints.Names() {
		if n := firstLabel(raw, name, "name"); n != "" {
			return n
		}
	}
	for _, name := range append(f.FlowQueue.Names(), f.Saturation.Names()...) {
		if n := firstLabel(raw, name, "inference_pool"); n != "" {
			return n
		}
	}
	return ""
}

// firstLabel is label's value on name's first sample, "" when none.
func firstLabel(raw *rawPage, name, label string) string {
	for _, j := range raw.byName[name] {
		if v := raw.samples[j].Labels.Get(label); v != "" {
			return v
		}
	}
	return ""
}

// ErrNotCount is wrapped by readFlowQueue's error for a flow-control
// queue that is no count of held requests: a flow NaN or ±Inf (the finite
// flows alone would undercount it), one beyond MaxRequests either way, or
// a sum above MaxRequests. The held count is then unknown, never 0.
var ErrNotCount = errors.New("not a count of held requests")

// readFlowQueue is the one reader of an llm-d EPP page's flow-control queue
// (the held requests of its pool), for a server: epp target's page
// (eppPool) and a zero.held_scrape page (ReadHeld). It takes the current
// family when the page has it (declared or with samples), else its
// deprecated twin, never both (the router writes both: dual emission), and
// sums the family's series (one per flow: fairness id and priority), each
// clamped at 0 first: the router's gauge of one flow can dip below 0 after
// that flow's garbage collection; it holds nothing then, and cancels no
// other flow's held requests (2 held beside a flow at -3 read -1, clamped
// to 0: a pool at zero with 2 requests waiting stayed at zero).
//
// It returns the held count and the family read, or NaN, the family and an
// error without the page's name (the caller adds it): the chosen family
// declared other than a gauge (ErrWrongType: a counter's value is not read
// as a gauge's, and the twin is not read in its place, the page being wrong
// about what its held count is), or ErrNotCount. A family declared without
// samples is passed over (client_golang writes none; the twin may have
// them). When neither family has samples but the page has the flow
// controller's saturation (either spelling), 0 and the queue family of
// that spelling, which the router writes from a flow's first request on;
// else NaN, "" and nil.
func readFlowQueue(raw *rawPage) (held float64, family string, err error) {
	for _, name := range modelserver.EPPFamilies().FlowQueue.Names() {
		if !raw.has(name) {
			continue
		}
		if err := raw.checkType(name, gaugeKind); err != nil {
			return math.NaN(), name, err
		}
		if len(raw.byName[name]) == 0 {
			continue
		}
		t := 0.0
		for _, j := range raw.byName[name] {
			s := raw.samples[j]
			switch {
			case !finite(s.Value):
				return math.NaN(), name, fmt.Errorf("%s has a NaN or infinite flow (%s is %v): held unknown, the finite flows alone would undercount it (the router writes a count per flow): %w", name, quoteSeries(s.Labels), s.Value, ErrNotCount)
			case math.Abs(s.Value) > MaxRequests:
				return math.NaN(), name, fmt.Errorf("%s has a flow beyond a billion requests (%s is %g; allowed: %g to %g): %w", name, quoteSeries(s.Labels), s.Value, -MaxRequests, MaxRequests, ErrNotCount)
			}
			t += max(s.Value, 0)
		}
		if t > MaxRequests {
			return math.NaN(), name, fmt.Errorf("%s sums to %g over its flows (allowed: 0 to %g): %w", name, t, MaxRequests, ErrNotCount)
		}
		return t, name, nil
	}
	// No flow has a series: the router's queue gauge has one per flow from
	// that flow's first request on, and a router that prunes idle flows
	// deletes a flow's series when it garbage-collects the flow (by default
	// 5 to 10 minutes after its last request); client_golang writes no line
	// for a gauge vector without series. Its flow controller writes the
	// pool's saturation from its start (every dispatch cycle), so a page
	// with the saturation and no queue is of an EPP with flow control on
	// that holds no request, none since it started or its flows were
	// collected: 0 held, not unknown (unknown, a pool up with no traffic
	// after an EPP restart, or idle past the flows' collection, never scaled
	// to zero). The exception is the router's own documented race: a
	// request that revives a flow while its collection prunes the series
	// loses its increment, and goes uncounted (as it did when this read
	// unknown, which wakes no pool at zero either) until the flow's next
	// request.
	f := modelserver.EPPFamilies()
	for i, name := range f.Saturation.Names() {
		if raw.checkType(name, gaugeKind) == nil && len(raw.byName[name]) > 0 {
			return 0, f.FlowQueue.Names()[i], nil
		}
	}
	return math.NaN(), "", nil
}
