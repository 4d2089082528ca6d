package recommend

import (
	"math"
	"time"
)

// Guard is infscale's runaway guard (on by default; not part of the HPA).
// A ratio or backlog signal is measured on the replicas that serve, while
// the HPA multiplies it by all of them, those still starting included, so
// each period multiplies again until they serve. While replicas asked for
// earlier are coming (asked − ready > 0), and for Drain (backlogs) or
// Settle (trailing quantiles) after they all serve, a guarded metric's
// recommendation above the replicas asked for (or present, when more) is
// held there. The running
// and demand signals, scale-downs, the lookahead and a first decision are
// not held. docs/recommend.md ("The runaway guard") works an example.
type Guard struct {
	// Off turns the guard off (hpa(...) in the replay is always
	// unguarded). The latency guards' bound by capacity (latencyCap) is
	// not this guard and still applies.
	Off bool
	// Settle is the hold of a trailing quantile (ttft, queuewait) after the
	// asked replicas serve, >= 0; 0 means DefaultSettle.
	Settle time.Duration
	// Drain is the hold of the other guarded signals after the asked
	// replicas serve, >= 0; 0 means DefaultDrain.
	Drain time.Duration
}

// DefaultSettle is Guard.Settle's default, 90 s: the replay's 60 s
// trailing TTFT window plus DefaultDrain (a longer window wants its length
// + 30 s).
const DefaultSettle = 90 * time.Second

// DefaultDrain is Guard.Drain's default, 30 s: two 15 s periods, about
// what a backlog of a few hundred requests takes to drain on the reference
// replica once new replicas take the arrivals.
const DefaultDrain = 30 * time.Second

// Guarded reports whether a signal is held by the runaway guard: the ratio
// and backlog signals (all but running and demand).
func (s Signal) Guarded() bool { return s != SignalRunning && s != SignalDemand }

// Trailing reports whether a signal is a quantile over a trailing window
// (ttft, queuewait), held for Settle rather than Drain.
func (s Signal) Trailing() bool { return s == SignalTTFT || s == SignalQueueWait }

// guarding is the guard's verdict for one decision: which guarded metrics
// it holds, at what, and the words for it.
type guarding struct {
	// at is the count a held metric asking more is held at: max(base,
	// current), the replicas infscale asked for or, with the consumer
	// ahead of them, those present (never a scale-down).
	at              int
	base            int // infscale's previous output
	other, trailing bool
	text            string
	// heldOther and heldTrailing end a held step's text: how much longer
	// the hold of that step's kind of metric lasts (drain, settle).
	heldOther, heldTrailing string
}

// held is the end of a held step's text for metric s: its own hold. One
// text for both ("held 15s more (1m15s for a trailing quantile)") told a
// ttft step it was held 15 s more when it was held 1m15s.
func (g guarding) held(s Signal) string {
	if s.Trailing() {
		return g.heldTrailing
	}
	return g.heldOther
}

// holdText is the words after a held metric's count: what at is when the
// consumer is ahead of base.
func (g guarding) holdText() string {
	if g.at > g.base {
		return " (the " + itoa(g.at) + " present: the consumer is ahead of the " + itoa(g.base) + " asked for)"
	}
	return ""
}

// holds reports whether the guard holds metric signal s.
func (g guarding) holds(s Signal) bool {
	return s.Guarded() && (g.other && !s.Trailing() || g.trailing && s.Trailing())
}

// guard updates the guard's state for this decision (st.ReadyAt) and says
// what it holds. asked is infscale's previous output: its replicas coming
// (asked − ready) or serving for less than Drain / Settle start a hold.
// A consumer ahead of it (someone else's scale-up, a scale-down not
// applied yet) starts none by itself: replicas infscale did not ask for
// were not sized on the signal (a wake from zero by another trigger is 1
// replica for any backlog). A held metric is held at max(asked, current),
// so the guard limits a scale-up and never makes a scale-down. st.Coming
// is what the previous output left coming (decideInto records it). Its
// text is built only when explain is set (not for a quiet decision:
// simulate and tune drop it).
func (p *Policy) guard(st *State, obs Observation, asked int, now time.Time, explain bool) guarding {
	g := guarding{at: max(asked, obs.Current), base: asked}
	if p.Guard != nil && p.Guard.Off || st.LastAt.IsZero() {
		return g
	}
	ready := present(obs)
	settle, drain := p.guardSpans()
	if coming := asked - ready; coming > 0 {
		g.other, g.trailing = true, true
		if !explain {
			return g
		}
		g.text = "guard: " + itoa(ready) + " of the " + itoa(asked) + " replicas asked for ready, " + itoa(coming) + " coming (" + itoa(ready) + " + " + itoa(coming) + " = " + itoa(asked) + "): the signal has not seen their capacity; the runaway guard holds until they serve, then " + secs(drain) + " more (" + secs(settle) + " for a trailing quantile)"
		return g
	}
	if st.Coming > 0 { // the previous output left replicas coming; now all serve
		st.ReadyAt = st.LastAt
	}
	if st.ReadyAt.IsZero() {
		return g
	}
	since := now.Sub(st.ReadyAt)
	g.other, g.trailing = since < drain, since < settle
	if (g.other || g.trailing) && explain {
		notRead := ""
		if m := countPods(obs, max(obs.Current, 0)).missing; m > 0 {
			// Present but not read (a failed scrape, a page answering 503
			// while it starts): the guard counts them as serving, so say so
			// beside the errors that name them.
			notRead = ", " + itoa(m) + " of them not read this cycle (counted as serving, not as coming)"
		}
		g.text = "guard: the " + itoa(asked) + " replicas asked for serve since " + age(since) + " at most" + notRead + " (drain " + secs(drain) + ", settle " + secs(settle) + " for a trailing quantile): the signal has not seen their capacity yet"
		g.heldOther = "; held " + age(drain-since) + " more"
		g.heldTrailing = "; a trailing quantile is held " + age(settle-since) + " more"
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

// latencyCap bounds a latency guard (ttft, queuewait) of a policy with
// the demand signal, a Capacity and a lookahead by what the capacity needs
// for the arrivals and the queue: ceil((rate × per + min(waiting × per /
// target, holders)) / U), U the demand target; when the guard asks for
// more than the current count, at least the current count unless the
// queue sits on fewer replicas than are ready; when it asks for fewer (its
// latency below target, outside the tolerance), at least 1. A request waits
// on the replica it was routed to at arrival, so a queue keeps busy only
// the replicas that hold it, those with a full batch: max(1, floor(running
// / batch)), or Observation.Queued when the source counted them; the
// others can neither take it nor hurry it. While replicas are starting,
// requests wait and the arrivals no longer rise (rising), the floor is the
// ready count, and the arrivals are counted at the highest rate the demand
// signal read within the lookahead (st.Arrivals): a starting replica takes
// only arrivals, and was asked for within that span. ok is false (no bound) when m is not a latency guard,
// its recommendation is within the cap, or an input is unknown.
// docs/recommend.md ("Latency guards sized by capacity") works it.
func (p *Policy) latencyCap(m Metric, r Raw, obs Observation, cur int, st *State, now time.Time) (int, string, bool) {
	// below: the latency under its target, outside the tolerance (the
	// ratio's ceiling can still ask for the current count: ceil(0.7125 ×
	// 3) = 3).
	below := r.Valid && r.Ratio < 1-p.tol.Down && r.Desired <= cur
	if !m.Signal.Trailing() || !r.Valid || p.Capacity == nil || p.Lookahead <= 0 || (r.Desired <= cur && !below) {
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
	per := p.Capacity.RequestSecondsCached(pr, out, obs.PrefixHit)
	batch := float64(p.Capacity.MaxBatch)
	if n := pr + out; n > 0 {
		batch = max(1, min(batch, math.Floor(p.Capacity.KVTokens/n)))
	}
	work := rate * per
	backlog := w * per
	holders, counted := 0.0, "none waiting" // not floor(running / batch): no queue to hold
	if w > 0 {
		holders, counted = max(1, math.Floor(run/batch)), "running "+num(run)+" / batch "+num(batch)+", rounded down"
		if run < batch {
			// floor(run / batch) is 0, but the queue sits on some replica.
			counted += ", at least 1"
		}
		if obs.Queued > 0 {
			holders, counted = float64(obs.Queued), "replicas with a request waiting"
		}
	}
	word := " replicas"
	if holders == 1 {
		word = " replica"
	}
	need := (work + min(backlog/m.Target, holders)) / u
	// A queue on fewer replicas than serve is one the others cannot take:
	// the current count holds it no better than the capacity's need.
	n, floor := max(cur, ceilReplicas(need)), "current "+itoa(cur)
	busy := num(work) + " busy"
	switch ready := present(obs); {
	case below:
		// Below its target: a latency under target says the fleet is not
		// short, not how many fewer serve (a queue's wait stays near 0 at
		// any count short of saturation, and a quantile in a histogram's
		// lowest bucket reads as most of its bound: vLLM's queue time, 0.3
		// s, reads 0.285 at any wait); the capacity sizes the scale-down.
		n, floor = max(1, ceilReplicas(need)), "below its target the latency does not size a scale-down"
	case w > 0 && holders < float64(ready):
		n, floor = max(1, ceilReplicas(need)), "the queue on "+num(holders)+" of the "+itoa(ready)+" ready replicas"
	case w > 0 && ready < cur && !p.rising(st, obs, now):
		// The starting replicas will take arrivals only: those the highest
		// rate of the lookahead brings. Without a queue (a latency from
		// the prefill itself, long prompts), or while the arrivals still
		// rise (a ramp they were asked for), the current count stays.
		peak := rate
		for _, a := range st.Arrivals {
			if !a.At.Before(now.Add(-p.Lookahead)) {
				peak = max(peak, a.Demand)
			}
		}
		if peak > rate {
			work = peak * per
			need = (work + min(backlog/m.Target, holders)) / u
			busy = num(work) + " busy at the lookahead's highest rate " + num(peak) + " req/s"
		}
		n, floor = max(ready, ceilReplicas(need)), "at least the "+itoa(ready)+" ready ("+itoa(cur-ready)+" starting take arrivals only)"
	case w > 0 && ready < cur:
		// rising: the floor stays the current count; say why.
		floor += " (" + itoa(cur-ready) + " starting, asked for arrivals still rising)"
	}
	if r.Desired <= n {
		return 0, "", false
	}
	return n, "capacity: (" + busy + " + min(" + num(w) + " waiting × " + num(per) + " s / target " + num(m.Target) +
		" s, " + num(holders) + word + " holding the queue: " + counted + ")) / utilisation " + num(u) +
		" = " + countText(need) + ", " + floor + ": at most " + itoa(n), true
}

// rising reports whether the arrival rate still rises: the demand signal's
// trend (arrivalFit over st.Arrivals) above RampBound standard errors, the
// quantile at which the ramp bound projects a slope. A ramp whose trend
// reads as noise for a decision (the 4-standard-error gate) is still
// rising at that quantile, and the replicas asked for it stay.
func (p *Policy) rising(st *State, obs Observation, now time.Time) bool {
	f := arrivalFit(st.Arrivals, obs.ArrivalWindow, now)
	return f.ok && f.slope > p.RampBound*f.se
}
