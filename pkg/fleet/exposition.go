package fleet

import (
	"github.com/prometheus/client_golang/prometheus"
)

// ttftBuckets are vLLM's vllm:time_to_first_token_seconds buckets (v0.6+).
var ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}

// exposition is one replica's vLLM-named metrics on its own registry.
type exposition struct {
	reg                            *prometheus.Registry
	running, waiting, kv           prometheus.Gauge
	ttft                           prometheus.Observer
	promptTokens, generationTokens prometheus.Counter
	success                        prometheus.Counter
}

func newExposition(model string, engineLabel string) *exposition {
	reg := prometheus.NewRegistry()
	labels := prometheus.Labels{"model_name": model, "engine": engineLabel}
	g := func(name, help string) prometheus.Gauge {
		v := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
		reg.MustRegister(v)
		return v
	}
	c := func(name, help string, extra prometheus.Labels) prometheus.Counter {
		l := prometheus.Labels{}
		for k, v := range labels {
			l[k] = v
		}
		for k, v := range extra {
			l[k] = v
		}
		v := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: l})
		reg.MustRegister(v)
		return v
	}
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:time_to_first_token_seconds", Help: "Histogram of time to first token in seconds.", Buckets: ttftBuckets, ConstLabels: labels})
	reg.MustRegister(h)
	return &exposition{
		reg:              reg,
		running:          g("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting:          g("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		kv:               g("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		ttft:             h,
		promptTokens:     c("vllm:prompt_tokens_total", "Number of prefill tokens processed.", nil),
		generationTokens: c("vllm:generation_tokens_total", "Number of generation tokens processed.", nil),
		success:          c("vllm:request_success_total", "Count of successfully processed requests.", prometheus.Labels{"finished_reason": "length"}),
	}
}

// update publishes the engine's state and the observations since the last
// update.
func (x *exposition) update(e *engine) {
	x.running.Set(float64(len(e.running)))
	x.waiting.Set(float64(len(e.waiting)))
	x.kv.Set(e.kvUsage())
	for _, v := range e.ttfts {
		x.ttft.Observe(v)
	}
	e.ttfts = e.ttfts[:0]
	x.promptTokens.Add(e.promptTokens)
	x.generationTokens.Add(e.generationTokens)
	x.success.Add(e.finished)
	e.promptTokens, e.generationTokens, e.finished = 0, 0, 0
}
