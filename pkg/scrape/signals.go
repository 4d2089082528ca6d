package scrape

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	hist "github.com/infscale/infscale/pkg/histogram"
	"github.com/infscale/infscale/pkg/modelserver"
)

// engineLabels identify one engine of a replica (vLLM data parallel `engine`,
// SGLang `dp_rank`/`tp_rank`/`pp_rank`).
var engineLabels = []string{"engine", "dp_rank", "tp_rank", "pp_rank"}

// modelLabels name the served model (vLLM/SGLang `model_name`, SGLang 2024
// `name`, Triton `model`).
var modelLabels = []string{"model_name", "name", "model"}

// reduce turns the parsed samples into a Page for server.
func reduce(raw *rawPage, source string, server modelserver.Server) *Page {
	f := server.Families()
	p := &Page{Source: source, Server: server, samples: raw.samples, byName: raw.byName}

	p.Running, p.Chosen.Running = pick(raw, f.Running, sum, gaugeKind)
	p.Waiting, p.Chosen.Waiting = pick(raw, f.Waiting, sum, gaugeKind)
	p.KV, p.Chosen.KV = pick(raw, f.KV, maxOf, gaugeKind)
	p.PromptTokens, p.Chosen.PromptTokens = pick(raw, f.PromptTokens, sum, counterKind)
	p.GenerationTokens, p.Chosen.GenerationTokens = pick(raw, f.GenerationTokens, sum, counterKind)
	p.Requests, p.Chosen.Requests = pick(raw, f.Requests, sum, counterKind)
	p.PrefixHits, p.Chosen.PrefixHits = pick(raw, f.PrefixHits, sum, counterKind)
	p.PrefixQueries, p.Chosen.PrefixQueries = pick(raw, f.PrefixQueries, sum, counterKind)
	p.CPUSeconds, p.Chosen.CPUSeconds = pick(raw, []string{modelserver.CPUSecondsFamily}, sum, counterKind)
	p.ProcessStart, _ = pick(raw, []string{modelserver.StartTimeFamily}, maxOf, gaugeKind)
	p.MaxRunning, _ = pick(raw, f.MaxRunning, sum, gaugeKind)
	for _, sig := range []struct{ name, chosen string }{{"running", p.Chosen.Running}, {"waiting", p.Chosen.Waiting}, {"kv", p.Chosen.KV}} {
		alts := map[string][]string{"running": f.Running, "waiting": f.Waiting, "kv": f.KV}[sig.name]
		nf := nonFinite(raw, sig.chosen, alts)
		if nf || (sig.chosen == "" && len(wrongTypes(raw, alts, gaugeKind)) > 0) {
			p.Unknown = append(p.Unknown, sig.name)
		}
		if nf {
			p.NonFinite = append(p.NonFinite, sig.name)
		}
	}
	for _, group := range []struct {
		alts []string
		want kind
	}{
		{concat(f.Running, f.Waiting, f.KV, f.MaxRunning, []string{modelserver.StartTimeFamily}), gaugeKind},
		{concat(f.PromptTokens, f.GenerationTokens, f.Requests, f.PrefixHits, f.PrefixQueries, []string{modelserver.CPUSecondsFamily}), counterKind},
		{concat(f.TTFT, f.QueueTime, f.ITL), histogramKind},
	} {
		p.WrongType = append(p.WrongType, wrongTypes(raw, group.alts, group.want)...)
	}
	p.TTFT = histogram(raw, f.TTFT)
	if p.TTFT != nil {
		p.Chosen.TTFT = p.TTFT.Family
	}
	p.QueueTime, p.ITL = histogram(raw, f.QueueTime), histogram(raw, f.ITL)
	p.LoRA = lora(raw)
	if server == modelserver.EPP { // a pool's page: totals over its ready endpoints (epp.go)
		eppPool(raw, p)
	}

	engines, models := map[string]*engineLoad{}, map[string]bool{}
	var order []string // engines in page order
	for sig, name := range []string{p.Chosen.Running, p.Chosen.Waiting, p.Chosen.KV} {
		for _, j := range raw.byName[name] {
			s := raw.samples[j]
			if !finite(s.Value) {
				continue
			}
			var key, shown strings.Builder
			for _, l := range engineLabels {
				fmt.Fprintf(&key, "%s=%q,", l, s.Labels.Get(l))
				if v := s.Labels.Get(l); v != "" {
					if shown.Len() > 0 {
						shown.WriteByte(',')
					}
					fmt.Fprintf(&shown, "%s=%q", l, v)
				}
			}
			e := engines[key.String()]
			if e == nil {
				e = &engineLoad{name: "{" + shown.String() + "}", kv: math.Inf(-1)}
				engines[key.String()] = e
				order = append(order, key.String())
			}
			e.add(sig, s.Value)
			for _, l := range modelLabels {
				if v := s.Labels.Get(l); v != "" {
					models[v] = true
					break
				}
			}
		}
	}
	p.Engines = len(engines)
	for m := range models {
		p.Models = append(p.Models, m)
	}
	sort.Strings(p.Models)

	if p.Waiting > 0 && p.Running == 0 && p.KV == 0 {
		p.Suspect = fmt.Sprintf("stuck engine? waiting %g with running 0 and KV usage 0: queued requests are not being served (vllm-metal #479); not load", p.Waiting)
	} else if len(order) > 1 && server != modelserver.EPP {
		// One engine of several (vLLM data parallel) stuck: the page's
		// sums hide it behind the others' running and KV.
		for _, k := range order {
			if e := engines[k]; e.stuck() {
				p.Suspect = fmt.Sprintf("stuck engine? engine %s: waiting %g with running 0 and KV usage 0 while the page's other engines run %g: its queued requests are not being served (vllm-metal #479); not load", e.name, e.waiting, p.Running)
				p.SuspectEngine = e.name
				break
			}
		}
	}

	fams := map[string]bool{}
	for _, s := range raw.samples {
		fams[raw.family[s.Name]] = true
	}
	p.Families = sortedKeys(fams)
	p.Declared = sortedKeys(raw.declared)
	return p
}

// engineLoad is one engine's running, waiting and KV on a page (the
// finite samples of the chosen families whose engine labels are its own),
// and which of the three it has.
type engineLoad struct {
	name                   string // its engine labels, as {engine="1"}
	running, waiting       float64
	kv                     float64
	hasRun, hasWait, hasKV bool
}

// add adds a sample of signal sig (0 running, 1 waiting, 2 KV).
func (e *engineLoad) add(sig int, v float64) {
	switch sig {
	case 0:
		e.running, e.hasRun = e.running+v, true
	case 1:
		e.waiting, e.hasWait = e.waiting+v, true
	default:
		e.kv, e.hasKV = math.Max(e.kv, v), true
	}
}

// stuck is the page rule on one engine: requests wait, none runs, its KV
// cache is empty (all three present).
func (e *engineLoad) stuck() bool {
	return e.hasRun && e.hasWait && e.hasKV && e.waiting > 0 && e.running == 0 && e.kv == 0
}

func sum(vals []float64) float64 {
	t := 0.0
	for _, v := range vals {
		t += v
	}
	return t
}

func maxOf(vals []float64) float64 {
	m := math.Inf(-1)
	for _, v := range vals {
		m = math.Max(m, v)
	}
	return m
}

// pick returns agg over the finite samples of the first alternative that has
// any and whose declared type can be read as want, and that alternative's
// name; NaN and "" when none has (a family declared with another type is
// unknown, never read as if typed right).
func pick(raw *rawPage, alternatives []string, agg func([]float64) float64, want kind) (float64, string) {
	for _, name := range alternatives {
		if raw.checkType(name, want) != nil {
			continue
		}
		var vals []float64
		for _, j := range raw.byName[name] {
			if v := raw.samples[j].Value; finite(v) {
				vals = append(vals, v)
			}
		}
		if len(vals) > 0 {
			return agg(vals), name
		}
	}
	return math.NaN(), ""
}

// histogram sums the classic histogram of the first alternative family that
// has finite _bucket samples over its series (engines, models),
// hist.Merge's sum when their layouts differ; nil when none has. Its
// Buckets are nil (quantiles unknown) when a series lacks the +Inf bucket.
func histogram(raw *rawPage, alternatives []string) *Histogram {
	for _, fam := range alternatives {
		if raw.checkType(fam, histogramKind) != nil || raw.checkType(fam+"_bucket", histogramKind) != nil {
			continue
		}
		var order []uint64 // series in page order
		series := map[uint64][]Bucket{}
		for _, j := range raw.byName[fam+"_bucket"] {
			s := raw.samples[j]
			le, err := strconv.ParseFloat(s.Labels.Get("le"), 64)
			if err != nil || math.IsNaN(le) || !finite(s.Value) {
				continue
			}
			k := labels.NewBuilder(s.Labels).Del("le").Labels().Hash()
			if _, ok := series[k]; !ok {
				order = append(order, k)
			}
			series[k] = append(series[k], Bucket{UpperBound: le, Count: s.Value})
		}
		if len(order) == 0 {
			continue
		}
		h := &Histogram{Family: fam}
		complete := true
		for _, k := range order {
			bs := series[k]
			sort.Slice(bs, func(a, b int) bool { return bs[a].UpperBound < bs[b].UpperBound })
			complete = complete && math.IsInf(bs[len(bs)-1].UpperBound, 1)
			h.Buckets = hist.Merge(h.Buckets, bs)
		}
		if !complete {
			// A series without its +Inf bucket (an excerpt cut before
			// it) holds an unknown number of observations above its
			// largest bound; merged, they would vanish from the sum. No
			// buckets: every quantile of the page is unknown, as
			// histogram_quantile of that series is.
			h.Buckets = nil
		}
		h.Count, _ = pick(raw, []string{fam + "_count"}, sum, histogramKind)
		h.Sum, _ = pick(raw, []string{fam + "_sum"}, sum, histogramKind)
		return h
	}
	return nil
}

// lora returns the series of vllm:lora_requests_info with the largest finite
// value (the latest state), nil when there is none.
func lora(raw *rawPage) *LoRA {
	var best *Sample
	for _, j := range raw.byName[modelserver.VLLMLoRARequestsInfo] {
		s := &raw.samples[j]
		if finite(s.Value) && (best == nil || s.Value > best.Value) {
			best = s
		}
	}
	if best == nil {
		return nil
	}
	return &LoRA{
		Running: splitList(best.Labels.Get("running_lora_adapters")),
		Waiting: splitList(best.Labels.Get("waiting_lora_adapters")),
		MaxLoRA: best.Labels.Get("max_lora"),
		Since:   best.Value,
	}
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// nonFinite reports whether a load signal's value on the page is unknown
// because of a NaN or ±Inf sample: the chosen family has one, or no family
// was chosen (no finite sample) while one of alternatives that is read (its
// declared type a gauge's) has samples. An engine that reports NaN is not
// an engine at 0. (A family declared with another type is unknown for
// that reason: WrongType.)
func nonFinite(raw *rawPage, chosen string, alternatives []string) bool {
	if chosen == "" {
		for _, name := range alternatives {
			if len(raw.byName[name]) > 0 && raw.checkType(name, gaugeKind) == nil {
				return true
			}
		}
		return false
	}
	for _, j := range raw.byName[chosen] {
		if !finite(raw.samples[j].Value) {
			return true
		}
	}
	return false
}

// wrongTypes lists the alternatives the page declares with a type that
// cannot be read as want (checkType's errors, as text), in order.
func wrongTypes(raw *rawPage, alternatives []string, want kind) []string {
	var out []string
	for _, name := range alternatives {
		if err := raw.checkType(name, want); err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
