package scrape

import (
	"math"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	hist "github.com/infscale/infscale/pkg/histogram"
	"github.com/infscale/infscale/pkg/modelserver"
)

// Page is one scrape of one replica's /metrics, reduced to its load
// signals. Every float64 signal is NaN when ABSENT (family missing, declared
// without samples, or only NaN/±Inf), never 0. Running, Waiting and KV are
// over the finite samples; Unknown says when the family had a NaN or ±Inf
// one too (the replica's value is then unknown to a decision).
type Page struct {
	// Source is the file name, URL or "stdin" the page came from.
	Source string
	// Server is the profile the page was read with (given or detected).
	Server modelserver.Server
	// Time is when the page was scraped (set by Load; zero from Read). Rates
	// need it.
	Time time.Time

	// Running and Waiting are requests, summed over every series of the
	// chosen family (engines, dp/tp ranks, models).
	Running, Waiting float64
	// KV is KV-cache usage, a fraction 0..1, the maximum over series.
	KV float64

	// CPUSeconds is process_cpu_seconds_total (seconds, a counter).
	CPUSeconds float64
	// PromptTokens and GenerationTokens are token counters (sums over series).
	PromptTokens, GenerationTokens float64
	// Requests is the successful-requests counter (sum over series).
	Requests float64
	// PrefixHits and PrefixQueries are the prefix cache's counters in
	// tokens (sums over series): prompt tokens found in the cache and
	// looked up in it (modelserver.Families.PrefixHits, PrefixQueries).
	PrefixHits, PrefixQueries float64
	// ProcessStart is process_start_time_seconds (unix seconds); a change
	// between two scrapes means the counters were reset.
	ProcessStart float64
	// MaxRunning is the server's batch capacity in requests (SGLang
	// max_running_requests, TensorRT-LLM's max active requests, summed over
	// engines and models; the Families' MaxRunning); capacity, not load.
	MaxRunning float64
	// TTFT is the time-to-first-token histogram summed over series, nil when
	// the page has none (e.g. before the first request finishes).
	TTFT *Histogram
	// QueueTime and ITL are the queue-time and inter-token-latency
	// histograms, as TTFT (nil when absent).
	QueueTime, ITL *Histogram

	// Engines is the number of distinct engines (label sets of engine,
	// dp_rank, tp_rank, pp_rank) among the running/waiting/KV series; 0 when
	// none of those families has samples.
	Engines int
	// Models is the distinct model names (labels model_name, name, model) on
	// the running/waiting/KV series, sorted.
	Models []string
	// LoRA is the current state of vllm:lora_requests_info, nil when absent.
	LoRA *LoRA
	// Pool is what an llm-d EPP page (server epp) says of its
	// InferencePool; Running, Waiting and KV are then the pool's totals
	// and mean (epp.go). Nil for a model server's page.
	Pool *Pool
	// Suspect is non-empty when the page looks like a stuck engine rather
	// than load: waiting > 0 with running == 0 and KV == 0 (all three present),
	// on the page or on one of its engines (data parallel: the page's sums
	// hide one stuck engine behind the others);
	// case C18 of docs/design.md (vllm-metal #479). The values are kept as read.
	Suspect string
	// SuspectEngine names that engine by its labels ({engine="1"}) when
	// one of several is stuck; "" otherwise.
	SuspectEngine string

	// Unknown lists the load signals (running, waiting, kv) whose family
	// has a NaN or ±Inf sample (an engine of the replica reports no
	// number, or every sample is non-finite): the replica's value is
	// unknown, and Aggregate's total with it.
	Unknown []string
	// NonFinite lists the signals of Unknown whose family has a NaN or
	// ±Inf sample; the others are unknown because their family is
	// declared with another type (WrongType says which).
	NonFinite []string

	// WrongType lists the families of the server's profile that the page
	// declares with a # TYPE they are not read as (a running gauge
	// declared a counter, a TTFT histogram a summary), one message each:
	// such a family is not read (its signal is unknown, in Unknown for
	// running, waiting and kv), never read as 0.
	WrongType []string

	// Chosen records which family each signal was read from.
	Chosen Chosen
	// Families is the families that have at least one sample on the page,
	// sorted. Histogram and summary samples (_bucket, _sum, _count) count
	// under their family's name when the page declares its TYPE.
	Families []string
	// Declared is the families the page declares with # HELP or # TYPE,
	// sorted, with or without samples.
	Declared []string

	samples []Sample
	byName  map[string][]int
}

// Chosen names the family each signal was read from; "" when absent.
type Chosen struct {
	Running          string `json:"running,omitempty"`
	Waiting          string `json:"waiting,omitempty"`
	KV               string `json:"kv,omitempty"`
	PromptTokens     string `json:"prompt_tokens,omitempty"`
	GenerationTokens string `json:"generation_tokens,omitempty"`
	Requests         string `json:"requests,omitempty"`
	PrefixHits       string `json:"prefix_hits,omitempty"`
	PrefixQueries    string `json:"prefix_queries,omitempty"`
	CPUSeconds       string `json:"cpu_seconds,omitempty"`
	TTFT             string `json:"ttft,omitempty"`
}

// Sample is one sample line: its metric name, its labels (including
// __name__) and its value (possibly NaN or ±Inf as written).
type Sample struct {
	Name   string
	Labels labels.Labels
	Value  float64
}

// Histogram is a classic Prometheus histogram summed over series: cumulative
// bucket counts by upper bound (sorted, +Inf last; none when a series of
// the page lacks its +Inf bucket, so every quantile is unknown), the total
// count and sum (NaN when the page lacks _count / _sum).
type Histogram struct {
	Family  string
	Buckets []Bucket
	Count   float64
	Sum     float64
}

// Bucket is one cumulative histogram bucket: observations <= UpperBound.
type Bucket = hist.Bucket

// LoRA is the current state of vllm:lora_requests_info: the series with the
// largest value (the unix time the state was set; vllm PR #13303).
type LoRA struct {
	// Running and Waiting are adapter names (comma-separated label split).
	Running, Waiting []string
	// MaxLoRA is the max_lora label.
	MaxLoRA string
	// Since is the series value, unix seconds.
	Since float64
}

// Samples returns the samples whose metric name is exactly name, in page
// order. The slice must not be modified.
func (p *Page) Samples(name string) []Sample {
	idx := p.byName[name]
	out := make([]Sample, len(idx))
	for i, j := range idx {
		out[i] = p.samples[j]
	}
	return out
}

// SumBy sums the finite samples of the family name by the value of label
// (e.g. model_name); an absent label counts under "".
func (p *Page) SumBy(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, j := range p.byName[name] {
		s := p.samples[j]
		if finite(s.Value) {
			out[s.Labels.Get(label)] += s.Value
		}
	}
	return out
}

// Reporting reports whether the page carries any load signal (running,
// waiting or KV).
func (p *Page) Reporting() bool {
	return finite(p.Running) || finite(p.Waiting) || finite(p.KV)
}

// ReportsLoad reports whether the page carries running or waiting: a
// replica whose load is read (Totals.Reporting), as Prometheus mode counts
// the pods with a running (else waiting) series. A page with KV usage alone
// (the request families renamed, or the page cut after the KV line) does
// not: its requests are unknown, not 0.
func (p *Page) ReportsLoad() bool {
	return finite(p.Running) || finite(p.Waiting)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
