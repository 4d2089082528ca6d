package fleet

import (
	"time"

	"github.com/infscale/infscale/pkg/replica"
)

// request is one request in a replica.
type request struct {
	arrived   time.Time
	prompt    int
	remaining int // output tokens still to generate
	context   int64
	prefilled bool
}

// engine is one replica's continuous batching: FIFO waiting queue, up to
// maxBatch running sequences whose KV fits, prefill then one token per
// running sequence per decode step (pkg/replica's StepTime).
type engine struct {
	model    *replica.Replica
	maxBatch int
	kvTokens int64

	waiting []*request
	running []*request
	// budget is simulated seconds carried over between ticks.
	budget float64

	// observations since the last exposition update
	ttfts            []float64
	promptTokens     float64
	generationTokens float64
	finished         float64
}

func newEngine(m *replica.Replica) *engine {
	return &engine{model: m, maxBatch: m.MaxBatch(), kvTokens: m.KVCapacityTokens()}
}

func (e *engine) usedKV() int64 {
	var n int64
	for _, r := range e.running {
		n += r.context
	}
	return n
}

// kvUsage is the fraction of KV capacity the running sequences hold.
func (e *engine) kvUsage() float64 {
	if e.kvTokens <= 0 {
		return 0
	}
	return float64(e.usedKV()) / float64(e.kvTokens)
}

// advance runs the engine for dt of simulated time ending at now.
func (e *engine) advance(dt time.Duration, now time.Time) {
	e.budget += dt.Seconds()
	for e.budget > 0 {
		// Admit waiting requests while the batch and KV allow (vLLM's
		// scheduler: the KV for the whole sequence is reserved on admission).
		used := e.usedKV()
		for len(e.waiting) > 0 && len(e.running) < e.maxBatch {
			r := e.waiting[0]
			need := int64(r.prompt + r.remaining)
			if used+need > e.kvTokens && len(e.running) > 0 {
				break
			}
			e.waiting = e.waiting[1:]
			e.running = append(e.running, r)
			used += need
		}
		if len(e.running) == 0 {
			e.budget = 0
			return
		}
		// Prefill the newly admitted (first token comes with the prefill).
		prefilled := false
		for _, r := range e.running {
			if r.prefilled {
				continue
			}
			e.budget -= e.model.PrefillTime(r.prompt)
			r.prefilled, r.context = true, int64(r.prompt)+1
			r.remaining--
			e.promptTokens += float64(r.prompt)
			e.generationTokens++
			// TTFT: the time from arrival to the end of this prefill.
			at := now.Add(-time.Duration(e.budget * float64(time.Second))) // budget < 0: the prefill ends after now
			e.ttfts = append(e.ttfts, at.Sub(r.arrived).Seconds())
			prefilled = true
		}
		if !prefilled {
			var ctx int64
			for _, r := range e.running {
				ctx += r.context
			}
			e.budget -= e.model.StepTime(len(e.running), ctx)
			for _, r := range e.running {
				r.remaining--
				r.context++
				e.generationTokens++
			}
		}
		kept := e.running[:0]
		for _, r := range e.running {
			if r.remaining <= 0 {
				e.finished++
				continue
			}
			kept = append(kept, r)
		}
		e.running = kept
	}
}
