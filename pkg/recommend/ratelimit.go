package recommend

import (
	"math"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// changeInPeriod is the HPA's getReplicasChangePerPeriod: the replicas
// changed by events after now-period.
func changeInPeriod(periodSeconds int32, events []ScaleEvent, now time.Time) int {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	n := 0
	for _, e := range events {
		if e.At.After(cutoff) {
			n += e.Change
		}
	}
	return n
}

// scaleLimit is the HPA's calculateScaleUpLimitWithScalingRules (up) and
// calculateScaleDownLimitWithBehaviors (!up): per policy, period start =
// current − added + removed within periodSeconds; Pods proposes start ±
// value; Percent proposes ceil(start × (1 + value/100)) scaling up (rounded
// up so that a small target can grow at all) and trunc(start × (1 −
// value/100)) scaling down (truncated, so a scale-down never removes less
// than the percentage); selectPolicy Max takes the largest change (the
// largest proposal up, the smallest down), Min the smallest change,
// Disabled keeps current.
//
// curName names cur in the text: "current", or "base" when cur is
// infscale's previous output rather than the observed count (Decide's base).
func scaleLimit(cur int, curName string, st *State, r *autoscalingv2.HPAScalingRules, now time.Time, up bool) (int, string) {
	dir, sign := "scaleDown", " − "
	if up {
		dir, sign = "scaleUp", " + "
	}
	disabled, minPolicy := selectPolicy(r)
	if disabled {
		return cur, dir + " selectPolicy Disabled"
	}
	larger := up != minPolicy // the larger proposal is the one selected
	result := math.MaxInt
	if larger {
		result = math.MinInt
	}
	text := ""
	for _, pol := range r.Policies {
		start, added, removed := periodStart(cur, st, pol.PeriodSeconds, now)
		v := int(pol.Value)
		head := itoa(v) + " per " + itoa(int(pol.PeriodSeconds)) + "s: "
		proposed := start
		switch pol.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start - v
			if up {
				proposed = start + v
			}
			text = joinPolicy(text, "Pods "+head+itoa(start)+sign+itoa(v)+" = "+itoa(proposed), start, cur, curName, added, removed)
		case autoscalingv2.PercentScalingPolicy:
			f, round := 1-float64(pol.Value)/100, "trunc"
			proposed = int(float64(start) * f)
			if up {
				f, round = 1+float64(pol.Value)/100, "ceil"
				proposed = int(math.Ceil(float64(start) * f))
			}
			text = joinPolicy(text, "Percent "+head+round+"("+itoa(start)+" × "+num(f)+") = "+itoa(proposed), start, cur, curName, added, removed)
		}
		if larger {
			result = max(result, proposed)
		} else {
			result = min(result, proposed)
		}
	}
	return result, dir + " limit " + itoa(result) + " by " + selectText(minPolicy) + " of (" + text + ")"
}

// periodStart is the replica count at the start of a policy's period, as
// the HPA computes it: current − added + removed by the recorded scale
// events within periodSeconds before now; added and removed are returned
// for the explanation.
func periodStart(cur int, st *State, periodSeconds int32, now time.Time) (start, added, removed int) {
	added = changeInPeriod(periodSeconds, st.ScaleUpEvents, now)
	removed = changeInPeriod(periodSeconds, st.ScaleDownEvents, now)
	return cur - added + removed, added, removed
}

// selectPolicy reads the HPA's selectPolicy of r: Disabled, or whether Min
// (the smallest change) applies; unset means Max.
func selectPolicy(r *autoscalingv2.HPAScalingRules) (disabled, minPolicy bool) {
	if r.SelectPolicy == nil {
		return false, false
	}
	return *r.SelectPolicy == autoscalingv2.DisabledPolicySelect, *r.SelectPolicy == autoscalingv2.MinChangePolicySelect
}

func selectText(minPolicy bool) string {
	if minPolicy {
		return "selectPolicy Min (the smallest change)"
	}
	return "selectPolicy Max (the largest change)"
}

func joinPolicy(text, part string, start, cur int, curName string, added, removed int) string {
	if start != cur {
		part += " [period start " + itoa(start) + " = " + curName + " " + itoa(cur) + " − added " + itoa(added) + " + removed " + itoa(removed) + "]"
	}
	if text == "" {
		return part
	}
	return text + "; " + part
}

// bounds are the replica limits the rate step applies, with the reason
// each one stands for.
type bounds struct {
	lo, hi     int
	loReason   Reason
	loText     string
	hiReason   Reason
	scheduleBy *compiledWindow
	// loWindow, when set, is the schedule window behind lo, whose text
	// (when it fired and closes) lowText writes only when lo binds.
	loWindow *compiledWindow
	loFloor  int
	at       time.Time
	// observed is the replicas observed (Observation.Current): where the
	// rate limits' start (Decide's base) differs from it, the text calls
	// that start "base", not "current".
	observed int
}

// baseName names the count the rate limits start from: "current" when it
// is the observed count, else "base" (infscale's previous output, the
// HPA's spec.replicas; the stabilisation step says which).
func (b *bounds) baseName(cur int) string {
	if cur != b.observed {
		return "base"
	}
	return "current"
}

// lowText says what lo stands for.
func (b *bounds) lowText() string {
	if b.loWindow != nil {
		return "schedule " + b.loWindow.text + " (" + b.loWindow.open(b.at) + ") raises min to " + itoa(b.loFloor)
	}
	return b.loText
}

// rateLimit is the HPA's convertDesiredReplicasWithBehaviorRate: scaling up,
// desired is capped at min(max, scaleUp limit) (the limit never below
// current); scaling down, floored at max(min, scaleDown limit) (the limit
// never above current). It returns the result, the reason when it changed
// desired, and the words.
func (p *Policy) rateLimit(st *State, desired, cur int, b bounds, now time.Time) (int, Reason, string) {
	if p.NoBehavior {
		return noBehaviorLimit(desired, cur, b)
	}
	switch {
	case desired > cur:
		limit, text := scaleLimit(cur, b.baseName(cur), st, p.Behavior.ScaleUp, now, true)
		if limit < cur {
			limit = cur // no further scale-up until the period's events age out
			text += ", below the " + b.baseName(cur) + " " + itoa(cur) + ", so " + itoa(cur) + " (no scale-up until the period's scale-ups age out)"
		}
		allowed, reason := b.hi, b.hiReason
		if allowed > limit {
			allowed, reason = limit, ReasonScaleUpLimit
		}
		if desired > allowed {
			if reason == ReasonScaleUpLimit {
				return allowed, reason, "rate limit: " + text + ": " + itoa(desired) + " limited to " + itoa(allowed)
			}
			return allowed, reason, "max " + itoa(allowed) + ": " + itoa(desired) + " lowered to " + itoa(allowed)
		}
		return desired, 0, "rate limit: " + text + ": " + itoa(desired) + " allowed"
	case desired < cur:
		limit, text := scaleLimit(cur, b.baseName(cur), st, p.Behavior.ScaleDown, now, false)
		if limit > cur {
			limit = cur // no further scale-down until the period's events age out
			text += ", above the " + b.baseName(cur) + " " + itoa(cur) + ", so " + itoa(cur) + " (no scale-down until the period's scale-downs age out)"
		}
		allowed, reason := b.lo, b.loReason
		if allowed < limit {
			allowed, reason = limit, ReasonScaleDownLimit
		}
		if desired < allowed {
			if reason == ReasonScaleDownLimit {
				return allowed, reason, "rate limit: " + text + ": " + itoa(desired) + " limited to " + itoa(allowed)
			}
			return allowed, reason, b.lowText() + ": " + itoa(desired) + " raised to " + itoa(allowed)
		}
		return desired, 0, "rate limit: " + text + ": " + itoa(desired) + " allowed"
	}
	return desired, 0, ""
}

// noBehaviorLimit is the HPA's convertDesiredReplicasWithRules (an HPA
// without behavior): desired within [min, min(max, max(2 × current, 4))],
// the scale-up limit counted from current at every decision, no limit
// scaling down.
func noBehaviorLimit(desired, cur int, b bounds) (int, Reason, string) {
	limit := max(2*cur, 4)
	text := "scale-up limit (an HPA without behavior) max(2 × " + b.baseName(cur) + " " + itoa(cur) + ", 4) = " + itoa(limit)
	allowed, reason := b.hi, b.hiReason
	if allowed > limit {
		allowed, reason = limit, ReasonScaleUpLimit
	}
	switch {
	case desired < b.lo:
		return b.lo, b.loReason, b.lowText() + ": " + itoa(desired) + " raised to " + itoa(b.lo)
	case desired > allowed && reason == ReasonScaleUpLimit:
		return allowed, reason, "rate limit: " + text + ": " + itoa(desired) + " limited to " + itoa(allowed)
	case desired > allowed:
		return allowed, reason, "max " + itoa(allowed) + ": " + itoa(desired) + " lowered to " + itoa(allowed)
	case desired > cur:
		return desired, 0, "rate limit: " + text + ": " + itoa(desired) + " allowed"
	case desired < cur:
		return desired, 0, "rate limit: none scaling down (an HPA without behavior): " + itoa(desired) + " allowed"
	}
	return desired, 0, ""
}

// recordEvent stores a change of infscale's own output, prev → next, as
// the HPA's storeScaleEvent does: the event takes the slot of the last
// event of its direction older than that direction's longest policy period
// (markScaleEventsOutdated), else it is appended. So an event older than
// its own direction's periods still counts in the other direction's longer
// ones until a later event of its direction takes its slot: a scale-down
// with a 60 s period after a scale-up with 15 s ones starts from the count
// before that scale-up. Events no period can count any more (at or before
// now − the longest period of both directions) are dropped from the list
// of the direction whose period is that longest: every outdated event of it
// is such, so which one a slot goes to changes nothing. The other list
// keeps the HPA's slot order (not time order); its length stays within
// the decisions of one period + 1.
func (p *Policy) recordEvent(st *State, prev, next int, now time.Time) {
	if p.NoBehavior {
		return // no rate periods to count them in
	}
	longest := max(p.upPeriod, p.downPeriod)
	dead := func(e ScaleEvent) bool { return !e.At.After(now.Add(-longest)) }
	if p.upPeriod == longest {
		st.ScaleUpEvents = slices.DeleteFunc(st.ScaleUpEvents, dead)
	}
	if p.downPeriod == longest {
		st.ScaleDownEvents = slices.DeleteFunc(st.ScaleDownEvents, dead)
	}
	switch {
	case next > prev:
		st.ScaleUpEvents = storeEvent(st.ScaleUpEvents, ScaleEvent{At: now, Change: next - prev}, p.upPeriod)
	case next < prev:
		st.ScaleDownEvents = storeEvent(st.ScaleDownEvents, ScaleEvent{At: now, Change: prev - next}, p.downPeriod)
	}
}

// storeEvent puts e in the last slot of events dated before e.At − longest,
// or appends it.
func storeEvent(events []ScaleEvent, e ScaleEvent, longest time.Duration) []ScaleEvent {
	cutoff := e.At.Add(-longest)
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].At.Before(cutoff) {
			events[i] = e
			return events
		}
	}
	return append(events, e)
}
