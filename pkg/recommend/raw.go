package recommend

import "math"

// known reports whether a signal value is usable: finite and >= 0 (every
// signal is a count, a fraction, a percentage or a duration; a negative one
// is garbage, and garbage is unknown, never a decision).
func known(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x >= 0 }

// orZero reads an optional count (Held): unknown counts as 0.
func orZero(x float64) float64 {
	if known(x) && x > 0 {
		return x
	}
	return 0
}

// total is an additive metric's total over replicas, in requests, and the
// words for it. queue is running + waiting + held. At zero replicas no
// server exists, so running and waiting are 0 whatever the source says, and
// every additive metric's total is the held requests (what the first
// replica will have to serve), unknown when held is. Unknown held counts
// as 0 with replicas (nothing holds requests). ok is false when a needed
// signal is unknown. The words are "" unless ex (explain) is set.
func total(s Signal, obs Observation, cur int, ex bool) (v float64, detail string, ok bool) {
	held := orZero(obs.Held)
	if cur == 0 && !known(obs.Held) {
		return math.NaN(), " (at zero replicas: held unknown)", false
	}
	if cur == 0 {
		if !ex {
			return held, "", true
		}
		return held, " (at zero replicas: held " + num(held) + ")", true
	}
	switch s {
	case SignalQueue:
		if !known(obs.Running) || !known(obs.Waiting) {
			if !ex {
				return math.NaN(), "", false
			}
			return math.NaN(), " (running " + num(obs.Running) + ", waiting " + num(obs.Waiting) + ")", false
		}
		v = obs.Running + obs.Waiting + held
		if !ex {
			return v, "", true
		}
		detail = " (running " + num(obs.Running) + " + waiting " + num(obs.Waiting)
		if held > 0 {
			detail += " + held " + num(held)
		}
		return v, detail + ")", true
	case SignalWaiting:
		return obs.Waiting, "", known(obs.Waiting)
	case SignalRunning:
		return obs.Running, "", known(obs.Running)
	}
	return math.NaN(), "", false
}

// podCounts splits the current replicas as the HPA's groupPods does: ready
// (reporting), unready (starting, Observation.Unready) and missing (neither
// reporting nor known to be unready: a failed scrape).
type podCounts struct{ ready, unready, missing int }

func countPods(obs Observation, cur int) podCounts {
	u := min(max(obs.Unready, 0), cur)
	n := obs.Reporting
	if n <= 0 {
		n = cur - u
	}
	return podCounts{ready: n, unready: u, missing: max(0, cur-u-n)}
}

// rawFor computes one metric's recommendation with the HPA's arithmetic,
// then its tolerance, and says how in words. It returns the Raw, the reason
// (metric, tolerance, or no-data when the signal is unknown) and the text.
//
// Additive signals (queue, waiting, running) follow the HPA's External
// AverageValue metric (replica_calculator.go GetExternalPerPodMetricReplicas):
// ratio = total/(target × current); inside the tolerance keep current, else
// ceil(total/target). At current 0 there is no tolerance and the result is
// ceil(total/target) (getUsageRatioReplicaCount at zero).
//
// Utilisation signals (kv, cpu) follow GetResourceReplicas: ratio =
// mean/target over the n reporting replicas; inside the tolerance keep
// current, else ceil(ratio × n). They are unknown at zero replicas.
//
// ttft and queuewait follow the Object Value metric: ratio = quantile/target;
// inside the tolerance keep current, else ceil(ratio × current).
//
// When some current replicas do not report, the HPA's unready and
// missing-pods rules (calcPlainMetricReplicas, GetResourceReplicas) apply
// to the additive and utilisation signals, see podsRule. Unless ex
// (explain) is set, the text is left out ("" or part of it).
func rawFor(m Metric, obs Observation, cur int, tol Tolerance, ex bool) (Raw, Reason, string) {
	r := Raw{Signal: m.Signal, Target: m.Target, Value: math.NaN(), Ratio: math.NaN(), Replicas: cur, Desired: cur}
	name := m.Signal.String()
	pc := countPods(obs, cur)
	switch {
	case m.Signal.Additive():
		v, detail, ok := total(m.Signal, obs, cur, ex)
		r.Value = v
		if !ok {
			return r, ReasonNoData, name + " unknown" + detail + ": no recommendation from it"
		}
		r.Valid = true
		r.Replicas = ceilReplicas(v / m.Target)
		text := ""
		if ex {
			text = name + " " + num(v) + " / target " + num(m.Target) + " per replica = " + countText(v/m.Target) + detail
		}
		if cur == 0 {
			r.Ratio = v / m.Target
			r.Desired = r.Replicas
			return r, ReasonMetric, text + "; from zero replicas there is no tolerance"
		}
		if pc.ready > 0 && (pc.unready > 0 || pc.missing > 0) {
			return podsRule(r, v/float64(pc.ready)/m.Target, pc, cur, m.Target, tol, text, ex)
		}
		r.Ratio = perReplica(v, m.Target, cur)
		if ex {
			text += "; ratio " + num(v) + " / (" + num(m.Target) + " × " + itoa(cur) + ") = " + tol.ratioText(r.Ratio)
		}
		return applyTolerance(r, cur, tol, text, ex)

	case m.Signal.Utilization():
		v := obs.KV
		if m.Signal == SignalCPU {
			v = obs.CPU
		}
		r.Value = v
		if !known(v) || cur == 0 || pc.ready == 0 {
			return r, ReasonNoData, name + " unknown (no reporting replica): no recommendation from it"
		}
		r.Valid = true
		u := v / m.Target
		r.Replicas = ceilReplicas(u * float64(pc.ready))
		text := ""
		if ex {
			text = name + " mean " + num(v) + " / target " + num(m.Target) + " = ratio " + tol.ratioText(u) + " × " + itoa(pc.ready) + " reporting = " + countText(u*float64(pc.ready))
		}
		if pc.unready > 0 || pc.missing > 0 {
			full := 1.0 // a missing replica's KV cache counts as full on a scale-down
			if m.Signal == SignalCPU {
				full = 100
			}
			return podsRule(r, u, pc, cur, math.Max(full, m.Target), tol, text, ex)
		}
		r.Ratio = u
		return applyTolerance(r, cur, tol, text, ex)

	default: // ttft, queuewait
		v := obs.TTFT
		if m.Signal == SignalQueueWait {
			v = obs.QueueTime
		}
		r.Value = v
		if cur > 0 && TTFTAbstains(obs) {
			r.Abstained = true
			return r, 0, name + " abstains: no request finished in its window and none is running or waiting (known idleness, not missing data)"
		}
		if !known(v) || cur == 0 {
			return r, ReasonNoData, name + " unknown: no recommendation from it"
		}
		r.Valid = true
		r.Ratio = v / m.Target
		r.Replicas = ceilReplicas(r.Ratio * float64(cur))
		text := ""
		if ex {
			text = name + " " + num(v) + "s / target " + num(m.Target) + "s = ratio " + tol.ratioText(r.Ratio) + " × " + itoa(cur) + " current = " + countText(r.Ratio*float64(cur))
		}
		return applyTolerance(r, cur, tol, text, ex)
	}
}

// applyTolerance keeps current when r.Ratio is inside the band; the text
// says so when ex (explain) is set.
func applyTolerance(r Raw, cur int, tol Tolerance, text string, ex bool) (Raw, Reason, string) {
	if tol.within(r.Ratio) {
		r.Desired = cur
		if !ex {
			return r, ReasonTolerance, text
		}
		return r, ReasonTolerance, text + " within tolerance " + tol.band() + ": keep " + itoa(cur)
	}
	r.Desired = r.Replicas
	if !ex {
		return r, ReasonMetric, text
	}
	return r, ReasonMetric, text + " outside tolerance " + tol.band() + ": " + itoa(r.Replicas)
}

// podsRule is the HPA's rule for replicas that did not report
// (GetResourceReplicas, calcPlainMetricReplicas), line for line. usage is
// the per-replica usage ratio over the ready (reporting) replicas; fill is
// what a missing replica is assumed to carry on a scale-down, in target
// units (the target itself for additive metrics; max(100%, target) for cpu;
// a full cache for kv).
//
//   - no missing replica, and not (unready ones while scaling up): the
//     unready are left out: tolerance on usage, else ceil(usage × ready);
//   - missing replicas count at fill when usage < 1 (scale-down), at 0 when
//     usage > 1; unready ones count at 0 when usage > 1;
//   - the usage is recomputed over the replicas counted; inside the
//     tolerance, or across 1 from the first usage, keep current; else
//     ceil(new usage × counted), unless that moves against the direction.
func podsRule(r Raw, usage float64, pc podCounts, cur int, fill float64, tol Tolerance, text string, ex bool) (Raw, Reason, string) {
	scaleUpWithUnready := pc.unready > 0 && usage > 1
	if !scaleUpWithUnready && pc.missing == 0 {
		r.Ratio = usage
		r.Replicas = ceilReplicas(usage * float64(pc.ready))
		if ex {
			text += "; " + itoa(pc.unready) + " unready replica(s) left out: ratio " + tol.ratioText(usage) + " over " + itoa(pc.ready) + " ready = " + countText(usage*float64(pc.ready))
		}
		return applyTolerance(r, cur, tol, text, ex)
	}
	sum, count := usage*float64(pc.ready), pc.ready
	if pc.missing > 0 {
		if ex {
			text += "; " + itoa(pc.missing) + " of " + itoa(cur) + " replicas missing"
		}
		switch {
		case usage < 1:
			sum += fill / r.Target * float64(pc.missing)
			count += pc.missing
			if ex {
				text += ", counted at " + num(fill) + " each (scale-down)"
			}
		case usage > 1:
			count += pc.missing
			if ex {
				text += ", counted at 0 each (scale-up)"
			}
		}
	}
	if scaleUpWithUnready {
		count += pc.unready
		if ex {
			text += "; " + itoa(pc.unready) + " unready counted at 0 (scale-up)"
		}
	}
	newUsage := sum / float64(count)
	r.Ratio = newUsage
	if ex {
		text += ": ratio " + tol.ratioText(usage) + " becomes " + tol.ratioText(newUsage) + " over " + itoa(count) + " replicas"
	}
	if tol.within(newUsage) || (usage < 1 && newUsage > 1) || (usage > 1 && newUsage < 1) {
		r.Desired = cur
		if !ex {
			return r, ReasonTolerance, text
		}
		if tol.within(newUsage) {
			return r, ReasonTolerance, text + ", within tolerance " + tol.band() + ": keep " + itoa(cur)
		}
		return r, ReasonTolerance, text + ", on the other side of 1 from " + tol.ratioText(usage) + " (the missing or unready replicas counted change the direction): keep " + itoa(cur)
	}
	next := ceilReplicas(newUsage * float64(count))
	if (newUsage < 1 && next > cur) || (newUsage > 1 && next < cur) {
		r.Desired = cur
		if !ex {
			return r, ReasonTolerance, text
		}
		return r, ReasonTolerance, text + ", " + itoa(next) + " would change direction: keep " + itoa(cur)
	}
	r.Replicas, r.Desired = next, next
	if !ex {
		return r, ReasonMetric, text
	}
	return r, ReasonMetric, text + ": " + tol.ratioText(newUsage) + " × " + itoa(count) + " = " + countText(newUsage*float64(count))
}
