package recommend

import (
	"math"
	"time"
)

// Guard is infscale's runaway guard (on by default; not part of the HPA).
//
// A ratio or backlog signal (queue, waiting, kv, cpu, ttft, queuewait) is
// measured on the replicas that serve now, but the HPA's arithmetic
// multiplies it by the replicas the workload has, including those still in
// their cold start. The signal cannot fall before they serve (a TTFT
// quantile trails its window, a backlog grows on the saturated replicas), so
// every period multiplies again: ttft:1 on a 91 s cold start reaches max.
// The guard counts the replicas earlier decisions asked for as coming
// capacity:
//
//	asked  = the previous output (infscale's spec.replicas, see Decide)
//	ready  = Current − Unready: the replicas that exist and are not starting
//	         (a missing or stuck replica is not capacity on its way)
//	coming = asked − ready: not created yet, or still starting
//
// While coming > 0 a guarded metric's recommendation above asked is held at
// asked: the capacity it would buy is on its way and the signal has not
// seen it yet. Once they all serve, the signal still remembers the time
// before: a backlog drains (Drain), a trailing quantile keeps the late first
// tokens of the requests that queued before (Settle). So the hold lasts
// Drain (queue, waiting, kv, cpu) or Settle (ttft, queuewait) more, counted
// from the last decision that saw replicas coming (they serve since then at
// the earliest). Scale-downs, the running signal, the demand signal and
// the lookahead are not held (they do not multiply a lagging ratio), nor a
// first decision (nothing was asked before).
type Guard struct {
	// Off turns the guard off: the HPA's arithmetic alone (hpa(...) in the
	// replay is always unguarded).
	Off bool
	// Settle is the hold of a trailing quantile (ttft, queuewait) after the
	// asked replicas serve, >= 0; 0 means DefaultSettle.
	Settle time.Duration
	// Drain is the hold of the other guarded signals after the asked
	// replicas serve, >= 0; 0 means DefaultDrain.
	Drain time.Duration
}

// DefaultSettle is Guard.Settle's default, 90 s: the replay's 60 s
// trailing TTFT window plus DefaultDrain (requests queued before the new
// replicas served still get their first token late, and the window
// remembers them). With a longer quantile window, settle should be that
// window + 30 s.
const DefaultSettle = 90 * time.Second

// DefaultDrain is Guard.Drain's default, 30 s: two 15 s periods, about
// the time a backlog of a few hundred requests on the reference replica
// takes to drain once the new replicas take the arrivals.
const DefaultDrain = 30 * time.Second

// Guarded reports whether a signal is held by the runaway guard: the ratio
// and backlog signals (all but running and demand).
func (s Signal) Guarded() bool { return s != SignalRunning && s != SignalDemand }

// Trailing reports whether a signal is a quantile over a trailing window
// (ttft, queuewait), held for Settle rather than Drain.
func (s Signal) Trailing() bool { return s == SignalTTFT || s == SignalQueueWait }

// guarding is the guard's verdict for one decision: which guarded metrics
// it holds at asked, and the words for it.
type guarding struct {
	asked           int
	other, trailing bool
	text            string
}

// holds reports whether the guard holds metric signal s.
func (g guarding) holds(s Signal) bool {
	return s.Guarded() && (g.other && !s.Trailing() || g.trailing && s.Trailing())
}

// guard updates the guard's state for this decision (st.ReadyAt) and says
// what it holds. st.Coming is what the previous output left coming
// (decideInto records it).
func (p *Policy) guard(st *State, obs Observation, asked int, now time.Time) guarding {
	g := guarding{asked: asked}
	if p.Guard != nil && p.Guard.Off || st.LastAt.IsZero() {
		return g
	}
	ready := present(obs)
	if coming := asked - ready; coming > 0 {
		g.other, g.trailing = true, true
		g.text = "guard: " + itoa(ready) + " of the " + itoa(asked) + " replicas asked for ready, " + itoa(coming) + " coming (" + itoa(ready) + " + " + itoa(coming) + " = " + itoa(asked) + "): the signal has not seen their capacity"
		return g
	}
	if st.Coming > 0 { // the previous output left replicas coming; now all serve
		st.ReadyAt = st.LastAt
	}
	if st.ReadyAt.IsZero() {
		return g
	}
	since := now.Sub(st.ReadyAt)
	settle, drain := p.guardSpans()
	g.other, g.trailing = since < drain, since < settle
	if g.other || g.trailing {
		g.text = "guard: the " + itoa(asked) + " replicas asked for serve since " + secs(since) + " at most (drain " + secs(drain) + ", settle " + secs(settle) + " for a trailing quantile): the signal has not seen their capacity yet"
	}
	return g
}

// present is the replicas that exist and are not starting: Current −
// Unready (reporting or missing).
func present(obs Observation) int {
	cur := max(obs.Current, 0)
	return cur - countPods(obs, cur).unready
}

func (p *Policy) guardSpans() (settle, drain time.Duration) {
	settle, drain = DefaultSettle, DefaultDrain
	if p.Guard != nil && p.Guard.Settle > 0 {
		settle = p.Guard.Settle
	}
	if p.Guard != nil && p.Guard.Drain > 0 {
		drain = p.Guard.Drain
	}
	return settle, drain
}

// latencyCap is the capacity-aware bound on a latency guard (ttft,
// queuewait) of a policy with the demand signal, a Capacity and a
// lookahead. A request is routed to a replica when it arrives and waits in
// that replica's engine: a replica added takes arrivals, never a queued
// request, so the queue can keep busy only the replicas that hold it, and
// a replica waits only when its batch is full. The guard asks for at most
// the replicas the arrivals need beside the replicas the queue occupies:
//
//	per     = Capacity.RequestSeconds(mean prompt, mean output)
//	batch   = min(MaxBatch, KVTokens / (prompt + output)), at least 1
//	work    = arrival rate × per                      replicas busy
//	backlog = waiting × per                           replica-seconds queued
//	holders = ceil(running / batch) when waiting > 0, else 0
//	cap     = max(current, ceil((work + min(backlog / target, holders)) / U))
//
// U is the demand signal's target. A latency quantile above its target
// while the fleet has the capacity for the arrivals and the queue (a
// burst that queues for seconds, then drains) asks for nothing more; nor
// does a backlog stuck on the replicas that held it when the fleet was
// short (the new replicas serve the arrivals, the old ones drain it at
// their own pace, whatever the count). ok is false (no bound) when the
// metric is not a latency guard, its recommendation is at or below the
// cap, or any input is unknown.
func (p *Policy) latencyCap(m Metric, r Raw, obs Observation, cur int) (int, string, bool) {
	if !m.Signal.Trailing() || !r.Valid || p.Capacity == nil || p.Lookahead <= 0 || r.Desired <= cur {
		return 0, "", false
	}
	u := 0.0
	for _, x := range p.Metrics {
		if x.Signal == SignalDemand {
			u = x.Target
			break
		}
	}
	rate, pr, out, w, run := obs.ArrivalRate, obs.MeanPrompt, obs.MeanOutput, obs.Waiting, obs.Running
	if u <= 0 || !known(rate) || !known(pr) || !known(out) || !known(w) || !known(run) || rate < 0 || w < 0 || run < 0 {
		return 0, "", false
	}
	per := p.Capacity.RequestSeconds(pr, out)
	batch := float64(p.Capacity.MaxBatch)
	if n := pr + out; n > 0 {
		batch = max(1, min(batch, math.Floor(p.Capacity.KVTokens/n)))
	}
	work := rate * per
	backlog := w * per
	holders := 0.0
	if w > 0 {
		holders = math.Ceil(run / batch)
	}
	need := (work + min(backlog/m.Target, holders)) / u
	n := max(cur, ceilReplicas(need))
	if r.Desired <= n {
		return 0, "", false
	}
	return n, "capacity: (" + num(work) + " busy + min(" + num(w) + " waiting × " + num(per) + " s / target " + num(m.Target) +
		" s, " + num(holders) + " replicas holding the queue: running " + num(run) + " / batch " + num(batch) + ")) / utilisation " + num(u) +
		" = " + countText(need) + ", current " + itoa(cur) + ": at most " + itoa(n), true
}
