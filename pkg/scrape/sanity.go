package scrape

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/infscale/infscale/pkg/modelserver"
)

// maxSeriesInError bounds how much of a series is quoted in an error (label
// values can be megabytes long).
const maxSeriesInError = 200

// seriesSet finds a series that appears twice on one page. Prometheus's
// scrape drops such a sample as a duplicate; summing it would count one
// replica's requests twice, so the page is refused. It keeps one index per
// label-set hash (collisions, practically never, go to more).
type seriesSet struct {
	first map[uint64]int
	more  map[uint64][]int
}

func newSeriesSet() *seriesSet { return &seriesSet{first: map[uint64]int{}} }

// add records lset (value v) as sample j; an error when samples already has
// an equal label set or lset has a label name twice.
func (s *seriesSet) add(lset labels.Labels, v float64, j int, samples []Sample) error {
	if name, dup := lset.HasDuplicateLabelNames(); dup {
		return fmt.Errorf("label %q appears twice in series %s (Prometheus's TSDB refuses such a series)", name, quoteSeries(lset))
	}
	h := lset.Hash()
	k, ok := s.first[h]
	if !ok {
		s.first[h] = j
		return nil
	}
	for _, k := range append([]int{k}, s.more[h]...) {
		if labels.Equal(samples[k].Labels, lset) {
			return fmt.Errorf("series %s appears twice on the page (one sample per series is allowed; its first sample was %g, this one %g)",
				quoteSeries(lset), samples[k].Value, v)
		}
	}
	if s.more == nil {
		s.more = map[uint64][]int{}
	}
	s.more[h] = append(s.more[h], j)
	return nil
}

func quoteSeries(lset labels.Labels) string {
	s := lset.String()
	if len(s) > maxSeriesInError {
		s = s[:maxSeriesInError] + "…"
	}
	return s
}

// MaxRequests bounds one series of a request count (running, waiting): no
// server holds a billion requests in memory at once, so a larger value is
// a broken exporter (or a counter mistaken for a gauge), not a load to
// scale on.
const MaxRequests = 1e9

// MaxEndpoints bounds an llm-d EPP's count of ready endpoints: the pods of
// one InferencePool, at most the 150,000 pods of the largest cluster
// Kubernetes supports ("Considerations for large clusters"). A larger
// count is a broken exporter; it is also no int (1e300 became
// -9223372036854775808 replicas).
const MaxEndpoints = 150000

// checkValues refuses values a server cannot export for the signals the
// page is read for: a negative request count or one above MaxRequests, token, prefix-cache or
// request counter or CPU time, a KV usage outside 0..1, a negative or
// larger than MaxRequests batch capacity, on an llm-d EPP's page a ready
// endpoint count outside 0..MaxEndpoints, a flow-control queue above
// MaxRequests or a negative saturation, a sum that overflows float64, or a
// broken TTFT, queue-time or inter-token-latency histogram (checkHistogram). It
// returns the index of the offending sample (-1 for an overflowing sum) and
// the error; -1 and nil when the page is sane. Non-finite samples are not
// checked here: they are ABSENT by the reading rules.
func checkValues(raw *rawPage, p *Page) (int, error) {
	type rule struct {
		family   string
		what     string
		total    float64
		min, max float64 // inclusive bounds
	}
	_, capacity := pick(raw, p.Server.Families().MaxRunning, sum, gaugeKind)
	rules := []rule{
		{p.Chosen.Running, "a running-request count", p.Running, 0, MaxRequests},
		{p.Chosen.Waiting, "a waiting-request count", p.Waiting, 0, MaxRequests},
		{p.Chosen.KV, "a KV-cache usage fraction", p.KV, 0, 1},
		{p.Chosen.PromptTokens, "a token counter", p.PromptTokens, 0, math.Inf(1)},
		{p.Chosen.GenerationTokens, "a token counter", p.GenerationTokens, 0, math.Inf(1)},
		{p.Chosen.Requests, "a request counter", p.Requests, 0, math.Inf(1)},
		{p.Chosen.CPUSeconds, "a CPU-seconds counter", p.CPUSeconds, 0, math.Inf(1)},
		{p.Chosen.PrefixHits, "a prefix-cache token counter", p.PrefixHits, 0, math.Inf(1)},
		{p.Chosen.PrefixQueries, "a prefix-cache token counter", p.PrefixQueries, 0, math.Inf(1)},
		{capacity, "a batch capacity in requests", p.MaxRunning, 0, MaxRequests},
	}
	if pool := p.Pool; pool != nil {
		rules = append(rules,
			rule{pool.Chosen["ready"], "a count of ready endpoints", pool.Ready, 0, MaxEndpoints},
			// The router's queue gauge can dip below 0 after a flow's
			// garbage collection (read as 0), never by a billion.
			rule{pool.Chosen["flow_queue"], "a count of held requests", pool.FlowQueue, -MaxRequests, MaxRequests},
			rule{pool.Chosen["saturation"], "a saturation (load over capacity)", 0, 0, math.Inf(1)})
	}
	for _, r := range rules {
		if r.family == "" {
			continue
		}
		for _, j := range raw.byName[r.family] {
			v := raw.samples[j].Value
			if !finite(v) {
				continue
			}
			if v < r.min || v > r.max {
				allowed := "a number >= 0"
				switch {
				case r.min < 0:
					allowed = fmt.Sprintf("%g to %g", r.min, r.max)
				case !math.IsInf(r.max, 1):
					allowed = fmt.Sprintf("0 to %g", r.max)
				}
				return j, fmt.Errorf("%s is %g, not %s (allowed: %s)", quoteSeries(raw.samples[j].Labels), v, r.what, allowed)
			}
		}
		if math.IsInf(r.total, 0) {
			return -1, fmt.Errorf("%s: the sum over its series overflows (%g); not %s", r.family, r.total, r.what)
		}
	}
	if j, err := checkWorkers(raw, p); err != nil {
		return j, err
	}
	if p.Pool != nil {
		// The router writes a count (float64(len(endpoints))): 2.5 is no
		// pool, and read as current 3 beside running 20 x 2.5 = 50.
		for _, j := range raw.byName[p.Pool.Chosen["ready"]] {
			if v := raw.samples[j].Value; finite(v) && v != math.Trunc(v) {
				return j, fmt.Errorf("%s is %g, not a count of ready endpoints (allowed: whole numbers 0 to %d)", quoteSeries(raw.samples[j].Labels), v, MaxEndpoints)
			}
		}
		if j, err := checkPools(raw); err != nil {
			return j, err
		}
	}
	// Each histogram a quantile is read from: TTFT, queue time
	// (queuewait scales on it) and ITL.
	for _, h := range []*Histogram{p.TTFT, p.QueueTime, p.ITL} {
		if h == nil {
			continue
		}
		if j, err := checkHistogram(raw, h.Family); err != nil {
			return j, err
		}
	}
	return -1, nil
}

// workerLabel names the model server a gateway re-exports a series of
// (modelserver.GatewayWorkerLabel: the SGLang Model Gateway's worker_addr,
// e.g. "grpc://10.0.0.7:8001").
const workerLabel = modelserver.GatewayWorkerLabel

// backendLabels are the labels that name, on a page read as server, the
// model server a gateway or router re-exports a series of: worker_addr
// on any page, and on a vLLM page the vLLM production-stack router's
// server (modelserver.VLLMRouterServerLabel).
func backendLabels(server modelserver.Server) []string {
	if server == modelserver.VLLM {
		return []string{workerLabel, modelserver.VLLMRouterServerLabel}
	}
	return []string{workerLabel}
}

// checkWorkers refuses a page whose running or waiting series name more
// than one backend (backendLabels): a gateway's or router's page covering
// several replicas, which read as one replica would be counted once with
// all their load (a fleet of 4 read as 1 at 4 times the per-replica queue).
// It returns the first sample of the second backend.
func checkWorkers(raw *rawPage, p *Page) (int, error) {
	for _, label := range backendLabels(p.Server) {
		seen := []string{}
		for _, fam := range []string{p.Chosen.Running, p.Chosen.Waiting} {
			for _, j := range raw.byName[fam] {
				w := raw.samples[j].Labels.Get(label)
				if w == "" || slices.Contains(seen, w) {
					continue
				}
				seen = append(seen, w)
				if len(seen) == 2 {
					return j, severalWorkers{label, seen[0], seen[1]}
				}
			}
		}
	}
	return -1, nil
}

// checkPools refuses an EPP page whose pool gauges (label name: ready
// endpoints, the averages, the per-endpoint queue) name two InferencePools:
// an EPP serves one pool, and the reader takes the gauges' largest values,
// so two pools' would mix (one pool's ready count times another's mean).
// So are a page with two series of one pool gauge (ready endpoints or an
// average: the router writes one per pool; which of two is the pool's is
// unknown, and the larger was taken) and one whose flow-control series
// (label inference_pool) name two pools (their held requests were summed
// into one) or another pool than its pool gauges (another pool's held
// requests read as this one's). It returns the first sample, in page
// order, of the second pool or series.
func checkPools(raw *rawPage) (int, error) {
	f := modelserver.EPPFamilies()
	fams := map[string]bool{}
	for _, t := range []modelserver.Twin{f.ReadyEndpoints, f.AvgRunning, f.AvgQueue, f.AvgKV, f.EndpointQueue} {
		for _, n := range t.Names() {
			fams[n] = true
		}
	}
	first := ""
	for j, s := range raw.samples {
		if !fams[s.Name] {
			continue
		}
		switch n := s.Labels.Get("name"); {
		case n == "" || n == first:
		case first == "":
			first = n
		default:
			return j, &severalPools{a: first, b: n, of: "the pool gauges"}
		}
	}
	for _, t := range []modelserver.Twin{f.ReadyEndpoints, f.AvgRunning, f.AvgQueue, f.AvgKV} {
		for _, n := range t.Names() {
			if js := raw.byName[n]; len(js) > 1 {
				return js[1], &severalPools{a: quoteSeries(raw.samples[js[0]].Labels), b: quoteSeries(raw.samples[js[1]].Labels), family: n}
			}
		}
	}
	gauges := first
	first = ""
	for _, t := range []modelserver.Twin{f.FlowQueue, f.Saturation} {
		for _, n := range t.Names() {
			for _, j := range raw.byName[n] {
				switch p := raw.samples[j].Labels.Get("inference_pool"); {
				case p == "" || p == first:
				case first == "" && gauges != "" && p != gauges:
					// The router writes its --pool-name on both (an EPP
					// without one, endpoint-selector mode, none on the
					// flows): a page whose flows are of another pool than
					// its gauges joins two EPPs' pages, and read as one,
					// the other pool's held requests woke this one.
					return j, &severalPools{a: gauges, b: p, of: "the pool gauges (label name) and the flow-control series (label inference_pool)"}
				case first == "":
					first = p
				default:
					return j, &severalPools{a: first, b: p, of: "the flow-control series"}
				}
			}
		}
	}
	return -1, nil
}

// severalPools is checkPools' refusal: the first two pool names seen in
// the series of, or the two series of one pool gauge family. heldScrape
// marks the page of a zero.held_scrape URL (ReadHeld), not a target's
// scrape: page: the advice names that key.
type severalPools struct {
	a, b, of, family string
	heldScrape       bool
}

func (e *severalPools) Error() string {
	give := "give each pool's own EPP /metrics (its pods' port 9090) as its own target"
	if e.family != "" {
		give = "give the EPP's own /metrics (its pods' port 9090)"
	}
	if e.heldScrape {
		give = "give zero.held_scrape the /metrics of this target's pool's own EPP (its pods' port 9090)"
	}
	if e.family != "" {
		return fmt.Sprintf("%s has two series (%s and %s): the router writes one per pool (label name), so which is the pool's is unknown (an extra label: a newer or patched router, or an exporter relabelling its page); %s", e.family, e.a, e.b, give)
	}
	return fmt.Sprintf("%s name two InferencePools (%q and %q): an Endpoint Picker serves one pool; %s", e.of, e.a, e.b, give)
}

// checkHistogram refuses a classic histogram with a negative count or sum,
// or whose cumulative bucket counts go down as le goes up within one series
// (beyond PromQL's float tolerance): no client library writes one. PromQL
// would silently repair it; infscale will not scale on it.
func checkHistogram(raw *rawPage, family string) (int, error) {
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		for _, j := range raw.byName[family+suffix] {
			if v := raw.samples[j].Value; v < 0 {
				return j, fmt.Errorf("%s is %g, not a histogram count or sum (allowed: a number >= 0)", quoteSeries(raw.samples[j].Labels), v)
			}
		}
	}
	type bucket struct {
		le float64
		j  int
	}
	series := map[uint64][]bucket{}
	for _, j := range raw.byName[family+"_bucket"] {
		s := raw.samples[j]
		le, err := strconv.ParseFloat(s.Labels.Get("le"), 64)
		if err != nil || math.IsNaN(le) || !finite(s.Value) {
			continue // ignored by the reader, as by histogram_quantile
		}
		k := labels.NewBuilder(s.Labels).Del("le").Labels().Hash()
		series[k] = append(series[k], bucket{le, j})
	}
	bad, twin := -1, -1 // the first offending sample in page order; twin: the one whose bound it repeats
	for _, bs := range series {
		sort.SliceStable(bs, func(a, b int) bool { return bs[a].le < bs[b].le })
		for i := 1; i < len(bs); i++ {
			j, other := bs[i].j, -1
			if bs[i].le == bs[i-1].le {
				// le="1" and le="1.0": one bound twice (Prometheus 3 reads
				// a declared histogram's le as a number: a duplicate).
				j, other = max(bs[i].j, bs[i-1].j), min(bs[i].j, bs[i-1].j)
			} else if lo, hi := raw.samples[bs[i-1].j].Value, raw.samples[j].Value; hi >= lo-1e-12*math.Max(1, lo) {
				continue
			}
			if bad < 0 || j < bad {
				bad, twin = j, other
			}
		}
	}
	switch {
	case bad >= 0 && twin >= 0:
		return bad, fmt.Errorf("%s repeats the bound of %s: one bucket twice (allowed: each le once per series)", quoteSeries(raw.samples[bad].Labels), quoteSeries(raw.samples[twin].Labels))
	case bad >= 0:
		s := raw.samples[bad]
		return bad, fmt.Errorf("%s is %g, below a smaller le's count: histogram buckets are cumulative (allowed: counts that never go down as le goes up)", quoteSeries(s.Labels), s.Value)
	}
	return -1, nil
}

// severalWorkers is checkWorkers' refusal: a well-formed page that covers
// two or more model servers (the backend label and the first two values
// seen).
type severalWorkers struct{ label, a, b string }

func (e severalWorkers) Error() string {
	if e.label == modelserver.VLLMRouterServerLabel {
		return fmt.Sprintf("the page covers several model servers (%s %q and %q): a router's page, such as the vLLM production-stack router's, whose running and waiting are each engine's as the router counts them, and infscale reads one replica per page; point it at each vLLM engine's own /metrics, or at Prometheus with a selector for the engines' pods, not the router's", e.label, e.a, e.b)
	}
	return fmt.Sprintf("the page covers several model servers (%s %q and %q): a gateway's page, such as the SGLang Model Gateway's, and infscale reads one replica per page; point it at each worker's own /metrics, or at Prometheus with a selector for the gateway's pod (each worker_addr is read as one replica there)", e.label, e.a, e.b)
}
