package replay

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/trace"
)

// sim is one replay: one policy over one pass of the trace.
type sim struct {
	cfg   Config
	sp    *speed
	ctl   Controller
	rd    trace.Reader
	heap  []heapEvent // replicas with a pending event: a heap by (next, id) above heapScanMax entries, else unordered
	evMin int         // index in heap of the earliest entry (0 when heap is a heap)

	reps   []*replica // alive replicas in id order
	route  []*replica // ready replicas by (outstanding, id): route.go
	nextID int
	held   fifo // the activator's queue

	end         float64 // accounting end: the trace's end (+Inf until known)
	outstanding int64   // requests in the system (held, waiting, running)
	ttftWin     *window
	queueWin    *window       // queue time (arrival to first scheduling) per period
	demand      *demandWindow // arrivals, tokens, finished requests per period
	ttft        hist

	noCounts                counts  // what counts writes to without a demand window (the optimal planner's replays)
	countsLo, countsHi      float64 // the times whose demand slot is countsCur (demand.go)
	countsCur               *counts
	finishedEver            int64   // requests finished so far
	lastMeanIn, lastMeanOut float64 // the means of the last window with a finished request
	res                     Result

	// scale bookkeeping
	lastChange       recommend.ScaleChange // for reversals (At: epoch + seconds)
	lastTick         float64
	sample           Sample // the timeline row being accumulated
	nextSample       float64
	sampleTTFT       hist
	arrivalsInSample int64

	quiet bool // a planning replay (optimal.go): no TTFT statistics

	// role is the pool's part in a prefill/decode pair (pd.go); rolePool
	// (0) is the aggregated replay. handoff receives a prefill pool's
	// request at its first token (its KV ready to move).
	role    poolRole
	handoff func(now float64, p pending)
	itl     hist // a decode pool's step times, one per output token (pd.go)

	// hooks for tests: each first token and each completion
	onFirst func(now float64, p pending)
	onDone  func(now float64, output int32)
	// onShed, if set, gets the arrival of each request shed (Config.MaxBacklog).
	onShed func(arrival float64)
}

// heapEvent is an entry of the event heap: the replica's next event time
// and id held in the heap itself, so that a sift compares without loading
// the replica.
type heapEvent struct {
	next float64
	id   int
	r    *replica
}

// push, fix and remove maintain the event heap of replicas.
func (s *sim) less(a, b *heapEvent) bool {
	return a.next < b.next || (a.next == b.next && a.id < b.id)
}

func (s *sim) up(i int) {
	h := s.heap
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(&h[i], &h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		h[i].r.heapIdx, h[p].r.heapIdx = i, p
		i = p
	}
}

func (s *sim) down(i int) {
	h := s.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && s.less(&h[r], &h[l]) {
			m = r
		}
		if !s.less(&h[m], &h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		h[i].r.heapIdx, h[m].r.heapIdx = i, m
		i = m
	}
}

// heapScanMax is the number of pending events up to which the event set is
// an unordered slice whose earliest entry (evMin) is found by a scan, as the
// router does up to routeScan: on the few replicas of most replays a
// scan of a handful of entries costs less than a heap's sifts, and both
// give the same (next, id) order. Above it the slice is a heap.
const heapScanMax = 8

// rescan sets evMin to the earliest entry of an unordered event slice.
func (s *sim) rescan() {
	h := s.heap
	m := 0
	for i := 1; i < len(h); i++ {
		if s.less(&h[i], &h[m]) {
			m = i
		}
	}
	s.evMin = m
}

// heapify orders the event slice as a heap (it grew above heapScanMax;
// each entry's heapIdx is already its index, as in a heap).
func (s *sim) heapify() {
	for i := len(s.heap)/2 - 1; i >= 0; i-- {
		s.down(i)
	}
	s.evMin = 0
}

// reschedule sets r's next event to t (+Inf: none).
func (s *sim) reschedule(r *replica, t float64) {
	r.next = t
	switch {
	case math.IsInf(t, 1):
		if r.heapIdx >= 0 {
			i := r.heapIdx
			last := len(s.heap) - 1
			wasHeap := len(s.heap) > heapScanMax
			s.heap[i] = s.heap[last]
			s.heap[i].r.heapIdx = i
			s.heap = s.heap[:last]
			r.heapIdx = -1
			switch {
			case wasHeap:
				if i < last {
					s.down(i)
					s.up(i)
				}
				s.evMin = 0 // a heap's root, also once it is short enough to scan
			case s.evMin == i || last == 0:
				s.rescan()
			case s.evMin == last:
				s.evMin = i // the earliest moved into the hole
			}
		}
	case r.heapIdx < 0:
		r.heapIdx = len(s.heap)
		s.heap = append(s.heap, heapEvent{next: t, id: r.id, r: r})
		switch n := len(s.heap); {
		case n > heapScanMax+1:
			s.up(r.heapIdx)
		case n == heapScanMax+1:
			s.heapify()
		case n == 1 || s.less(&s.heap[n-1], &s.heap[s.evMin]):
			s.evMin = n - 1
		}
	case len(s.heap) > heapScanMax:
		s.heap[r.heapIdx].next = t
		s.down(r.heapIdx)
		s.up(r.heapIdx)
	default:
		i := r.heapIdx
		later := t > s.heap[i].next
		s.heap[i].next = t
		switch {
		case i == s.evMin:
			if later {
				s.rescan()
			}
		case s.less(&s.heap[i], &s.heap[s.evMin]):
			s.evMin = i
		}
	}
}

// replicaEvent is the earliest replica's event at t: ready after its cold
// start, or the end of its phase.
func (s *sim) replicaEvent(t float64) {
	r := s.heap[s.evMin].r
	if r.state == starting {
		s.becomeReady(r, t)
	} else {
		r.phaseEnd(s, t)
	}
}

// first reads rd's first request and checks the replay's span against
// it; trace.ErrEmpty when rd holds none.
func (s *sim) first(rd trace.Reader) (trace.Request, error) {
	next, err := rd.Next()
	if err == io.EOF {
		return trace.Request{}, trace.ErrEmpty
	}
	if err != nil {
		return trace.Request{}, err
	}
	return next, s.checkSpan(max(next.Arrival, s.cfg.duration))
}

// run is the event loop. Events at the same time go replica events first
// (ready, phase ends, by replica id), then the arrival, then the tick.
func (s *sim) run(ctx context.Context) error {
	next, err := s.first(s.rd)
	if err != nil {
		return err
	}
	have := true
	period := s.ctlPeriod() // a controller's period is fixed for the replay
	spanOK := spanBelow(period)
	tick := period // the first observation comes after one period of traffic
	var events uint64
	lastArrival := 0.0
	stop := s.end + s.cfg.Drain // past it nothing is accounted (recomputed when the end is known)
	for {
		tr := s.nextEvent()
		ta := next.Arrival // +Inf once the trace is read
		// The earliest of the three, chosen as the switch below chooses
		// (no time is NaN: checkSpan refuses a NaN arrival).
		const (
			replicaNext = iota
			arrivalNext
			tickNext
		)
		kind, t := tickNext, tick
		switch {
		case tr <= ta && tr <= tick:
			kind, t = replicaNext, tr
		case ta <= tick:
			kind, t = arrivalNext, ta
		}
		if !have && s.outstanding == 0 && t >= s.end {
			break
		}
		if t > stop {
			break
		}
		events++
		if events%checkpointEvery == 0 {
			if err := checkpoint(ctx, t, s.end, s.cfg.Progress); err != nil {
				return err
			}
		}
		switch kind {
		case replicaNext:
			if r := s.heap[s.evMin].r; r.state == starting { // replicaEvent, inline
				s.becomeReady(r, tr)
			} else {
				r.phaseEnd(s, tr)
			}
		case arrivalNext:
			s.arrive(ta, next)
			lastArrival = ta
			next, err = s.rd.Next()
			if err == io.EOF {
				have = false
				next.Arrival = math.Inf(1)
				s.end = max(s.cfg.duration, lastArrival)
				stop = s.end + s.cfg.Drain
			} else if err != nil {
				return err
			} else if !(next.Arrival <= spanOK) { // else within the span for sure
				if err := s.checkSpan(next.Arrival); err != nil {
					return err
				}
			}
		default:
			s.tick(tick)
			tick += period
		}
	}
	s.finish(min(s.end+s.cfg.Drain, max(s.lastTick, s.end)))
	return nil
}

// checkSpan refuses a replay that would run more than MaxPeriods of the
// controller's period to reach second t (an arrival, or the declared end).
func (s *sim) checkSpan(t float64) error {
	p := s.ctlPeriod()
	if !(t/p <= MaxPeriods) {
		return spanError{fmt.Errorf("%s: second %g is %.3g periods of %g s from the start; a replay covers at most %d periods (cut the trace with a window, or lengthen the period)",
			s.res.Trace, t, t/p, p, MaxPeriods)}
	}
	return nil
}

// spanError is checkSpan's: the trace reaches past MaxPeriods of the
// controller's period (optimal leaves out a seed whose own tick is
// shorter than the replay's period, knative's 2 s, on such a trace).
type spanError struct{ error }

func (e spanError) Unwrap() error { return e.error }

// spanBelow is the largest second t with t/p <= MaxPeriods, the exact
// bound of checkSpan's test (t/p grows with t), so that a time at most
// spanBelow(p) passes checkSpan without the division; 0 when p is not a
// positive period.
func spanBelow(p float64) float64 {
	if !(p > 0) {
		return 0
	}
	t := min(MaxPeriods*p, math.MaxFloat64)
	for t > 0 && !(t/p <= MaxPeriods) {
		t = math.Nextafter(t, 0)
	}
	for next := math.Nextafter(t, math.Inf(1)); next/p <= MaxPeriods && !math.IsInf(next, 1); next = math.Nextafter(t, math.Inf(1)) {
		t = next
	}
	return t
}

func (s *sim) ctlPeriod() float64 {
	if p, ok := s.ctl.(interface{ Period() float64 }); ok && p.Period() > 0 {
		return p.Period()
	}
	return s.cfg.Period
}

// arrive routes a request: rejected when it can never fit a replica's KV
// cache, shed when Config.MaxBacklog requests are in the system already, to the
// ready replica with the fewest outstanding requests (ties: the lowest
// id), else held by the activator.
func (s *sim) arrive(now float64, q trace.Request) {
	s.res.Requests++
	s.arrivalsInSample++
	s.counts(now).arrivals++
	// The larger of what the request holds and what this pool reserves
	// for it: a prefill replica reserves prompt + 1, so a prompt filling
	// the cache with an output of 0 would wait for room forever.
	if n := max(int64(q.Prompt)+int64(q.Output), s.kvNeed(int64(q.Prompt), int64(q.Output))); n > s.sp.kvCap {
		s.res.Rejected++
		s.res.LongestRejected, s.res.KVCapacity = max(s.res.LongestRejected, n), s.sp.kvCap
		s.sample.Misses++
		return
	}
	if s.res.ShortestPrompt == 0 || q.Prompt < s.res.ShortestPrompt {
		s.res.ShortestPrompt = q.Prompt
	}
	if s.outstanding >= s.cfg.MaxBacklog {
		// Shed: unserved (Requests less the rest), never queued.
		if s.res.Shed == 0 {
			s.res.FirstShed = now
		}
		s.res.Shed++
		s.sample.Misses++
		if s.onShed != nil {
			s.onShed(q.Arrival)
		}
		return
	}
	s.outstanding++
	p := pending{arrival: q.Arrival, prompt: q.Prompt, output: q.Output}
	if r := s.leastLoaded(); r != nil {
		r.enqueue(s, now, p)
		return
	}
	s.held.push(p)
}

// firstToken records a request's first token at now.
func (s *sim) firstToken(now float64, p pending) {
	v := now - p.arrival + s.sp.overhead // the constant overhead shifts every request alike
	if s.onFirst != nil {
		s.onFirst(now, p)
	}
	if s.handoff != nil {
		s.prefillDone(now, v, p)
		return
	}
	if s.quiet {
		if v <= s.cfg.SLOTTFT {
			s.res.Met++
		} else {
			s.res.Late++
		}
		return
	}
	s.ttft.add(v)
	if s.cfg.Timeline {
		s.sampleTTFT.add(v)
	}
	s.ttftWin.add(now, v)
	s.counts(now).prefilled += float64(p.prompt)
	if v <= s.cfg.SLOTTFT {
		s.res.Met++
	} else {
		s.res.Late++
		s.sample.Misses++
	}
}

// complete records a finished request.
func (s *sim) complete(now float64, prompt, output int32) {
	if s.onDone != nil {
		s.onDone(now, output)
	}
	c := s.counts(now)
	c.generated += float64(output)
	c.finished++
	c.finishedIn += float64(prompt)
	c.finishedOut += float64(output)
	s.finishedEver++
	s.outstanding--
	if now <= s.end {
		s.res.OutputTokens += int64(output) // tokens of the accounted span only
	}
}

// addReplica starts a replica at now; it serves after the cold start.
func (s *sim) addReplica(now float64, warm bool) {
	r := &replica{id: s.nextID, added: now, heapIdx: -1, rtIdx: -1, cpuAt: now}
	s.nextID++
	s.reps = append(s.reps, r)
	if warm {
		s.becomeReady(r, now)
		return
	}
	s.reschedule(r, now+s.sp.cold)
}

func (s *sim) becomeReady(r *replica, now float64) {
	r.state = ready
	s.routeAdd(r)
	r.readyAt = now
	r.cpuAt, r.cpuSum = now, 0
	s.reschedule(r, math.Inf(1))
	for s.held.n > 0 {
		p := s.held.pop()
		s.leastLoaded().enqueue(s, now, p)
	}
}

// retire removes a replica that is gone (drained, or cancelled while
// starting) and adds its replica time.
func (s *sim) retire(r *replica, now float64) {
	s.reschedule(r, math.Inf(1))
	s.routeRemove(r)
	s.res.ReplicaSeconds += max(0, min(now, s.end)-r.added)
	for i, x := range s.reps {
		if x == r {
			s.reps = append(s.reps[:i], s.reps[i+1:]...)
			break
		}
	}
}

// spec is the replica count the Deployment asks for: starting + ready.
func (s *sim) spec() int {
	n := 0
	for _, r := range s.reps {
		if r.state != draining {
			n++
		}
	}
	return n
}

// scale applies a desired replica count at now: add starting replicas, or
// remove starting ones first (the newest), then the ready ones with the
// fewest outstanding requests (ties: the newest), which drain.
func (s *sim) scale(now float64, desired int) {
	cur := s.spec()
	if desired == cur {
		return
	}
	dir := 1
	if desired < cur {
		dir = -1
	}
	s.res.ScaleEvents++
	change := recommend.ScaleChange{At: time.Time{}.Add(time.Duration(now * float64(time.Second))), Direction: dir}
	if recommend.IsReversal(s.lastChange, change, recommend.ReversalWindow) {
		s.res.Reversals++
	}
	s.lastChange = change
	for i := cur; i < desired; i++ {
		s.addReplica(now, false)
	}
	for n := cur - desired; n > 0; n-- {
		var victim *replica
		for i := len(s.reps) - 1; i >= 0; i-- {
			if s.reps[i].state == starting {
				victim = s.reps[i]
				break
			}
		}
		if victim != nil {
			s.retire(victim, now)
			continue
		}
		for i := len(s.reps) - 1; i >= 0; i-- {
			r := s.reps[i]
			if r.state == ready && (victim == nil || r.outstanding() < victim.outstanding()) {
				victim = r
			}
		}
		victim.state = draining
		s.routeRemove(victim)
		if victim.outstanding() == 0 {
			s.retire(victim, now)
		}
	}
	s.res.Peak = max(s.res.Peak, desired)
}

// tick is a policy period: observe, decide, scale, and record the timeline.
func (s *sim) tick(now float64) {
	obs := s.observe(now)
	d := s.ctl.Decide(now, obs)
	d = min(max(d, 0), MaxReplicas)
	why, _ := s.ctl.(explainer)
	s.sampleTimeline(now, obs, d, why)
	s.scale(now, d)
	s.lastTick = now
}

// finish closes the accounting at the stop time.
func (s *sim) finish(stop float64) {
	for _, r := range s.reps {
		s.res.ReplicaSeconds += max(0, min(stop, s.end)-r.added)
	}
	s.res.Stop = stop
	s.res.Unserved = s.res.Requests - s.res.Met - s.res.Late - s.res.Rejected
	s.res.Duration = s.end
	s.res.TTFTP50 = s.ttft.quantile(0.5)
	s.res.TTFTP95 = s.ttft.quantile(0.95)
	if s.res.ShortestPrompt > 0 {
		s.res.IdleTTFT = s.sp.overhead + s.sp.m.PrefillTime(int(s.res.ShortestPrompt))
	}
}

// MaxReplicas is the most replicas a replay runs: a policy's decision is
// capped at it, and fixed:N, the min= and max= options, a follow file's
// counts and Config.Initial must be at most it (invalid input beyond). A
// replay steps every replica each period, so its time grows with the
// count: fixed:10000 replays the 25-minute reference trace in about a
// second (docs/simulate.md).
const MaxReplicas = 10000

// nextEvent is the time of the earliest pending replica event, +Inf when
// there is none.
func (s *sim) nextEvent() float64 {
	if len(s.heap) > 0 {
		return s.heap[s.evMin].next
	}
	return math.Inf(1)
}

// checkpointEvery is how many events the loops run between checkpoints:
// often enough to stop within milliseconds, rarely enough to cost nothing
// per event (the test stays inline at the call, the call does not).
const checkpointEvery = 1 << 16

// checkpoint checks ctx and reports progress (at t of end, in trace
// seconds); the loops call it once every checkpointEvery events.
func checkpoint(ctx context.Context, t, end float64, progress func(now, end float64)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if progress != nil {
		progress(t, end)
	}
	return nil
}
