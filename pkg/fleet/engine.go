package fleet

import (
	"math"
	"time"

	"github.com/infscale/infscale/pkg/replica"
)

// request is one request in a replica.
type request struct {
	arrived   time.Time
	prompt    int
	output    int // output tokens asked for
	remaining int // output tokens still to generate
	context   int64
	prefilled bool
	phase     uint64    // the engine phase that includes it
	last      time.Time // its latest token
	client    *stream   // the HTTP client waiting for its tokens; nil for simulated arrivals
}

// engine is one replica's continuous batching, with the replay simulator's
// scheduling (pkg/replay): a FIFO waiting queue; a request is admitted when
// a batch slot (max-num-seqs) is free and the KV for its prompt and whole
// output fits (reserved at admission, no preemption); a prefill phase takes
// the admissible prompts up to maxBatchedTokens (vLLM's
// max_num_batched_tokens) and, with sequences decoding, runs chunked beside
// them (vLLM V1): it lasts max(prefill of the prompts plus one token per
// decoder per step, the decode steps) and the decoders advance meanwhile;
// otherwise one decode step (pkg/replica's StepTime) gives every running
// sequence a token. A request reaches the scheduler RequestOverhead after
// it arrived.
//
// The engine is driven in phases: begin at a time picks the next phase and
// returns when it ends; end applies it at that time. advance drives it
// over simulated time (tests); the fleet drives it in wall time.
type engine struct {
	model            *replica.Replica
	maxBatch         int
	kvTokens         int64
	maxBatchedTokens int
	overhead         time.Duration

	waiting []*request
	running []*request
	kvRes   int64 // KV tokens reserved by the running (prompt + output each)

	// the phase in progress
	busy     bool
	phaseID  uint64
	start    time.Time
	end      time.Time
	steps    int // decode steps the decoders advance in this phase
	prefills int // requests whose prefill this phase completes

	// clock is where advance (the tests' driver) has simulated up to.
	clock time.Time

	// observations since the last exposition update
	ttfts, queueTimes, itls, e2es []float64
	promptLens, generationLens    []float64
	promptTokens                  float64
	generationTokens              float64
	finished                      float64
}

// defaultMaxBatchedTokens is vLLM V1's default max_num_batched_tokens for
// online serving on a large GPU (and pkg/replay's).
const defaultMaxBatchedTokens = 8192

func newEngine(m *replica.Replica) *engine {
	return &engine{model: m, maxBatch: m.MaxBatch(), kvTokens: m.KVCapacityTokens(), maxBatchedTokens: defaultMaxBatchedTokens,
		overhead: time.Duration(m.RequestOverhead() * float64(time.Second))}
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

// load is the requests running and waiting (the balancer's measure).
func (e *engine) load() int { return len(e.running) + len(e.waiting) }

// dropCanceled removes requests whose client went away (vLLM aborts them),
// releasing their KV. Only between phases.
func (e *engine) dropCanceled() {
	kept := e.waiting[:0]
	for _, r := range e.waiting {
		if !r.client.canceled() {
			kept = append(kept, r)
		}
	}
	clear(e.waiting[len(kept):])
	e.waiting = kept
	run := e.running[:0]
	for _, r := range e.running {
		if r.client.canceled() {
			e.kvRes -= int64(r.prompt + r.output)
			continue
		}
		run = append(run, r)
	}
	clear(e.running[len(run):])
	e.running = run
}

// eligibleAt is when the head of the queue reaches the scheduler.
func (e *engine) eligibleAt() (time.Time, bool) {
	if len(e.waiting) == 0 {
		return time.Time{}, false
	}
	return e.waiting[0].arrived.Add(e.overhead), true
}

// begin starts the next phase at `at` and returns its end; ok is false
// when there is nothing to do at `at` (idle, or the queue's head not yet
// at the scheduler, or not admissible).
func (e *engine) begin(at time.Time) (end time.Time, ok bool) {
	if e.busy {
		return e.end, true
	}
	e.dropCanceled()
	decoders := len(e.running)
	var ctx int64
	minLeft := math.MaxInt
	for _, r := range e.running {
		ctx += r.context
		minLeft = min(minLeft, r.remaining)
	}
	e.phaseID++
	tokens := 0
	e.prefills = 0
	for len(e.waiting) > 0 && len(e.running) < e.maxBatch {
		r := e.waiting[0]
		if r.arrived.Add(e.overhead).After(at) {
			break
		}
		need := int64(r.prompt + r.output)
		if e.kvRes+need > e.kvTokens {
			break
		}
		if tokens > 0 && tokens+r.prompt > e.maxBatchedTokens {
			break
		}
		e.waiting = e.waiting[1:]
		e.kvRes += need
		tokens += r.prompt
		r.phase = e.phaseID
		e.running = append(e.running, r)
		e.prefills++
		e.queueTimes = append(e.queueTimes, at.Sub(r.arrived.Add(e.overhead)).Seconds())
	}
	var d float64
	switch {
	case e.prefills > 0 && decoders == 0:
		d = e.model.PrefillTime(tokens)
		e.steps = 0
	case e.prefills > 0:
		// Chunked: each step carries the decoders and up to
		// maxBatchedTokens - decoders prompt tokens.
		perStep := max(e.maxBatchedTokens-decoders, 1)
		m := min((tokens+perStep-1)/perStep, minLeft)
		var steps float64
		for i := range m {
			steps += e.model.StepTime(decoders, ctx+int64(i*decoders))
		}
		d = math.Max(e.model.PrefillTime(tokens+m*decoders), steps)
		e.steps = m
	case decoders > 0:
		d = e.model.StepTime(decoders, ctx)
		e.steps = 1
	default:
		return time.Time{}, false
	}
	for _, r := range e.running[:decoders] {
		r.phase = e.phaseID
	}
	e.busy, e.start = true, at
	e.end = at.Add(time.Duration(d * float64(time.Second)))
	return e.end, true
}

// finish applies the phase in progress at its end: the decoders' tokens
// (spread evenly over the phase when it carries several steps), the first
// token of the prefilled, and the completions.
func (e *engine) finish() {
	if !e.busy {
		return
	}
	e.busy = false
	at := e.end
	span := at.Sub(e.start)
	kept := e.running[:0]
	for _, r := range e.running {
		if r.phase != e.phaseID {
			kept = append(kept, r) // not in this phase (cannot happen between phases)
			continue
		}
		n := e.steps
		if !r.prefilled {
			r.prefilled, r.context = true, int64(r.prompt)
			e.promptTokens += float64(r.prompt)
			e.promptLens = append(e.promptLens, float64(r.prompt))
			e.ttfts = append(e.ttfts, at.Sub(r.arrived).Seconds())
			n = 1
		}
		for j := range min(n, r.remaining) {
			t := e.start.Add(span * time.Duration(j+1) / time.Duration(n))
			if !r.last.IsZero() {
				e.itls = append(e.itls, t.Sub(r.last).Seconds())
			}
			r.last = t
			r.remaining--
			r.context++
			e.generationTokens++
			r.client.token(t)
		}
		if r.remaining <= 0 {
			e.finished++
			e.kvRes -= int64(r.prompt + r.output)
			e.e2es = append(e.e2es, at.Sub(r.arrived).Seconds())
			e.generationLens = append(e.generationLens, float64(r.output))
			r.client.finish()
			continue
		}
		kept = append(kept, r)
	}
	clear(e.running[len(kept):])
	e.running = kept
}

// reset drops every request (the clients went away or the pod died).
func (e *engine) reset() {
	for _, r := range e.running {
		r.client.finish()
	}
	for _, r := range e.waiting {
		r.client.finish()
	}
	e.running, e.waiting, e.kvRes, e.busy = nil, nil, 0, false
}
