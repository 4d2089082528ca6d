package recommend

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/infscale/infscale/internal/quantity"
)

// MaxPeriodSeconds and MaxStabilizationWindowSeconds are the HPA's limits
// on a scaling policy's periodSeconds (1..1800) and a stabilizationWindowSeconds
// (0..3600), from k8s pkg/apis/autoscaling/validation; front ends name
// them when a flag's value cannot even be held as seconds.
const (
	MaxPeriodSeconds              = 1800
	MaxStabilizationWindowSeconds = 3600
)

const (
	maxPeriodSeconds              = MaxPeriodSeconds
	maxStabilizationWindowSeconds = MaxStabilizationWindowSeconds
	// defaultDownWindowSeconds is the controller's
	// --horizontal-pod-autoscaler-downscale-stabilization (5 minutes).
	defaultDownWindowSeconds = 300
)

// DefaultScaleUp returns the HPA's default scaleUp rules: window 0 s,
// selectPolicy Max over Pods 4 and Percent 100 per 15 s.
func DefaultScaleUp() *autoscalingv2.HPAScalingRules {
	sel := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr(int32(0)),
		SelectPolicy:               &sel,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// DefaultScaleDown returns the HPA's default scaleDown rules: window 300 s,
// selectPolicy Max over Percent 100 per 15 s.
func DefaultScaleDown() *autoscalingv2.HPAScalingRules {
	sel := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr(int32(defaultDownWindowSeconds)),
		SelectPolicy:               &sel,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// fillRules completes r with the defaults d field by field, as the API
// server's GenerateHPAScaleUpRules/GenerateHPAScaleDownRules do: a nil
// selectPolicy, nil policies or nil window take the default.
func fillRules(r *autoscalingv2.HPAScalingRules, d *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if r == nil {
		return d
	}
	c := r.DeepCopy()
	if c.SelectPolicy == nil {
		c.SelectPolicy = d.SelectPolicy
	}
	if c.Policies == nil {
		c.Policies = d.Policies
	}
	if c.StabilizationWindowSeconds == nil {
		c.StabilizationWindowSeconds = d.StabilizationWindowSeconds
	}
	return c
}

// DefaultMax is the max a front end uses when the user names none (decide
// --max, a policy string without max=): KEDA's default maxReplicaCount,
// 100. The HPA has no default (maxReplicas is required, as it is in the
// serve config); a default this high never silently caps a realistic
// decision, and the max step says so when it does.
const DefaultMax = 100

// minTarget is the smallest target a metric accepts: the smallest normal
// float64, 2^-1022 ≈ 2.2250738585072014e-308. A denormal target (1e-320)
// has lost its precision and overflows every ratio to +Inf; it is a typo
// or garbage, not a setting.
const minTarget = 0x1p-1022

// maxTargetText is a signal's largest target for an error's range.
func maxTargetText(maxTarget float64) string {
	if maxTarget > 0 {
		return num(maxTarget)
	}
	return strconv.FormatFloat(math.MaxFloat64, 'g', -1, 64)
}

// Validate reports every problem of the policy at once (FieldErrors, each a
// FieldError naming the field by its path and what is allowed) and prepares
// the policy for Decide: behavior defaults filled in, tolerance resolved,
// schedules compiled. It is the one place the policy's rules live; every
// syntax (config, policy strings, decide flags) only maps the paths to its
// own positions. Refused: no metric; an unknown signal or one listed twice;
// a target that is not finite and > 0 or above the signal's bound (kv
// and demand above 1, ttft and queuewait above a week); min < 0, max
// outside 1..2147483647, min > max; kv or cpu with min 0 (at zero
// replicas there is no pod and so no sample to scale up from); Zero
// without min 0; a lookahead below 0 or above a year, a zero cooldown
// below 0 (KEDA's cooldownPeriod: up to its int32 seconds); a
// guard settle or drain below 0 or above a year; a tolerance
// below 0 (down: from 1) or set both here and in behavior; bad behavior
// fields (the HPA's own limits: periodSeconds 1..1800, value >= 1, window
// 0..3600, selectPolicy Max|Min|Disabled, a down tolerance below 1); a bad
// schedule window (see ScheduleWindow: an empty or unparsable cron,
// @every, a CRON_TZ=/TZ= prefix, a cron that never fires, a Location that
// is not an IANA zone or is "Local", duration <= 0 or above a year, min
// outside 0..max).
func (p *Policy) Validate() error {
	var errs FieldErrors
	if len(p.Metrics) == 0 {
		errs.add("metrics", "at least one metric is needed (allowed: %s)", SignalNames())
	}
	for i, m := range p.Metrics {
		at := "metrics[" + itoa(i) + "]"
		if !m.Signal.known() {
			if m.Signal == 0 {
				errs.add(at+".signal", "required: one of %s", SignalNames())
			} else {
				errs.add(at+".signal", "unknown signal %d (allowed: %s)", int(m.Signal), SignalNames())
			}
			continue
		}
		// Against its first entry only: n entries of one signal are n-1
		// problems, not a line for every pair of them.
		for j := range i {
			if p.Metrics[j].Signal == m.Signal {
				also := "metrics[" + itoa(j) + "]"
				errs.add(at+".signal", "%s is listed twice (also %s); one entry per signal", m.Signal, also)
				errs[len(errs)-1].Also = also
				break
			}
		}
		info := m.Signal.info()
		switch {
		case math.IsNaN(m.Target) || math.IsInf(m.Target, 0) || m.Target <= 0:
			errs.add(at+".target", "%v must be a finite number > 0 (%s), e.g. %s", m.Target, info.unit, info.example)
		case m.Target < minTarget:
			errs.add(at+".target", "%v is below the smallest normal float64: a target must be in [%v, %s] (%s), e.g. %s", m.Target, minTarget, maxTargetText(info.maxTarget), info.unit, info.example)
		case info.maxTarget == 1 && m.Target > 1:
			// A fraction: the percentage beside it, as a target written
			// 150% reads 1.5 here (Signal.TargetValue).
			errs.add(at+".target", "%v (%s%%) must be in (0, 1] (%s), e.g. %s or %s", m.Target, quantity.PercentText(m.Target), info.unit, info.example, info.examplePercent)
		case info.kind == latency && m.Target > info.maxTarget:
			errs.add(at+".target", "%v s must be at most %v s (a week): a %s quantile never reaches a target that long, so it would never scale; e.g. %s", m.Target, info.maxTarget, m.Signal, info.example)
		case info.maxTarget > 0 && m.Target > info.maxTarget:
			errs.add(at+".target", "%v must be in (0, %v] (%s), e.g. %s", m.Target, info.maxTarget, info.unit, info.example)
		}
		if m.Signal == SignalDemand && p.Capacity != nil {
			if err := p.Capacity.check(); err != nil {
				errs.add("capacity", "%v", err)
			}
		}
		if m.Signal.Utilization() && p.Min == 0 {
			errs.add(at+".signal", "%s cannot scale from zero with min 0 (at 0 replicas there is no pod and so no %s sample); use min >= 1 or an additive metric (queue, waiting, running)", m.Signal, m.Signal)
		}
	}
	if p.Min < 0 {
		errs.add("min", "%d must be >= 0", p.Min)
	}
	if p.Max < 1 {
		errs.add("max", "%d must be >= 1", p.Max)
	}
	if p.Max > maxReplicas {
		errs.add("max", "%d must be <= %d (max int32, as the HPA)", p.Max, maxReplicas)
	}
	if p.Min > p.Max && p.Max >= 1 {
		errs.add("min", "%d must be <= max %d", p.Min, p.Max)
	}
	if p.Tolerance != nil {
		checkTol := func(name string, v float64) {
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
				errs.add("tolerance."+name, "%v must be a finite fraction >= 0 (0.1 is 10%%)", v)
			case name == "down" && v >= 1:
				errs.add("tolerance.down", "%v must be < 1 (a band reaching ratio 0 never scales down)", v)
			}
		}
		checkTol("up", p.Tolerance.Up)
		checkTol("down", p.Tolerance.Down)
		if p.Behavior.ScaleUp != nil && p.Behavior.ScaleUp.Tolerance != nil || p.Behavior.ScaleDown != nil && p.Behavior.ScaleDown.Tolerance != nil {
			errs.add("tolerance", "set both in the policy and in behavior.scaleUp/scaleDown.tolerance; set it once")
		}
	}
	errs = append(errs, ValidateBehavior(p.Behavior)...)
	if p.NoBehavior {
		if b := p.Behavior; b.ScaleUp != nil || b.ScaleDown != nil && (b.ScaleDown.SelectPolicy != nil || b.ScaleDown.Policies != nil || b.ScaleDown.Tolerance != nil) {
			errs.add("behavior", "an HPA without behavior (NoBehavior) has no scaling rules: only behavior.scaleDown.stabilizationWindowSeconds, standing for the controller's downscale stabilisation window, may be set")
		}
	}
	if p.Lookahead < 0 {
		errs.add("lookahead", "%v must be >= 0", p.Lookahead)
	} else if p.Lookahead > maxLookahead {
		// The trend's span, 2 lookaheads, overflowed time.Duration past
		// 146 years (a negative span); nothing projects that far.
		errs.add("lookahead", "%v: at most %v (a year; the replays' bound too; set it to the cold start, e.g. 90s)", p.Lookahead, maxLookahead)
	}
	if !(p.RampBound >= 0) || math.IsInf(p.RampBound, 0) {
		errs.add("ramp_bound", "%v must be finite and >= 0", p.RampBound)
	} else if p.RampBound > maxRampBound {
		// 1e308 projected +Inf replicas: the largest count, on no data.
		errs.add("ramp_bound", "%v: at most %d standard errors (RampBoundFor gives under 9 for any cold start and window)", p.RampBound, maxRampBound)
	} else if p.RampBound > 0 && (p.Lookahead <= 0 || !slices.ContainsFunc(p.Metrics, func(m Metric) bool { return m.Signal == SignalDemand })) {
		// It bounds the demand metric's projection over the lookahead:
		// without both it would be accepted and do nothing.
		errs.add("ramp_bound", "%v: bounds the demand metric's projection over the lookahead; it needs a demand metric and a lookahead > 0", p.RampBound)
	}
	if p.Hold != nil && !(p.Hold.BreakEven > 0) {
		errs.add("hold.break_even", "%v must be > 0", p.Hold.BreakEven)
	} else if p.Hold != nil && p.Hold.BreakEven > maxBreakEven {
		// The hold's memory, DipHorizon break-evens, overflowed time.Duration.
		errs.add("hold.break_even", "%v: at most %v (a year; the replays' bound too)", p.Hold.BreakEven, maxBreakEven)
	}
	if p.Guard != nil {
		for _, f := range []struct {
			name string
			d    time.Duration
		}{{"settle", p.Guard.Settle}, {"drain", p.Guard.Drain}} {
			switch {
			case f.d < 0:
				errs.add("guard."+f.name, "%v must be >= 0", f.d)
			case f.d > maxGuardSpan:
				// settle: 99999h held every guarded metric at the
				// replicas asked for, 11 years after each scale-up.
				errs.add("guard."+f.name, "%v: at most %v (a year; the replays' bound too; the guard holds a scale-up this long after the replicas asked for serve)", f.d, maxGuardSpan)
			}
		}
	}
	if p.Zero != nil {
		if p.Min != 0 {
			errs.add("zero", "scale to zero needs min 0 (min is %d)", p.Min)
		}
		if p.Zero.Cooldown < 0 {
			errs.add("zero.cooldown", "%v must be >= 0", p.Zero.Cooldown)
		}
	}
	windows, werrs := compileSchedule(p.Schedule, p.Max)
	errs = append(errs, werrs...)
	if err := errs.err(); err != nil {
		return err
	}
	p.prepareWith(windows)
	return nil
}

// ValidateBehavior checks an HPA behavior's rules in both directions, as
// Validate does for Policy.Behavior; each error's Path is the field, e.g.
// behavior.scaleDown.policies[0].value. None: valid.
func ValidateBehavior(b autoscalingv2.HorizontalPodAutoscalerBehavior) FieldErrors {
	return append(validateRules("behavior.scaleUp", b.ScaleUp), validateRules("behavior.scaleDown", b.ScaleDown)...)
}

func validateRules(name string, r *autoscalingv2.HPAScalingRules) FieldErrors {
	if r == nil {
		return nil
	}
	var errs FieldErrors
	add := func(field, format string, args ...any) { errs.add(name+"."+field, format, args...) }
	if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > maxStabilizationWindowSeconds) {
		add("stabilizationWindowSeconds", "%d must be in 0..%d", *w, maxStabilizationWindowSeconds)
	}
	if s := r.SelectPolicy; s != nil {
		switch *s {
		case autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect:
		default:
			add("selectPolicy", "%q (allowed: Max, Min, Disabled)", *s)
		}
	}
	if r.Policies != nil && len(r.Policies) == 0 {
		add("policies", "must list at least one policy (or be left out for the default)")
	}
	for i, pol := range r.Policies {
		switch pol.Type {
		case autoscalingv2.PodsScalingPolicy, autoscalingv2.PercentScalingPolicy:
		default:
			add(fmt.Sprintf("policies[%d].type", i), "%q (allowed: Pods, Percent)", pol.Type)
		}
		if pol.Value <= 0 {
			add(fmt.Sprintf("policies[%d].value", i), "%d must be >= 1", pol.Value)
		}
		if pol.PeriodSeconds <= 0 || pol.PeriodSeconds > maxPeriodSeconds {
			add(fmt.Sprintf("policies[%d].periodSeconds", i), "%d must be in 1..%d", pol.PeriodSeconds, maxPeriodSeconds)
		}
	}
	if t := r.Tolerance; t != nil {
		switch v := t.AsApproximateFloat64(); {
		case t.Sign() < 0:
			add("tolerance", "%s must be >= 0", t.String())
		case name == "behavior.scaleDown" && v >= 1:
			add("tolerance", "%s must be < 1 (a band reaching ratio 0 never scales down)", t.String())
		}
	}
	return errs
}

// prepare makes a policy usable by Decide when Validate was not called:
// defaults are filled, schedules that do not compile are dropped.
func (p *Policy) prepare() {
	if p.prepared {
		return
	}
	windows, _ := compileSchedule(p.Schedule, math.MaxInt)
	p.prepareWith(windows)
}

func (p *Policy) prepareWith(windows []compiledWindow) {
	p.Behavior.ScaleUp = fillRules(p.Behavior.ScaleUp, DefaultScaleUp())
	p.Behavior.ScaleDown = fillRules(p.Behavior.ScaleDown, DefaultScaleDown())
	switch {
	case p.Tolerance != nil:
		p.tol = *p.Tolerance
	default:
		p.tol = DefaultTolerance
		if q := p.Behavior.ScaleUp.Tolerance; q != nil {
			p.tol.Up = q.AsApproximateFloat64()
		}
		if q := p.Behavior.ScaleDown.Tolerance; q != nil {
			p.tol.Down = q.AsApproximateFloat64()
		}
	}
	p.windows = windows
	p.upWindow = time.Duration(*p.Behavior.ScaleUp.StabilizationWindowSeconds) * time.Second
	p.downWindow = time.Duration(*p.Behavior.ScaleDown.StabilizationWindowSeconds) * time.Second
	p.upPeriod = longestPeriod(p.Behavior.ScaleUp)
	p.downPeriod = longestPeriod(p.Behavior.ScaleDown)
	p.cooldown = DefaultZeroCooldown
	if p.Zero != nil {
		p.cooldown = p.Zero.Cooldown
	}
	p.demandMetric = -1
	for i, m := range p.Metrics {
		if m.Signal.Additive() {
			p.demandMetric = i
			break
		}
	}
	p.prepared = true
}

// EffectiveTolerance is the tolerance Decide uses (after Validate).
func (p *Policy) EffectiveTolerance() Tolerance {
	p.prepare()
	return p.tol
}

func longestPeriod(r *autoscalingv2.HPAScalingRules) time.Duration {
	var longest int32
	for _, pol := range r.Policies {
		longest = max(longest, pol.PeriodSeconds)
	}
	return time.Duration(longest) * time.Second
}

// maxRampBound bounds Policy.RampBound: the normal quantile of any
// probability a float64 tells from 1 is below 9, and more standard errors
// project a counted trend without bound (+Inf replicas at 1e308).
const maxRampBound = 10

// maxBreakEven bounds Hold.BreakEven (a year): the hold remembers
// DipHorizon of them, which past 29 years overflows a time.Duration.
const maxBreakEven = 365 * 24 * time.Hour

// maxGuardSpan bounds Guard.Settle and Guard.Drain: a year,
// replay.ParsePolicy's bound of settle= and drain=.
const maxGuardSpan = 365 * 24 * time.Hour

// maxLookahead bounds Policy.Lookahead: a year, replay.ParsePolicy's bound
// of lookahead=.
const maxLookahead = 365 * 24 * time.Hour
