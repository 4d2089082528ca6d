package fleet

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/modelserver"
)

// vLLM V1's buckets (vllm/v1/metrics/loggers.py) for the TTFT, the
// inter-token latency and the request latencies (e2e, queue): the TTFT's
// and the request latencies' are pkg/modelserver's, which the replay reads
// too.
var (
	ttftBuckets    = modelserver.VLLM.TTFTBuckets()
	itlBuckets     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	latencyBuckets = modelserver.VLLM.QueueTimeBuckets()
)

// tokenBuckets is vLLM's build_1_2_5_buckets up to the context length: 1,
// 2, 5, 10, 20, 50, ... while <= max.
func tokenBuckets(max float64) []float64 {
	var out []float64
	for e := 1.0; ; e *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if m*e > max {
				return out
			}
			out = append(out, m*e)
		}
	}
}

// exposition is one replica's vLLM-named metrics on its own registry.
type exposition struct {
	reg                            *prometheus.Registry
	running, waiting, kv           prometheus.Gauge
	ttft, queue, itl, e2e          prometheus.Observer
	promptLen, generationLen       prometheus.Observer
	promptTokens, generationTokens prometheus.Counter
	success                        prometheus.Counter
}

func newExposition(model string, engineLabel string, maxModelLen float64) *exposition {
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
	h := func(name, help string, buckets []float64) prometheus.Observer {
		v := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: labels})
		reg.MustRegister(v)
		return v
	}
	tokens := tokenBuckets(maxModelLen)
	return &exposition{
		reg:              reg,
		ttft:             h("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets),
		queue:            h("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", latencyBuckets),
		itl:              h("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets),
		e2e:              h("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", latencyBuckets),
		promptLen:        h("vllm:request_prompt_tokens", "Number of prefill tokens processed.", tokens),
		generationLen:    h("vllm:request_generation_tokens", "Number of generation tokens processed.", tokens),
		running:          g("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting:          g("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		kv:               g("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
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
	for _, o := range []struct {
		h    prometheus.Observer
		list *[]float64
	}{{x.ttft, &e.ttfts}, {x.queue, &e.queueTimes}, {x.itl, &e.itls}, {x.e2e, &e.e2es}, {x.promptLen, &e.promptLens}, {x.generationLen, &e.generationLens}} {
		for _, v := range *o.list {
			o.h.Observe(v)
		}
		*o.list = (*o.list)[:0]
	}
	x.promptTokens.Add(e.promptTokens)
	x.generationTokens.Add(e.generationTokens)
	x.success.Add(e.finished)
	e.promptTokens, e.generationTokens, e.finished = 0, 0, 0
}
