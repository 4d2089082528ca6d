package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/trace"
)

// Prefill/decode (P/D) disaggregated serving, as llm-d runs it
// (llm-d-router docs/disaggregation.md): the EPP picks a decode pod, the
// decode pod's sidecar sends the prompt to a prefill pod with
// max_tokens=1, the prefill pod prefills it and holds its KV, the decode
// vLLM reads the KV over NIXL (RDMA between nodes, NVLink within one) and
// decodes. The replay runs two pools of the same replica on one clock:
//
//   - the prefill pool is the aggregated replay of the requests with one
//     output token (KV reserved for prompt + 1; the request leaves the pool
//     at its first token, which is the handoff);
//   - the transfer moves the prompt's KV in prompt × KV bytes per token /
//     link bandwidth seconds (no contention on the link);
//   - the decode pool admits a request when a batch slot and KV for prompt
//     + output are free (least loaded ready replica, FIFO per replica, as
//     the aggregated replay), and its first decode step, a step of the
//     batch with the new sequences' context added, gives the first token.
//
// So one request's TTFT = prefill queue + prefill + transfer + decode queue
// + first decode step (+ the replica's request overhead, once); its ITL is
// the decode pool's step time. Every request is disaggregated: the replay
// has no prefix cache, so every prompt is uncached and above llm-d's
// decider threshold (nonCachedTokens, 8 in its example config) for all
// but the shortest prompts, which the replay sends through prefill too.

// poolRole is a sim's part in a P/D pair.
type poolRole uint8

const (
	rolePool    poolRole = iota // aggregated: prefill and decode on one replica
	rolePrefill                 // prefill only: the request leaves at its first token
	roleDecode                  // decode only: the KV arrives, the first step gives the first token
)

// reserve is the KV a request holds on a replica of s's pool (kvNeed).
func (s *sim) reserve(p *pending) int64 { return s.kvNeed(int64(p.prompt), int64(p.output)) }

// kvNeed is the KV a request of prompt and output tokens holds on a
// replica of s's pool: prompt + output, or prompt + 1 on a prefill replica
// (max_tokens=1); arrive rejects one over the KV cache by it.
func (s *sim) kvNeed(prompt, output int64) int64 {
	if s.role == rolePrefill {
		return prompt + 1
	}
	return prompt + output
}

// prefillDone records a prefill pool's first token (the prefill pool's own
// TTFT, as its vLLM reports it) and hands the request to the transfer.
func (s *sim) prefillDone(now, v float64, p pending) {
	if !s.quiet {
		s.ttftWin.add(now, v)
		if s.cfg.Timeline {
			s.sampleTTFT.add(v)
		}
		s.counts(now).prefilled += float64(p.prompt)
	}
	s.handoff(now, p)
}

// startDecodeJoin admits what the queue can (their KV has arrived) and
// runs one decode step of the batch with them: the running sequences
// advance one token, the new ones get their first token at its end.
// startNext has integrated the CPU up to now.
func (r *replica) startDecodeJoin(s *sim, now float64) {
	var ctx int64
	for r.admissible(s) {
		p := r.waiting.pop()
		r.kvRes += s.reserve(&p)
		ctx += int64(p.prompt)
		r.pre = append(r.pre, p)
	}
	b := len(r.run)
	d := s.sp.curve(b+len(r.pre), r.context()+ctx).time(1)
	if b > 0 {
		r.phSteps = 1
	}
	r.ph = prefilling
	s.reschedule(r, now+d)
}

// addITL records n decode steps of batch sequences that took d seconds:
// n × batch tokens, each d / n after the one before.
func (s *sim) addITL(d float64, n int64, batch int) {
	if n <= 0 || batch <= 0 {
		return
	}
	if s.itl.counts == nil {
		s.itl.counts = make([]int64, histBuckets)
	}
	w := n * int64(batch)
	s.itl.counts[histIndex(d/float64(n))] += w
	s.itl.n += w
}

// PDResult is one policy's replay of a P/D pair.
type PDResult struct {
	// Policy is the policy string, Trace the trace's name.
	Policy, Trace string
	// Requests, Met, Late, Unserved and Rejected count the pair's requests
	// as Result does, against the TTFT SLO on the whole path.
	Requests, Met, Late, Unserved, Rejected int64
	// TTFTP50 and TTFTP95 are over the whole path (prefill queue to the
	// first decode step), seconds; ITLP95 is the decode steps' p95 over
	// output tokens, seconds; NaN when none.
	TTFTP50, TTFTP95, ITLP95 float64
	// Prefill and Decode are the pools: ReplicaSeconds, Peak, ScaleEvents,
	// Reversals, Timeline, and their own TTFT (the prefill pool's is its
	// queue and prefill, as its vLLM reports it).
	Prefill, Decode Result
	// LowerBound is `optimal`'s certified bound on the pair (nil for every
	// other policy).
	LowerBound *PDBound
	// ShortestPrompt is the shortest prompt, in tokens, of the requests
	// that fit a prefill replica (0 when none does). IdleTTFT is its TTFT
	// on the whole path with both pools idle, in seconds: the request
	// overhead, its prefill, its KV transfer and a decode step of it alone
	// (0 when none fits). No request has a shorter TTFT under any policy
	// (SLOWarning).
	ShortestPrompt int32
	IdleTTFT       float64
}

// SLOWarning is SLOWarning of r's trace, shortest prompt and IdleTTFT
// through the pair's idle pools.
func (r PDResult) SLOWarning(slo float64) string {
	return SLOWarning(r.Trace, slo, r.ShortestPrompt, r.IdleTTFT, true)
}

// Misses counts late, unserved and rejected requests.
func (r PDResult) Misses() int64 { return r.Late + r.Unserved + r.Rejected }

// ShedWarnings are the pools' ShedWarning (prefill first), each share
// of the pair's requests; none when neither pool reached MaxBacklog.
func (r PDResult) ShedWarnings() []string {
	var out []string
	for _, p := range []Result{r.Prefill, r.Decode} {
		p.Requests = r.Requests // the share is of the trace's, not of the pool's arrivals
		if w := p.ShedWarning(); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// MissPct is Misses as a percentage of Requests.
func (r PDResult) MissPct() float64 {
	if r.Requests == 0 {
		return 0
	}
	return 100 * float64(r.Misses()) / float64(r.Requests)
}

// ReplicaSeconds is both pools' replica time.
func (r PDResult) ReplicaSeconds() float64 {
	return r.Prefill.ReplicaSeconds + r.Decode.ReplicaSeconds
}

// PDConfig is the pair's setting beside Config.
type PDConfig struct {
	// KVLinkBytesPerSecond is the bandwidth that moves a prompt's KV from
	// its prefill replica to its decode replica, bytes/s (> 0).
	KVLinkBytesPerSecond float64
}

// Validate reports a KV link that is not a finite bandwidth > 0 bytes/s.
func (pd PDConfig) Validate() error {
	if !(pd.KVLinkBytesPerSecond > 0) || math.IsInf(pd.KVLinkBytesPerSecond, 0) {
		return fmt.Errorf("KV link %g bytes/s: want a finite bandwidth > 0", pd.KVLinkBytesPerSecond)
	}
	return nil
}

// ErrPDSLO reports a P/D replay whose TTFT SLO leaves the prefill pool
// nothing: the transfer and the first decode step alone take it.
var ErrPDSLO = errors.New("the SLO leaves the prefill pool no time")

// kvBytes is implemented by a Model that knows its KV bytes per token
// (*replica.Replica).
type kvBytes interface{ KVBytesPerToken() float64 }

// pdEnv is what a PD policy builds its controller from: each pool's env
// (the decode pool's speed reads its demand on the decode role's
// capacity), the transfer time per token and the TTFT allowance left to
// the decode side.
type pdEnv struct {
	pre, dec  env
	perToken  float64 // KV transfer seconds per prompt token
	allowance float64 // transfer + first decode step the prefill pool leaves of the SLO
	src       trace.Source
}

// pdAllowance is the part of the TTFT SLO the prefill pool leaves to the
// transfer and the first decode step: a MaxBatchedTokens prompt's KV over
// the link plus the slowest first step (a full batch at full KV). For the
// reference replica over 25 GB/s: 8192 × 131,072 B / 25e9 = 42.9 ms plus
// StepTime(64, 396,728).
func pdAllowance(cfg Config, sp *speed, perToken float64) float64 {
	return float64(cfg.MaxBatchedTokens)*perToken + sp.m.StepTime(sp.maxBatch, sp.kvCap)
}

func newPDEnv(src trace.Source, cfg Config, pd PDConfig) (pdEnv, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return pdEnv{}, err
	}
	if err := pd.Validate(); err != nil {
		return pdEnv{}, err
	}
	kb, ok := cfg.Model.(kvBytes)
	if !ok || !(kb.KVBytesPerToken() > 0) {
		return pdEnv{}, errors.New("replay: a P/D replay needs a replica model with its KV bytes per token")
	}
	cfg.duration = src.Duration
	sp, err := newSpeed(cfg.Model)
	if err != nil {
		return pdEnv{}, err
	}
	dsp := *sp
	dsp.role = roleDecode
	e := pdEnv{perToken: kb.KVBytesPerToken() / pd.KVLinkBytesPerSecond, src: src}
	e.allowance = pdAllowance(cfg, sp, e.perToken)
	if !(e.allowance < cfg.SLOTTFT) {
		return pdEnv{}, fmt.Errorf("%w: SLO TTFT %g s, the KV transfer of a prompt of %d tokens (the max batched tokens) and a full decode step take %.3f s; give a longer SLO or a faster KV link", ErrPDSLO, cfg.SLOTTFT, cfg.MaxBatchedTokens, e.allowance)
	}
	e.pre = env{cfg: cfg, sp: sp, src: src}
	e.dec = env{cfg: cfg, sp: &dsp, src: src}
	return e, nil
}

// pdController decides both pools' replicas from both observations.
type pdController interface {
	decide(now float64, pre, dec recommend.Observation) (int, int)
}

// pdExplainer is a pdController that says why it decided each pool's
// last count (each nil when that pool's controller does not say).
type pdExplainer interface {
	explainers() (pre, dec explainer)
}

// pdSim is one replay of a pair: two pools on one clock, the transfers
// between them.
type pdSim struct {
	cfg      Config
	pre, dec *sim
	ctl      pdController
	rd       trace.Reader
	xfer     xferHeap
	perToken float64
	end      float64
	lastTick float64
	onTick   func(now float64) // planning hook (pd_optimal.go)
}

// xfer is a request whose KV is on the link until at.
type xfer struct {
	at float64
	p  pending
}

// xferHeap is a min-heap of transfers by arrival time (ties: FIFO by seq).
type xferHeap struct {
	a   []xfer
	seq []int64
	n   int64
}

func (h *xferHeap) less(i, j int) bool {
	return h.a[i].at < h.a[j].at || (h.a[i].at == h.a[j].at && h.seq[i] < h.seq[j])
}

func (h *xferHeap) swap(i, j int) {
	h.a[i], h.a[j] = h.a[j], h.a[i]
	h.seq[i], h.seq[j] = h.seq[j], h.seq[i]
}

func (h *xferHeap) push(x xfer) {
	h.a = append(h.a, x)
	h.seq = append(h.seq, h.n)
	h.n++
	for i := len(h.a) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.swap(i, p)
		i = p
	}
}

func (h *xferHeap) pop() xfer {
	top := h.a[0]
	n := len(h.a) - 1
	h.swap(0, n)
	h.a, h.seq = h.a[:n], h.seq[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h.swap(i, m)
		i = m
	}
	return top
}

func (h *xferHeap) next() float64 {
	if len(h.a) == 0 {
		return math.Inf(1)
	}
	return h.a[0].at
}

// newPoolSim is one pool of a pair (no reader or controller of its own).
func newPoolSim(e env, role poolRole, name string) *sim {
	cfg := e.cfg
	s := &sim{cfg: cfg, sp: e.sp, end: math.Inf(1), role: role, ttftWin: newWindow(ttftBuckets, cfg.TTFTWindow, cfg.Period),
		queueWin: newWindow(queueBuckets, cfg.TTFTWindow, cfg.Period), demand: newDemandWindow(cfg.RateWindow, cfg.Period)}
	if e.src.Duration > 0 {
		s.end = e.src.Duration
	}
	s.res.Policy, s.res.Trace, s.res.Backlog = name, e.src.Name, cfg.MaxBacklog
	return s
}

func newPDSim(e pdEnv, ctl pdController, name string, initPre, initDec int) (*pdSim, error) {
	rd, err := openAhead(e.src)
	if err != nil {
		return nil, err
	}
	ps := &pdSim{cfg: e.pre.cfg, ctl: ctl, rd: rd, perToken: e.perToken, end: math.Inf(1),
		pre: newPoolSim(e.pre, rolePrefill, name), dec: newPoolSim(e.dec, roleDecode, name)}
	if e.src.Duration > 0 {
		ps.end = e.src.Duration
	}
	ps.pre.handoff = func(now float64, p pending) {
		ps.xfer.push(xfer{at: now + float64(p.prompt)*ps.perToken, p: p})
	}
	for range initPre {
		ps.pre.addReplica(0, true)
	}
	for range initDec {
		ps.dec.addReplica(0, true)
	}
	ps.pre.res.Peak, ps.dec.res.Peak = initPre, initDec
	return ps, nil
}

// run is the pair's event loop. Events at one time go: prefill replica
// events, decode replica events, KV arrivals, the trace's arrival, the
// tick.
func (ps *pdSim) run(ctx context.Context) error {
	pre, dec := ps.pre, ps.dec
	next, err := pre.first(ps.rd)
	if err != nil {
		return err
	}
	have := true
	tick := ps.cfg.Period
	var events uint64
	lastArrival := 0.0
	for {
		tp, td, tx := pre.nextEvent(), dec.nextEvent(), ps.xfer.next()
		ta := math.Inf(1)
		if have {
			ta = next.Arrival
		}
		t := min(tp, td, tx, ta, tick)
		if !have && pre.outstanding == 0 && dec.outstanding == 0 && len(ps.xfer.a) == 0 && t >= ps.end {
			break
		}
		if t > ps.end+ps.cfg.Drain {
			break
		}
		events++
		if events%checkpointEvery == 0 {
			if err := checkpoint(ctx, t, ps.end, ps.cfg.Progress); err != nil {
				return err
			}
		}
		switch {
		case tp == t:
			pre.replicaEvent(t)
		case td == t:
			dec.replicaEvent(t)
		case tx == t:
			x := ps.xfer.pop()
			dec.arrive(t, trace.Request{Arrival: x.p.arrival, Prompt: x.p.prompt, Output: x.p.output})
		case ta == t:
			pre.arrive(t, next)
			lastArrival = t
			next, err = ps.rd.Next()
			if err == io.EOF {
				have = false
				ps.end = max(ps.cfg.duration, lastArrival)
				pre.end, dec.end = ps.end, ps.end
			} else if err != nil {
				return err
			} else if err := pre.checkSpan(next.Arrival); err != nil {
				return err
			}
		default:
			ps.tick(tick)
			tick += ps.cfg.Period
		}
	}
	stop := min(ps.end+ps.cfg.Drain, max(ps.lastTick, ps.end))
	pre.finish(stop)
	dec.finish(stop)
	return nil
}

func (ps *pdSim) tick(now float64) {
	if ps.onTick != nil {
		ps.onTick(now)
	}
	op, od := ps.pre.observe(now), ps.dec.observe(now)
	np, nd := ps.ctl.decide(now, op, od)
	np, nd = min(max(np, 0), MaxReplicas), min(max(nd, 0), MaxReplicas)
	var whyP, whyD explainer
	if e, ok := ps.ctl.(pdExplainer); ok {
		whyP, whyD = e.explainers()
	}
	ps.pre.sampleTimeline(now, op, np, whyP)
	ps.dec.sampleTimeline(now, od, nd, whyD)
	ps.pre.scale(now, np)
	ps.dec.scale(now, nd)
	ps.pre.lastTick, ps.dec.lastTick, ps.lastTick = now, now, now
}

// result assembles the pair's result after run.
func (ps *pdSim) result(name, traceName string) PDResult {
	pre, dec := ps.pre, ps.dec
	r := PDResult{Policy: name, Trace: traceName, Prefill: pre.res, Decode: dec.res}
	r.Requests, r.Rejected = pre.res.Requests, pre.res.Rejected
	r.Met, r.Late = dec.res.Met, dec.res.Late
	r.Unserved = r.Requests - r.Met - r.Late - r.Rejected
	r.TTFTP50, r.TTFTP95 = dec.ttft.quantile(0.5), dec.ttft.quantile(0.95)
	r.ITLP95 = dec.itl.quantile(0.95)
	r.Prefill.Policy, r.Decode.Policy = name+" (prefill)", name+" (decode)"
	if p := pre.res.ShortestPrompt; p > 0 {
		// Prefill alone (with the overhead), the KV over the link, then
		// the decode step of a batch of one with the prompt's context.
		r.ShortestPrompt = p
		r.IdleTTFT = pre.res.IdleTTFT + float64(p)*ps.perToken + dec.sp.curve(1, int64(p)).time(1)
	}
	return r
}

// RunPD replays src through a P/D pair of cfg.Model replicas under pol.
// Deterministic. Errors: an invalid Config or PDConfig (a link not > 0, a
// model without KV bytes per token, an SLO shorter than the transfer and
// a decode step), the policy failing to build, a trace error, or ctx's.
func RunPD(ctx context.Context, src trace.Source, pol PDPolicy, cfg Config, pd PDConfig) (PDResult, error) {
	cfg.ctx = ctx
	e, err := newPDEnv(src, cfg, pd)
	if err != nil {
		return PDResult{}, err
	}
	ctl, ip, id, err := pol.build(e)
	if err != nil {
		return PDResult{}, fmt.Errorf("policy %s: %w", pol.Name, err)
	}
	if cfg.Initial > 0 {
		ip, id = cfg.Initial, cfg.Initial
	}
	if w, ok := ctl.(interface {
		warm(p, d int, epoch time.Time)
	}); ok {
		w.warm(ip, id, e.pre.cfg.Epoch)
	}
	ps, err := newPDSim(e, ctl, pol.Name, ip, id)
	if err != nil {
		return PDResult{}, err
	}
	defer ps.rd.Close()
	if err := ps.run(ctx); err != nil {
		if errors.Is(err, trace.ErrEmpty) {
			return PDResult{}, fmt.Errorf("%s: %w", src.Name, err)
		}
		return PDResult{}, err
	}
	r := ps.result(pol.Name, src.Name)
	if b, ok := ctl.(interface{ pdBound() *PDBound }); ok {
		r.LowerBound = b.pdBound()
	}
	return r, nil
}
