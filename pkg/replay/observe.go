package replay

import (
	"math"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// observe is what a policy sees at now, as a Prometheus scrape of a vLLM
// fleet would show it. Current is the Deployment's replicas (starting +
// ready); only ready replicas report (a starting pod exports nothing yet, a
// draining one has left the endpoints), so with none ready the per-replica
// signals are unknown (NaN); Unready counts the starting ones. Running counts requests being prefilled or
// decoded (vllm:num_requests_running), Waiting the server queues, Held the
// activator's queue. KV is the mean KV-cache usage of the reporting
// replicas; CPU their mean CPU % averaged since the previous observation
// (rate(process_cpu_seconds_total)); TTFT the Config.TTFTQuantile over the
// last Config.TTFTWindow from vLLM's TTFT histogram buckets, NaN when no
// request got a first token in it (NoneFinished then set, as serve sets it).
// The demand signals (demand.go): arrival
// rate, prompt and generated tokens per second over Config.RateWindow,
// mean prompt and output length of the requests finished in it, the
// queue-time quantile over Config.TTFTWindow.
func (s *sim) observe(now float64) recommend.Observation {
	obs := recommend.Observation{
		Current: s.spec(),
		Held:    float64(s.held.n),
		Running: math.NaN(), Waiting: math.NaN(), KV: math.NaN(), CPU: math.NaN(),
		TTFT: s.ttftWin.quantile(now, s.cfg.TTFTQuantile),
		ITL:  math.NaN(),
		// The replay has no prefix cache: every prompt token is prefilled.
		PrefixHit: 0,
	}
	// As serve reads a histogram with no observation in its window: the
	// quantile is NaN because no request got a first token, so the latency
	// guards abstain when the fleet is idle (recommend.TTFTAbstains).
	obs.NoneFinished = math.IsNaN(obs.TTFT)
	obs.ArrivalRate, obs.PromptTokensRate, obs.GenerationTokensRate, obs.MeanPrompt, obs.MeanOutput, obs.QueueTime = s.demandSignals(now)
	obs.ArrivalWindow = time.Duration(s.cfg.RateWindow * float64(time.Second))
	var n int
	var run, wait, kv, cpu float64
	for _, r := range s.reps {
		if r.state == starting {
			obs.Unready++
		}
		if r.state != ready {
			continue
		}
		n++
		run += float64(r.runningN())
		wait += float64(r.waiting.n)
		if r.waiting.n > 0 {
			obs.Queued++
		}
		used := r.contextAt(now)
		for _, p := range r.pre {
			used += int64(p.prompt)
		}
		kv += float64(used) / float64(s.sp.kvCap)
		r.cpuMark(s, now)
		if span := now - max(s.lastTick, r.readyAt); span > 0 {
			cpu += r.cpuSum / span // the average since the last observation, or since it became ready
		} else {
			cpu += s.sp.cpu[min(r.runningN(), len(s.sp.cpu)-1)]
		}
		r.cpuSum = 0
	}
	if n > 0 {
		obs.Reporting = n
		obs.Running, obs.Waiting = run, wait
		obs.KV, obs.CPU = kv/float64(n), cpu/float64(n)
	}
	return obs
}

// Sample is one row of the timeline: a Config.Period interval ending at T.
type Sample struct {
	// T is the end of the interval, in seconds since the trace start.
	T float64
	// ArrivalRate is the interval's arrivals per second.
	ArrivalRate float64
	// Desired is the replica count the policy asked for at T.
	Desired int
	// Ready, Starting and Draining are the replicas in each state at T.
	Ready    int
	Starting int
	Draining int
	// Running, Waiting and Held are requests at T (NaN: no ready replica).
	Running float64
	Waiting float64
	Held    float64
	// TTFTP95 is the p95 TTFT of first tokens in the interval, seconds (NaN: none).
	TTFTP95 float64
	// Misses are the interval's requests that missed the SLO (counted when
	// their first token came late, or at arrival when rejected or shed).
	Misses int64
	// Reason is the step that decided Desired (recommend.Reason's name:
	// DesiredWithinRange, ScaleDownStabilized, guard, ...) and Metric the
	// signal whose recommendation was the largest (demand, ttft, ...;
	// infscale_desired_replicas for hpa(...), the trigger's metric for
	// llmd-*); both "" for a policy that does not decide through
	// pkg/recommend (fixed:N, knative, oracle, optimal, a follow file).
	Reason, Metric string
}

// sampleTimeline closes the timeline interval at now (every Config.Period),
// desired decided by why (nil: a controller that does not say why).
func (s *sim) sampleTimeline(now float64, obs recommend.Observation, desired int, why explainer) {
	if !s.cfg.Timeline || now < s.nextSample {
		return
	}
	s.sample.Desired = desired
	if why != nil {
		s.sample.Reason, s.sample.Metric = why.explain()
	}
	s.sample.Running, s.sample.Waiting, s.sample.Held = obs.Running, obs.Waiting, obs.Held
	for _, r := range s.reps {
		switch r.state {
		case ready:
			s.sample.Ready++
		case starting:
			s.sample.Starting++
		case draining:
			s.sample.Draining++
		}
	}
	s.flushSample(now)
	s.nextSample = now + s.cfg.Period
}

// sampleStart is the start of the timeline interval being accumulated.
func (s *sim) sampleStart() float64 {
	if n := len(s.res.Timeline); n > 0 {
		return s.res.Timeline[n-1].T
	}
	return 0
}

func (s *sim) flushSample(now float64) {
	if now <= 0 && s.res.Timeline != nil {
		return
	}
	span := now - s.sampleStart()
	if span <= 0 {
		span = s.cfg.Period
	}
	s.sample.T = now
	s.sample.ArrivalRate = float64(s.arrivalsInSample) / span
	s.sample.TTFTP95 = s.sampleTTFT.quantile(0.95)
	s.res.Timeline = append(s.res.Timeline, s.sample)
	s.sample = Sample{}
	s.arrivalsInSample = 0
	s.sampleTTFT = hist{counts: s.sampleTTFT.counts}
	clear(s.sampleTTFT.counts)
}
