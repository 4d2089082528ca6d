package replay

import "math"

// rstate is a replica's life cycle: starting (cold start), ready (serving,
// receives arrivals), draining (removed: serves what it holds, receives
// nothing), then gone.
type rstate uint8

const (
	starting rstate = iota
	ready
	draining
)

// phase is what a ready or draining replica's engine is doing.
type phase uint8

const (
	idle phase = iota
	prefilling
	decoding
)

// replica is one simulated replica. Between events its batch is advanced
// analytically: a phase (a prefill, or decode steps with a fixed batch)
// ends at next, the replica's only pending event.
type replica struct {
	id      int
	state   rstate
	added   float64 // when it was added (replica time starts)
	readyAt float64 // when it became ready
	next    float64 // its next event: ready time, or the end of the phase
	heapIdx int     // position in the simulator's event heap, -1 when absent
	rtIdx   int     // position in the router's index (route.go), -1 when not ready

	waiting fifo      // queued in the server, FIFO
	pre     []pending // being prefilled
	run     runHeap   // decoding
	steps   int64     // decode steps done since the replica started
	sumA    int64     // sum of seq.a over run: context = sumA + len(run)·steps
	kvRes   int64     // KV tokens reserved by pre and run

	ph      phase
	phStart float64
	phSteps int64 // decode steps the phase advances
	cv      curve

	cpuSum, cpuAt float64 // integral of CPU % since cpuAt's period start
}

func (r *replica) outstanding() int { return r.waiting.n + len(r.pre) + len(r.run) }

func (r *replica) runningN() int { return len(r.pre) + len(r.run) }

// context is the tokens of KV in use by the decoding batch at the last
// phase boundary.
func (r *replica) context() int64 { return r.sumA + int64(len(r.run))*r.steps }

// contextAt is the KV in use at now, counting the decode steps done since
// the phase started (for observations between events).
func (r *replica) contextAt(now float64) int64 {
	steps := r.steps
	if r.ph == decoding {
		steps += min(r.cv.stepsBy(now-r.phStart), r.phSteps)
	}
	return r.sumA + int64(len(r.run))*steps
}

// cpuMark integrates the CPU up to now before the running count changes.
func (r *replica) cpuMark(s *sim, now float64) {
	r.cpuSum += s.sp.cpu[min(r.runningN(), len(s.sp.cpu)-1)] * (now - r.cpuAt)
	r.cpuAt = now
}

// admissible reports whether the head of the queue fits now: a batch slot
// and KV for its prompt and whole output (no preemption is modelled).
func (r *replica) admissible(s *sim) bool {
	if r.waiting.n == 0 || r.runningN() >= s.sp.maxBatch {
		return false
	}
	p := r.waiting.front()
	return r.kvRes+s.reserve(p) <= s.sp.kvCap
}

// enqueue receives a routed request at now.
func (r *replica) enqueue(s *sim, now float64, p pending) {
	r.waiting.push(p)
	s.routeFix(r)
	switch r.ph {
	case idle:
		r.startNext(s, now)
	case decoding:
		// The scheduler admits at the next step boundary: cut the phase there.
		if r.waiting.n == 1 && r.admissible(s) {
			done, end := r.cv.stepsByNext(now - r.phStart) // end = time(done+1)
			if k := done + 1; k < r.phSteps {
				r.phSteps = k
				s.reschedule(r, r.phStart+end)
			}
		}
	}
}

// phaseEnd finishes the current phase at now and starts the next.
func (r *replica) phaseEnd(s *sim, now float64) {
	switch r.ph {
	case decoding:
		if s.role == roleDecode {
			s.addITL(now-r.phStart, r.phSteps, len(r.run))
		}
		r.advance(s, now, r.phSteps)
	case prefilling:
		if r.phSteps > 0 { // chunked prefill: decoders advanced meanwhile
			if s.role == roleDecode {
				s.addITL(now-r.phStart, r.phSteps, len(r.run))
			}
			r.advance(s, now, r.phSteps)
		}
		r.cpuMark(s, now)
		for i := range r.pre {
			p := &r.pre[i]
			s.firstToken(now, *p)
			if p.output <= 1 || s.role == rolePrefill {
				r.kvRes -= s.reserve(p)
				s.complete(now, p.prompt, min(p.output, 1))
				continue
			}
			a := int64(p.prompt) + 1 - r.steps
			r.run.push(seq{finish: r.steps + int64(p.output) - 1, a: a, prompt: p.prompt, output: p.output})
			r.sumA += a
		}
		r.pre = r.pre[:0]
	}
	r.startNext(s, now)
	s.routeFix(r) // completions lowered its outstanding count
}

// advance moves the decoding batch n steps and completes the sequences
// whose last token came out.
func (r *replica) advance(s *sim, now float64, n int64) {
	r.steps += n
	if len(r.run) > 0 && r.run[0].finish <= r.steps {
		r.completeDone(s, now)
	}
}

// completeDone completes the sequences whose last token is out by now
// (advance's slow path, out of line so that advance inlines).
func (r *replica) completeDone(s *sim, now float64) {
	r.cpuMark(s, now)
	for len(r.run) > 0 && r.run[0].finish <= r.steps {
		q := r.run.pop()
		r.sumA -= q.a
		r.kvRes -= int64(q.prompt) + int64(q.output)
		s.complete(now, q.prompt, q.output)
	}
}

// startNext picks the next phase at now: prefill what the queue can admit
// (vLLM schedules waiting prefills first), else decode until the next
// completion, else idle (a draining replica then leaves).
func (r *replica) startNext(s *sim, now float64) {
	r.phStart, r.phSteps = now, 0
	if r.admissible(s) {
		r.cpuMark(s, now)
		if s.role == roleDecode {
			r.startDecodeJoin(s, now)
			return
		}
		tokens := 0
		for r.admissible(s) {
			p := r.waiting.front()
			if tokens > 0 && tokens+int(p.prompt) > s.cfg.MaxBatchedTokens {
				break
			}
			r.waiting.pop()
			if s.queueWin != nil {
				s.queueWin.add(now, now-p.arrival) // vllm:request_queue_time_seconds
			}
			tokens += int(p.prompt)
			r.kvRes += s.reserve(p)
			r.pre = append(r.pre, *p)
		}
		var d float64
		if s.cfg.Prefill != PrefillChunked || len(r.run) == 0 {
			d = s.sp.m.PrefillTime(tokens)
		} else {
			// Chunked prefill: each step carries the decoders and up to
			// MaxBatchedTokens - batch prompt tokens; the decoders advance
			// one token a step instead of stalling (capped at the next
			// completion, whose sequence finishes at the phase end).
			b := len(r.run)
			perStep := max(s.cfg.MaxBatchedTokens-b, 1)
			m := int64(1) // ceil(tokens/perStep): one step when the prompts fit in one (no division)
			if tokens > perStep || tokens <= 0 {
				m = int64((tokens + perStep - 1) / perStep)
			}
			m = min(m, r.run[0].finish-r.steps)
			s.sp.setCurve(&r.cv, b, r.context())
			d = maxf(s.sp.m.PrefillTime(tokens+int(m)*b), r.cv.time(m))
			r.phSteps = m
		}
		r.ph = prefilling
		s.reschedule(r, now+d)
		return
	}
	if len(r.run) > 0 {
		b := len(r.run)
		s.sp.setCurve(&r.cv, b, r.context())
		r.phSteps = r.run[0].finish - r.steps
		r.ph = decoding
		s.reschedule(r, now+r.cv.time(r.phSteps))
		return
	}
	r.ph = idle
	s.reschedule(r, math.Inf(1))
	if r.state == draining && r.outstanding() == 0 {
		s.retire(r, now)
	}
}

// maxf is math.Max(x, y) (its NaN, infinity and signed-zero cases too),
// compared inline: math.Max is an assembly call.
func maxf(x, y float64) float64 {
	switch {
	case x > y:
		return x
	case y > x:
		return y
	}
	return math.Max(x, y)
}
