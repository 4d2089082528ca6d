package promql

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/pkg/modelserver"
)

// Liveness says how queries exclude series of pods that no longer run
// (a rollout's terminated pods, whose last samples Prometheus returns for up
// to its 5-minute lookback when no staleness marker was written: remote
// storage, federation, a restart). See docs/promql.md, "Stale series".
type Liveness int

const (
	// LiveUp keeps pods whose scrape target is up: `... and on (pod) (up{...} == 1)`.
	// The default.
	LiveUp Liveness = iota
	// LiveReady keeps pods kube-state-metrics reports Ready:
	// `... and on (pod) (kube_pod_status_ready{condition="true",...} == 1)`;
	// needs kube-state-metrics, and also drops pods still loading weights.
	LiveReady
	// LiveStaleness adds no join and relies on Prometheus's staleness
	// markers (written when a target disappears from service discovery).
	LiveStaleness
)

var livenessNames = map[Liveness]string{LiveUp: "up", LiveReady: "ready", LiveStaleness: "staleness"}

// String returns "up", "ready" or "staleness".
func (l Liveness) String() string {
	if n, ok := livenessNames[l]; ok {
		return n
	}
	return fmt.Sprintf("Liveness(%d)", int(l))
}

// Options shape every query. The zero value is usable: see the defaults.
type Options struct {
	// PodLabel is the label naming a pod on every series ("pod" by default,
	// as kube-prometheus and the Prometheus Helm chart set it).
	PodLabel string
	// NamespaceLabel is the namespace label ("namespace" by default). Only
	// the selector's matchers on PodLabel and NamespaceLabel are applied to
	// the liveness series (up, kube_pod_status_ready), which carry no
	// model-server labels.
	NamespaceLabel string
	// ReplicaLabels are the labels by which the two members of an HA
	// Prometheus pair (queried through Thanos, Mimir or federation without
	// deduplication) tell their otherwise identical series apart. Default
	// DefaultReplicaLabels. Deduplication keys on the pod (dedup), so any
	// non-empty list turns it on; an empty non-nil list turns it off.
	ReplicaLabels []string
	// Liveness selects how stale pods are excluded (default LiveUp).
	Liveness Liveness
	// CPUWindow is the rate() window of the CPU signal (default 2m; at least
	// four scrape intervals, because Prometheus 3 windows exclude their start).
	CPUWindow time.Duration
	// StuckWindow is the window of the Stuck signal (default 2m): a pod is
	// stuck when requests waited through all of it and no token was
	// processed in it. At least four scrape intervals, as CPUWindow.
	StuckWindow time.Duration
	// DemandWindow is the rate() window of the demand signals (Arrivals,
	// PromptTokens, GenerationTokens; default 1m: four scrape intervals of
	// 15 s, as CPUWindow).
	DemandWindow time.Duration
}

// DefaultReplicaLabels are the HA replica labels of Thanos
// (--query.replica-label=replica), the Prometheus Operator
// (prometheus_replica) and kube-prometheus's external label prometheus.
var DefaultReplicaLabels = []string{"prometheus", "prometheus_replica", "replica"}

func (o Options) withDefaults() Options {
	if o.PodLabel == "" {
		o.PodLabel = "pod"
	}
	if o.NamespaceLabel == "" {
		o.NamespaceLabel = "namespace"
	}
	if o.ReplicaLabels == nil {
		o.ReplicaLabels = DefaultReplicaLabels
	}
	if o.CPUWindow == 0 {
		o.CPUWindow = 2 * time.Minute
	}
	if o.StuckWindow == 0 {
		o.StuckWindow = 2 * time.Minute
	}
	if o.DemandWindow == 0 {
		o.DemandWindow = time.Minute
	}
	return o
}

// Target is one workload whose signals are read. Build it from the config's
// target block.
type Target struct {
	// Name identifies the target (the exporter's target label).
	Name string
	// Server selects the metric families (pkg/modelserver); Unknown is refused.
	Server modelserver.Server
	// Selector holds the label matchers (ParseSelector) injected into every
	// vector selector of the built queries, e.g. namespace="llm", pod=~"chat-.*".
	Selector []*labels.Matcher
	// TTFTQuantile (0 < q < 1) and TTFTWindow (> 0) ask for the TTFT signal;
	// zero values leave it out.
	TTFTQuantile float64
	TTFTWindow   time.Duration
	// QueueTimeQuantile and QueueTimeWindow ask for the QueueTime signal,
	// ITLQuantile and ITLWindow for ITL, as TTFT's (zero: left out).
	QueueTimeQuantile float64
	QueueTimeWindow   time.Duration
	ITLQuantile       float64
	ITLWindow         time.Duration
	// Demand asks for the Arrivals, PromptTokens and GenerationTokens rates
	// (the demand metric's inputs) and Queued (the latency guards' bound
	// by capacity, which needs the demand metric, reads it).
	Demand bool
	// CPU asks for the CPU signal (needs kube-state-metrics' CPU requests).
	CPU bool
	// Stuck asks for the Stuck and StuckWaiting signals (stuck-engine pods;
	// they need the profile's waiting family and a token counter family,
	// else they are left out). Evaluate then leaves the stuck pods' waiting
	// out of Waiting and the pods out of Reporting (their running, KV, CPU
	// and TTFT stay: a stuck engine runs 0 or 1 request); they stay in
	// Current, so the HPA's missing-pods rule applies to them.
	Stuck bool
	// Duplicates asks for the Duplicated signal: how many series of the
	// running (else waiting) family the deduplication folded (two scrape
	// jobs on one pod, an HA pair), for serve's log line and counter.
	Duplicates bool
	// Replicas is a PromQL query for the current replica count, run verbatim
	// (e.g. kube_deployment_spec_replicas{namespace="llm",deployment="chat"}).
	// Empty: Current is Reporting.
	Replicas string
	// Held is a PromQL query for requests held in front of the servers, run
	// verbatim (e.g. sum(max without (prometheus, prometheus_replica,
	// replica) (infscale_activator_held_requests{service="activator-chat"})):
	// each activator once, an HA pair's copies folded). Empty: no Held.
	Held string
	// FlowControlHeld (server epp, no Held) reads Held from the EPP's
	// flow-control queue (the target's zero.flow_control).
	FlowControlHeld bool
	// FlowQueueLookback (with FlowControlHeld) is how far back a
	// flow-control queue series under the selector proves the family is
	// scraped: with no queue series now but the flow controller's
	// saturation, Held reads 0 if one was present within it (the router
	// deleted idle flows' series when it collected them), else unknown (a
	// relabel may drop the queue alone). A duration (range of
	// last_over_time); 0 is DefaultFlowQueueLookback. serve sets it to
	// FlowQueueLookbackFor(the target's zero.cooldownPeriod).
	FlowQueueLookback time.Duration
	// Overrides replace the built query of a signal with a user query, run
	// verbatim (no selector injection): the user owns its shape.
	Overrides map[Signal]string
}

// buildExprs returns the query of every signal the target asks for, keyed
// by signal, as ASTs (print them with String: canonical PromQL). Signals
// the profile has no family for are absent (Evaluate reports them as
// ReasonUnsupported). Errors: Unknown server, an empty selector, an invalid
// TTFT spec, or an override, replicas or held query that does not validate
// (wrapping ErrInvalidQuery).
func buildExprs(t Target, opts Options) (map[Signal]parser.Expr, error) {
	return build(t, opts, true)
}

// build is buildExprs; guard false builds the totals and KV without their
// negative guard (guarded), as HistoryQueries reads them over a range.
func build(t Target, opts Options, guard bool) (map[Signal]parser.Expr, error) {
	o := opts.withDefaults()
	if t.Server == modelserver.Unknown {
		return nil, fmt.Errorf("target %q: a server profile is required to build queries (allowed: %v)", t.Name, modelserver.Names())
	}
	if len(t.Selector) == 0 {
		return nil, fmt.Errorf("target %q: empty selector: give label matchers such as {namespace=\"llm\", pod=~\"chat-.*\"}", t.Name)
	}
	ttft := t.TTFTQuantile != 0 || t.TTFTWindow != 0
	if ttft && (!(t.TTFTQuantile > 0 && t.TTFTQuantile < 1) || t.TTFTWindow <= 0) {
		return nil, fmt.Errorf("target %q: TTFT needs 0 < quantile < 1 (got %v) and a window > 0 (got %v)", t.Name, t.TTFTQuantile, t.TTFTWindow)
	}
	for _, h := range []struct {
		name string
		q    float64
		w    time.Duration
	}{{"queue time", t.QueueTimeQuantile, t.QueueTimeWindow}, {"ITL", t.ITLQuantile, t.ITLWindow}} {
		if (h.q != 0 || h.w != 0) && (!(h.q > 0 && h.q < 1) || h.w <= 0) {
			return nil, fmt.Errorf("target %q: %s needs 0 < quantile < 1 (got %v) and a window > 0 (got %v)", t.Name, h.name, h.q, h.w)
		}
	}
	b := newShapes(t, o)
	b.guard = guard
	if t.Server == modelserver.EPP { // one pool's series, not per-pod ones (epp.go)
		return b.userQueries(t, b.eppExprs(t))
	}
	f := t.Server.Families()
	out := map[Signal]parser.Expr{}
	if e := b.total(f.Running); e != nil {
		out[Running] = e
	}
	if e := b.total(f.Waiting); e != nil {
		if _, own := t.Overrides[Waiting]; !own && t.Demand {
			out[Queued] = b.queued(f.Waiting)
		}
		out[Waiting] = e
	}
	if e := b.reporting(f); e != nil {
		out[Reporting] = e
	}
	if e := b.kv(f.KV); e != nil {
		out[KV] = e
	}
	if t.CPU {
		out[CPU] = b.cpu(modelserver.CPUSecondsFamily)
	}
	if o.Liveness == LiveReady {
		out[Unready] = b.unready()
	}
	if t.Stuck {
		if pods := b.stuckPods(f, o.StuckWindow); pods != nil {
			out[Stuck] = aggregate(parser.COUNT, false, nil, pods)
			// The parts to subtract, unless the user owns a total's shape
			// (an override): then the stuck pods are counted, not excluded.
			_, ownW := t.Overrides[Waiting]
			_, ownN := t.Overrides[Reporting]
			if !ownW && !ownN {
				out[StuckWaiting] = b.stuckTotal(f.Waiting, pods)
			}
		}
	}
	if t.Duplicates {
		fams := f.Running
		if len(fams) == 0 {
			fams = f.Waiting
		}
		if e := b.duplicated(fams); e != nil {
			out[Duplicated] = e
		}
	}
	if ttft {
		if e := b.ttft(f.TTFT, t.TTFTQuantile, t.TTFTWindow); e != nil {
			out[TTFT] = e
		}
	}
	if t.QueueTimeQuantile != 0 {
		if e := b.ttft(f.QueueTime, t.QueueTimeQuantile, t.QueueTimeWindow); e != nil {
			out[QueueTime] = e
		}
	}
	if t.ITLQuantile != 0 {
		if e := b.ttft(f.ITL, t.ITLQuantile, t.ITLWindow); e != nil {
			out[ITL] = e
		}
	}
	if t.Demand {
		for s, fams := range map[Signal][]string{Arrivals: f.Requests, PromptTokens: f.PromptTokens, GenerationTokens: f.GenerationTokens} {
			if e := b.rateTotal(fams, o.DemandWindow); e != nil {
				out[s] = e
			}
		}
		if e := b.prefixHit(f, o.DemandWindow); e != nil {
			out[PrefixHit] = e
		}
	}
	return b.userQueries(t, out)
}

// userQueries adds to out the target's verbatim queries: replicas, held
// and the overrides (they replace a built one).
func (b shapes) userQueries(t Target, out map[Signal]parser.Expr) (map[Signal]parser.Expr, error) {
	for s, q := range map[Signal]string{Current: t.Replicas, Held: t.Held} {
		if q == "" {
			continue
		}
		e, err := Validate(q)
		if err != nil {
			return nil, fmt.Errorf("target %q: %s query: %w", t.Name, s, err)
		}
		out[s] = e
	}
	for s, q := range t.Overrides {
		e, err := Validate(q)
		if err != nil {
			return nil, fmt.Errorf("target %q: %s query: %w", t.Name, s, err)
		}
		out[s] = e
	}
	return out, nil
}

// shapes builds the query shapes of docs/promql.md for one selector.
type shapes struct {
	o      Options
	sel    []*labels.Matcher // the target's selector
	id     []*labels.Matcher // its matchers on pod and namespace only
	worker string            // the profile's gateway worker label (Families.Worker), "" if none
	guard  bool              // total and kv refuse a live series below 0 (guarded)
}

// newShapes is the shapes of target t's series under o (defaults applied).
func newShapes(t Target, o Options) shapes {
	o = o.withDefaults()
	return shapes{o: o, sel: ownSeries(t.Server, t.Selector), id: liveIdentity(t.Selector, o), worker: t.Server.Families().Worker}
}

// ownSeries is sel for the series of server's own pods: for vLLM, sel and
// server="" (modelserver.VLLMRouterServerLabel), unless sel has a matcher
// on that label. The vLLM production-stack router exports its view of
// each engine behind it under vLLM's own names, one series per engine
// labelled server="http://<engine>:8000"; a selector of the namespace
// matches them too, and they added the engines' running and waiting
// again and counted the router's pod as a replica (running 12 over 2
// engines read 19 over 3: TestEngineRouterSeriesNotReplicas). No vLLM
// engine's series carries the label (a selector that names it is the
// user's word that their series do).
func ownSeries(server modelserver.Server, sel []*labels.Matcher) []*labels.Matcher {
	if server != modelserver.VLLM || slices.ContainsFunc(sel, func(m *labels.Matcher) bool { return m.Name == modelserver.VLLMRouterServerLabel }) {
		return sel
	}
	return append(slices.Clip(sel), labels.MustNewMatcher(labels.MatchEqual, modelserver.VLLMRouterServerLabel, ""))
}

// liveIdentity is identity and pod!="" (Options.PodLabel): the matchers
// of the liveness and kube-state-metrics series. A series without a pod
// label cannot be told apart by pod: the dedup folded every pod into one
// (3 pods running 10 each read 10, not 30: TestEngineNoPodLabel), and
// `and on (pod)` matched it with an up series without one on the empty
// value. With pod!="" on up such series join nothing: unknown, the error
// saying why (liveHints). kube-state-metrics series always have the label.
func liveIdentity(sel []*labels.Matcher, o Options) []*labels.Matcher {
	return append(identity(sel, o), labels.MustNewMatcher(labels.MatchNotEqual, o.PodLabel, ""))
}

// identity keeps the matchers that also apply to liveness series.
func identity(sel []*labels.Matcher, o Options) []*labels.Matcher {
	var out []*labels.Matcher
	for _, m := range sel {
		if m.Name == o.PodLabel || m.Name == o.NamespaceLabel {
			out = append(out, m)
		}
	}
	return out
}

// pod is the labels that name one model server: the pod, and for a profile
// with a gateway (Families.Worker) the worker the gateway re-exports a
// series of (absent on a server's own series: the pod alone there).
func (b shapes) pod() []string {
	if b.worker != "" {
		return []string{b.o.PodLabel, b.worker}
	}
	return []string{b.o.PodLabel}
}

// podOnly is the pod label alone: for series about the pod itself (up,
// kube_pod_status_ready, the container's CPU), which carry no worker.
func (b shapes) podOnly() []string { return []string{b.o.PodLabel} }

// perPodSum is `sum by (pod) (max without (<replica labels>) (F{sel}))`:
// HA duplicates collapse first, then the engines/ranks of a pod add up.
func (b shapes) perPodSum(family string) parser.Expr {
	return aggregate(parser.SUM, false, b.pod(), b.dedup(selector(family, b.sel)))
}

// podSeriesLabels tell a pod's own series of one family apart: its engines
// and ranks (vLLM data parallel, SGLang dp/tp/pp) and the models it serves.
// Any other difference (job, instance, endpoint, service, an HA replica
// label) is the same series collected twice.
var podSeriesLabels = []string{"engine", "dp_rank", "tp_rank", "pp_rank", "model_name", "name", "model"}

// dedupKey is the labels dedup keeps: namespace, pod, podSeriesLabels, the
// gateway worker label (Families.Worker) when the profile has one, and
// extra (container for per-container series).
func (b shapes) dedupKey(extra ...string) []string {
	var w []string
	if b.worker != "" {
		w = []string{b.worker}
	}
	return slices.Concat([]string{b.o.NamespaceLabel, b.o.PodLabel}, podSeriesLabels, w, extra)
}

// dedup is `max by (namespace, pod, <engine and model labels>) (e)`: the
// copies of a pod's series collapse into one whatever tells them apart (an
// HA pair's replica label, two scrape jobs on one pod); e itself when
// Options.ReplicaLabels is empty (deduplication off).
func (b shapes) dedup(e parser.Expr, extra ...string) parser.Expr {
	if len(b.o.ReplicaLabels) == 0 {
		return e
	}
	return aggregate(parser.MAX, false, b.dedupKey(extra...), e)
}

// duplicated is the number of series of the first of families that has
// any, beyond one per pod, engine and model: `count(F{sel}) -
// count(max by (<dedup key>) (F{sel}))` (0 when nothing is duplicated).
func (b shapes) duplicated(families []string) parser.Expr {
	if len(families) == 0 || len(b.o.ReplicaLabels) == 0 {
		return nil
	}
	es := make([]parser.Expr, 0, len(families))
	for _, f := range families {
		all := aggregate(parser.COUNT, false, nil, selector(f, b.sel))
		one := aggregate(parser.COUNT, false, nil, b.dedup(selector(f, b.sel)))
		es = append(es, binary(parser.SUB, all, one, nil))
	}
	return orChain(es)
}

// perPodMax is `max by (pod) (F{sel})`: a pod's busiest engine; HA
// duplicates cannot inflate a max.
func (b shapes) perPodMax(family string) parser.Expr {
	return aggregate(parser.MAX, false, b.pod(), selector(family, b.sel))
}

// alternatives joins per-pod shapes of the alternative family names with
// or: per pod, the first name that has a series wins; names never add up.
func alternatives(families []string, per func(string) parser.Expr) parser.Expr {
	es := make([]parser.Expr, 0, len(families))
	for _, f := range families {
		es = append(es, per(f))
	}
	return orChain(es)
}

// live restricts a per-pod vector to live pods (Options.Liveness).
func (b shapes) live(perPod parser.Expr) parser.Expr {
	var alive parser.Expr
	switch b.o.Liveness {
	case LiveUp:
		alive = binary(parser.EQLC, selector("up", b.id), number(1), nil)
	case LiveReady:
		ms := append([]*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "condition", "true")}, b.id...)
		alive = binary(parser.EQLC, selector("kube_pod_status_ready", ms), number(1), nil)
	default:
		return perPod
	}
	return binary(parser.LAND, perPod, alive, b.podOnly())
}

// total is `sum(<live per-pod sums>)` over the alternatives, guarded
// against a series below 0 (guarded), nil without any.
func (b shapes) total(families []string) parser.Expr {
	if len(families) == 0 {
		return nil
	}
	return b.guarded(parser.SUM, b.live(alternatives(families, b.perPodSum)), b.live(alternatives(families, b.rawSeries)))
}

// rawSeries is F{sel}: the series a pod's value is made of (perPodSum
// adds them up, copies folded; perPodMax takes their max).
func (b shapes) rawSeries(family string) parser.Expr { return selector(family, b.sel) }

// guarded is `(min(series) < 0) or op(perPod)`: the aggregate of the live
// per-pod values, or, when a live series they are made of is below 0, the
// lowest such series' value. series are the live raw series (rawSeries:
// copies of a series are not folded, which a min needs not, and the
// dedup key would add about 75 bytes a target to a query that is already
// twice as long). No gauge of requests in flight, nor a KV
// cache fraction, is below 0 (embedded mode refuses a page with one), and
// a sum or an average hides one: pods at 50 and -40 running summed to 10,
// read as load, where NaN and ±Inf survive it. The answer below 0 is
// refused as a NaN is (branchValues.single: ReasonNaN, a negativeValue;
// Evaluate then names the series: negativeRound). Both sides have no
// labels, so or keeps the left one when there is one. One query still,
// which reads the series twice. op(perPod) alone when b.guard is false.
func (b shapes) guarded(op parser.ItemType, perPod, series parser.Expr) parser.Expr {
	agg := aggregate(op, false, nil, perPod)
	if !b.guard {
		return agg
	}
	low := binary(parser.LSS, aggregate(parser.MIN, false, nil, series), number(0), nil)
	return binary(parser.LOR, low, agg, nil)
}

// belowZero is the live series of target t's signal s that are below 0,
// `<live series> < 0` (the series guarded reads the min of), each with its
// labels (pod, engine, ...): the query that names them when s's guarded
// total or KV read below 0 (negativeRound). nil when s has no guarded
// shape for t (an override owns it, an EPP target, another signal, or no
// family).
func belowZero(t Target, opts Options, s Signal) parser.Expr {
	if t.Server == modelserver.Unknown || t.Server == modelserver.EPP || len(t.Selector) == 0 {
		return nil
	}
	if _, own := t.Overrides[s]; own {
		return nil
	}
	b := newShapes(t, opts.withDefaults())
	f := t.Server.Families()
	var series parser.Expr
	switch {
	case s == Running && len(f.Running) > 0:
		series = alternatives(f.Running, b.rawSeries)
	case s == Waiting && len(f.Waiting) > 0:
		series = alternatives(f.Waiting, b.rawSeries)
	case s == KV && len(f.KV) > 0:
		series = alternatives(f.KV, b.rawSeries)
	default:
		return nil
	}
	return binary(parser.LSS, b.live(series), number(0), nil)
}

// queued counts the live pods whose waiting is above 0:
// `count(<live per-pod sums> > 0)`.
func (b shapes) queued(families []string) parser.Expr {
	return aggregate(parser.COUNT, false, nil, binary(parser.GTR, b.live(alternatives(families, b.perPodSum)), number(0), nil))
}

// reporting counts live pods with a running (else waiting) series. When a
// running alternative selects series by a label (modelserver.Series: the
// running count of Triton's TensorRT-LLM backend, which pods of another
// backend do not export), a pod without it reports by its waiting series,
// as a page reports by either (scrape.Page.ReportsLoad).
func (b shapes) reporting(f modelserver.Families) parser.Expr {
	fams := f.Running
	if len(fams) == 0 || slices.ContainsFunc(fams, func(n string) bool { _, ms := modelserver.Series(n); return ms != nil }) {
		fams = slices.Concat(fams, f.Waiting)
	}
	if len(fams) == 0 {
		return nil
	}
	return aggregate(parser.COUNT, false, nil, b.live(alternatives(fams, b.perPodSum)))
}

// unready counts pods kube-state-metrics reports not Ready:
// `count(max by (pod) (kube_pod_status_ready{condition="false",ID}) == 1)`
// (max by pod: an HA pair's duplicates count once).
func (b shapes) unready() parser.Expr {
	ms := append([]*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "condition", "false")}, b.id...)
	perPod := aggregate(parser.MAX, false, b.podOnly(), selector("kube_pod_status_ready", ms))
	return aggregate(parser.COUNT, false, nil, binary(parser.EQLC, perPod, number(1), nil))
}

// kv is `avg(<live per-pod max>)` over the alternatives, guarded against
// a series below 0 (guarded).
func (b shapes) kv(families []string) parser.Expr {
	if len(families) == 0 {
		return nil
	}
	return b.guarded(parser.AVG, b.live(alternatives(families, b.perPodMax)), b.live(alternatives(families, b.rawSeries)))
}

// cpu is 100 * avg over live pods of CPU seconds per second / requested cores.
func (b shapes) cpu(family string) parser.Expr {
	used := b.dedup(call("rate", rangeOf(selector(family, b.sel), b.o.CPUWindow)), "container")
	reqMs := append([]*labels.Matcher{
		labels.MustNewMatcher(labels.MatchEqual, "resource", "cpu"),
		labels.MustNewMatcher(labels.MatchEqual, "unit", "core"),
	}, b.id...)
	requested := b.dedup(selector("kube_pod_container_resource_requests", reqMs), "container")
	perPod := perPodRatio(b.podOnly(), used, requested)
	return binary(parser.MUL, number(100), aggregate(parser.AVG, false, nil, b.live(perPod)), nil)
}

// perPodRatio is `sum by (pod) (num) / sum by (pod) (den)`: both sides
// reduced to the pod label before dividing, so series whose other labels
// differ (case 16: cache_source on one side only) still pair up.
func perPodRatio(pod []string, num, den parser.Expr) parser.Expr {
	return binary(parser.DIV, aggregate(parser.SUM, false, pod, num), aggregate(parser.SUM, false, pod, den), nil)
}

// ttft is histogram_quantile(q, sum by (le) (rate(F_bucket{sel}[w]))) over
// the alternatives (also the queue-time and ITL quantiles). Not restricted to live pods: requests a terminated pod
// served inside the window were real. HA duplicates double every bucket
// alike, which leaves a quantile unchanged.
func (b shapes) ttft(families []string, q float64, window time.Duration) parser.Expr {
	if len(families) == 0 || math.IsNaN(q) {
		return nil
	}
	es := make([]parser.Expr, 0, len(families))
	for _, f := range families {
		buckets := aggregate(parser.SUM, false, []string{"le"},
			call("rate", rangeOf(selector(f+"_bucket", b.sel), window)))
		es = append(es, call("histogram_quantile", number(q), buckets))
	}
	return orChain(es)
}

// rateTotal is `sum(sum by (pod) (max by (<dedup key>, finished_reason)
// (rate(F{sel}[w]))))` over the alternatives (per pod, the first name that
// has a series wins), in units per second. Not restricted to live pods, as
// ttft: a terminated pod's requests inside the window were real. vLLM
// splits its requests counter by finished_reason, which dedup keeps. A
// counter with fewer than two samples in the window has no rate, so a
// fresh server that exports the family only after its first request reads
// absent, not 0. nil without a family.
func (b shapes) rateTotal(families []string, window time.Duration) parser.Expr {
	if len(families) == 0 {
		return nil
	}
	return aggregate(parser.SUM, false, nil, b.ratePerPod(families, window))
}

// ratePerPod is rateTotal's per-pod part, `sum by (pod) (max by (<dedup
// key>, finished_reason) (rate(F{sel}[w])))` over the alternatives.
func (b shapes) ratePerPod(families []string, window time.Duration) parser.Expr {
	perPod := func(f string) parser.Expr {
		return aggregate(parser.SUM, false, b.pod(), b.dedup(call("rate", rangeOf(selector(f, b.sel), window)), "finished_reason"))
	}
	return alternatives(families, perPod)
}

// prefixHit is the PrefixHit signal, the ratio of two rateTotal shapes
// restricted to the pods that export both counters:
//
//	  sum(<hits per pod> and on (pod) <queries per pod>)
//	/ sum(<queries per pod> and on (pod) <hits per pod>)
//
// so that each pod's hits pair with its own queries (a pod with one
// counter alone would bias it). Both sides have no labels, so they match.
// Not restricted to live pods, as rateTotal. nil when the profile lacks
// either family.
func (b shapes) prefixHit(f modelserver.Families, window time.Duration) parser.Expr {
	if len(f.PrefixHits) == 0 || len(f.PrefixQueries) == 0 {
		return nil
	}
	h, q := b.ratePerPod(f.PrefixHits, window), b.ratePerPod(f.PrefixQueries, window)
	return binary(parser.DIV, aggregate(parser.SUM, false, nil, binary(parser.LAND, h, q, b.pod())),
		aggregate(parser.SUM, false, nil, binary(parser.LAND, q, h, b.pod())), nil)
}

// stuckPods is the live pods that look like stuck engines (the rule of
// pkg/scrape's stuck.go, asked of Prometheus over a window: a vLLM engine
// with 6 waiting, 0 running for an hour, vllm-metal #479; running 1,
// waiting 14 with no new input, llm-scaler #391), one series per pod; the
// Stuck signal is count() of it:
//
//	    sum by (pod) (max without (<replica labels>) (min_over_time(W{sel}[w]))) > 0
//	  and on (pod) (max by (pod) (increase(G{sel}[w]))) == 0
//	and on (pod) (W{sel} offset w > 0)
//
// restricted to live pods like the totals, W the waiting family and G the
// generation token counter (else the prompt one; alternative names joined
// with or, as elsewhere). Every engine step that finishes a prefill or
// decodes emits a token, so a flat generation counter means no request made
// progress; one counter keeps the query short (it is repeated in Stuck and
// StuckWaiting for every target of a batch). Requests must have waited
// through the whole window: its minimum > 0 (a burst arriving at an idle pod
// is not stuck) and, since a minimum covers only the samples inside the
// window, the sample at its start (W offset w, the last one at or before
// it) > 0 too: a pod whose series began inside the window (a new pod
// stuck for 1 minute of 2) is not counted. The counter may not have moved
// (max of increases over a pod's series == 0; HA duplicates cannot change
// a max). A pod without the counter, or whose counter has fewer than two
// samples in the window, has no increase and is not counted. nil when the
// profile lacks the waiting family or both token families.
func (b shapes) stuckPods(f modelserver.Families, w time.Duration) parser.Expr {
	counter := f.GenerationTokens
	if len(counter) == 0 {
		counter = f.PromptTokens
	}
	if len(f.Waiting) == 0 || len(counter) == 0 {
		return nil
	}
	waitedAll := func(fam string) parser.Expr {
		return aggregate(parser.SUM, false, b.pod(), b.dedup(call("min_over_time", rangeOf(selector(fam, b.sel), w))))
	}
	moved := alternatives(counter, func(fam string) parser.Expr {
		return aggregate(parser.MAX, false, b.pod(), call("increase", rangeOf(selector(fam, b.sel), w)))
	})
	waited := binary(parser.GTR, b.live(alternatives(f.Waiting, waitedAll)), number(0), nil)
	// min_over_time sees only the samples a series has inside the window:
	// a pod that appeared (or came back) in it has fewer, so the window
	// must open on a sample already > 0 (the sample at or before its start,
	// the waiting `offset w`).
	waitedFromStart := alternatives(f.Waiting, func(fam string) parser.Expr {
		v := selector(fam, b.sel)
		v.OriginalOffset = w
		return binary(parser.GTR, v, number(0), nil)
	})
	stuck := binary(parser.LAND, waited, binary(parser.EQLC, moved, number(0), nil), b.pod())
	return binary(parser.LAND, stuck, waitedFromStart, b.pod())
}

// stuckTotal is total(families) restricted to the stuck pods:
// `sum((<live per-pod sums>) and on (pod) (<stuckPods>))`, the part of the
// total Evaluate subtracts. sum() of no pod is no series: read as 0.
func (b shapes) stuckTotal(families []string, pods parser.Expr) parser.Expr {
	return aggregate(parser.SUM, false, nil, binary(parser.LAND, b.live(alternatives(families, b.perPodSum)), pods, b.pod()))
}
