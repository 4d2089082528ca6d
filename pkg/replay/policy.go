package replay

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/trace"
)

// Policy is a parsed policy string, ready to build a Controller per replay.
type Policy struct {
	// Name is the policy string as given (the row label of a comparison).
	Name string
	// Recommend is the pkg/recommend policy of an infscale policy (nil for
	// the baselines fixed, knative and oracle).
	Recommend *recommend.Policy

	min   int  // the replicas at second 0 (at least 1)
	max   int  // the most replicas the policy may ask for (0: maxReplicas); bounds the warm start
	exact bool // start with exactly min replicas (no warm-start sizing)
	build func(env) (Controller, error)
}

// env is what a Policy builds its Controller from.
type env struct {
	cfg Config
	sp  *speed
	src trace.Source
}

// PolicySyntax summarises the policy strings, for help and error texts.
const PolicySyntax = `SIGNAL:TARGET[,OPTION=VALUE...] with SIGNAL queue, waiting, running (requests per replica), kv (fraction), cpu (percent), ttft, queuewait (seconds, e.g. 2s), demand (utilisation of one replica, e.g. 0.7) ` +
	`and options min, max, lookahead, cooldown, uppods, uppercent, downpods, downpercent, upwindow, downwindow, tolerance, schedule, guard (on|off), settle, drain (or another SIGNAL:TARGET); ` +
	`or fixed:N, knative:C[,min=,max=], oracle[,min=,max=], optimal, hpa(POLICY)[,tolerance=,downwindow=], recommended`

// Recommended is the preset `recommended` expands to, the policy serve
// uses by default: scale on queue (running + waiting + held) at 16
// requests per replica, a quarter of the reference replica's 64 batch
// slots, so that a replica absorbs the growth of a ramp while the next one
// starts; with a lookahead of the replica's cold start (90 s here, the
// reference replica's 91 s; in a replay `recommended` takes the simulated
// replica's cold start, rounded up to whole seconds), so the next one is
// bought before it is needed. Chosen from docs/simulate.md's
// comparison: the only infscale policy tried with zero misses on the
// reference trace under seeds 1-6 and on the Azure conversation trace at
// 1x, 3x and 6x its rate, with at most one reversal on the reference trace.
const Recommended = "queue:16,lookahead=90"

// DefaultPolicies is the set `infscale simulate` runs when no --policy is
// given: DESIGN.md's reference comparison, then the baselines.
var DefaultPolicies = []string{
	"cpu:60", "cpu:25", "queue:24", "queue:24,lookahead=90", "queue:24,min=0,cooldown=120",
	"knative:16", "hpa(recommended)", "recommended", "oracle", "optimal",
}

// policyError is a policy string problem at a byte offset (1-based column).
func policyError(spec string, col int, format string, args ...any) error {
	return fmt.Errorf("policy %q: at column %d: %s", spec, col, fmt.Sprintf(format, args...))
}

// ParsePolicy reads a policy string (PolicySyntax). Errors name the column
// of the offending part and what is allowed there.
func ParsePolicy(spec string) (Policy, error) {
	return parsePolicy(spec, spec, 0)
}

// parsePolicy parses s, which sits at offset off of the whole string full.
func parsePolicy(full, s string, off int) (Policy, error) {
	s0 := s
	if s == "" {
		return Policy{}, policyError(full, off+1, "empty policy: want %s", PolicySyntax)
	}
	if s == "recommended" {
		p, err := parsePolicy(Recommended, Recommended, 0)
		if err != nil {
			return p, err
		}
		p.Name = full[off : off+len(s)]
		base := p.Recommend
		p.build = func(e env) (Controller, error) {
			// The lookahead is the replica's cold start, whatever the replica.
			rp := *base
			rp.Lookahead = time.Duration(math.Ceil(e.sp.cold)) * time.Second
			if err := rp.Validate(); err != nil {
				return nil, err
			}
			cp, err := forReplica(&rp, e.sp)
			if err != nil {
				return nil, err
			}
			return newInfscale(cp, e.cfg.Epoch), nil
		}
		return p, nil
	}
	if strings.HasPrefix(s, "hpa(") {
		return parseHPA(full, s, off)
	}
	parts := splitTop(s)
	head := parts[0]
	if head.text == "recommended" {
		return Policy{}, policyError(full, off+parts[1].at+1, "recommended takes no options; write the preset out to change it (%s,...)", Recommended)
	}
	kind, arg, hasArg := strings.Cut(head.text, ":")
	switch kind {
	case "fixed":
		n, err := strconv.Atoi(arg)
		if !hasArg || err != nil || n < 0 || n > maxReplicas {
			return Policy{}, policyError(full, off+len("fixed:")+1, "fixed:N wants a replica count N >= 0, got %q", arg)
		}
		if len(parts) > 1 {
			return Policy{}, policyError(full, off+parts[1].at+1, "fixed:N takes no options")
		}
		return Policy{Name: s0, min: n, exact: true, build: func(env) (Controller, error) { return fixed(n), nil }}, nil
	case "knative":
		return parseKnative(full, s0, parts, off)
	case "oracle":
		if hasArg {
			return Policy{}, policyError(full, off+len("oracle")+1, "oracle takes no target, only options min= and max=")
		}
		return parseOracle(full, s0, parts, off)
	case "optimal":
		if hasArg {
			return Policy{}, policyError(full, off+len("optimal")+1, "optimal takes no target or options")
		}
		return parseOptimal(full, s0, parts, off)
	}
	p := &recommend.Policy{Min: 1, Max: 100}
	pol := Policy{Name: s0, Recommend: p}
	for _, part := range parts {
		k, v, ok := strings.Cut(part.text, "=")
		col := off + part.at + 1
		if !ok {
			// SIGNAL:TARGET
			name, target, ok := strings.Cut(part.text, ":")
			sig, err := recommend.ParseSignal(name)
			if !ok || err != nil {
				return Policy{}, policyError(full, col, "%q: want SIGNAL:TARGET (queue, waiting, running, kv, cpu, ttft, queuewait, demand), OPTION=VALUE, fixed:N, knative:C, oracle, hpa(POLICY) or recommended", part.text)
			}
			t, err := parseTarget(sig, target)
			if err != nil {
				return Policy{}, policyError(full, col+len(name)+1, "%s target %q: %v", name, target, err)
			}
			p.Metrics = append(p.Metrics, recommend.Metric{Signal: sig, Target: t})
			continue
		}
		if part.at == 0 {
			return Policy{}, policyError(full, col, "a policy starts with SIGNAL:TARGET, fixed:N, knative:C, oracle or hpa(...), not an option")
		}
		if err := setOption(p, k, v); err != nil {
			if errors.Is(err, errUnknownOption) {
				return Policy{}, policyError(full, col, "%v", err)
			}
			return Policy{}, policyError(full, col+len(k)+1, "%s=%q: %v", k, v, err)
		}
	}
	if err := p.Validate(); err != nil {
		return Policy{}, fmt.Errorf("policy %q: %w", s0, err)
	}
	pol.min, pol.max = max(p.Min, 1), p.Max
	pol.build = func(e env) (Controller, error) {
		rp, err := forReplica(p, e.sp)
		if err != nil {
			return nil, err
		}
		return newInfscale(rp, e.cfg.Epoch), nil
	}
	return pol, nil
}

// part is one comma-separated part of a policy string and its offset.
type part struct {
	text string
	at   int
}

// splitTop splits on commas outside parentheses.
func splitTop(s string) []part {
	var out []part
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, part{s[start:i], start})
				start = i + 1
			}
		}
	}
	return append(out, part{s[start:], start})
}

func parseTarget(sig recommend.Signal, v string) (float64, error) {
	var t float64
	var err error
	switch sig {
	case recommend.SignalTTFT, recommend.SignalQueueWait:
		t, err = seconds(v)
	case recommend.SignalCPU:
		t, err = strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	case recommend.SignalKV, recommend.SignalDemand:
		if strings.HasSuffix(v, "%") {
			t, err = strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			t /= 100
		} else {
			t, err = strconv.ParseFloat(v, 64)
		}
		if err == nil && t > 1 {
			if sig == recommend.SignalDemand {
				return 0, fmt.Errorf("want a utilisation of one replica's capacity in (0, 1], e.g. 0.7 or 70%%")
			}
			return 0, fmt.Errorf("want a fraction of the KV cache in (0, 1], e.g. 0.75 or 75%%")
		}
	default:
		t, err = strconv.ParseFloat(v, 64)
	}
	if err != nil || !(t > 0) || math.IsInf(t, 0) {
		return 0, fmt.Errorf("want %s > 0", sig.Unit())
	}
	return t, nil
}

// seconds reads "90", "90s", "1m30s", "1h".
func seconds(v string) (float64, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return f, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("want seconds or a duration like 90s, 2m")
	}
	return d.Seconds(), nil
}

func duration(v string) (time.Duration, error) {
	f, err := seconds(v)
	if err != nil || !(f >= 0) || f > maxDurationSeconds {
		return 0, fmt.Errorf("want seconds 0..%g or a duration like 90s, 2m", float64(maxDurationSeconds))
	}
	return time.Duration(f * float64(time.Second)), nil
}

// maxDurationSeconds bounds lookahead= and cooldown= (a year): longer
// spans mean nothing to an autoscaler, and past 292 years they overflow
// time.Duration.
const maxDurationSeconds = 365 * 86400

// rule parses a rate-limit value "N" or "N/PERIOD" (period default 15 s).
func rule(typ autoscalingv2.HPAScalingPolicyType, v string) (autoscalingv2.HPAScalingPolicy, error) {
	n, per, hasPer := strings.Cut(v, "/")
	val, err := strconv.ParseInt(n, 10, 32) // the HPA's value is an int32
	if err != nil || val < 1 {
		return autoscalingv2.HPAScalingPolicy{}, fmt.Errorf("want an integer 1..%d, optionally /PERIOD (e.g. 4/60s)", math.MaxInt32)
	}
	period := 15
	if hasPer {
		d, err := seconds(per)
		if err != nil || d < 1 || d > 1800 || d != math.Trunc(d) {
			return autoscalingv2.HPAScalingPolicy{}, fmt.Errorf("period %q: want whole seconds 1..1800", per)
		}
		period = int(d)
	}
	return autoscalingv2.HPAScalingPolicy{Type: typ, Value: int32(val), PeriodSeconds: int32(period)}, nil
}

// errUnknownOption marks an option key that does not exist.
var errUnknownOption = errors.New("unknown option")

// setOption applies one OPTION=VALUE to p.
func setOption(p *recommend.Policy, k, v string) error {
	up := func() *autoscalingv2.HPAScalingRules {
		if p.Behavior.ScaleUp == nil {
			p.Behavior.ScaleUp = &autoscalingv2.HPAScalingRules{}
		}
		return p.Behavior.ScaleUp
	}
	down := func() *autoscalingv2.HPAScalingRules {
		if p.Behavior.ScaleDown == nil {
			p.Behavior.ScaleDown = &autoscalingv2.HPAScalingRules{}
		}
		return p.Behavior.ScaleDown
	}
	switch k {
	case "min", "max":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxReplicas {
			return fmt.Errorf("want a replica count 0..%d", maxReplicas)
		}
		if k == "min" {
			p.Min = n
		} else {
			p.Max = n
		}
	case "lookahead":
		d, err := duration(v)
		if err != nil {
			return err
		}
		p.Lookahead = d
	case "cooldown":
		d, err := duration(v)
		if err != nil {
			return err
		}
		p.Zero = &recommend.Zero{Cooldown: d}
	case "uppods", "uppercent", "downpods", "downpercent":
		typ := autoscalingv2.PodsScalingPolicy
		if strings.HasSuffix(k, "percent") {
			typ = autoscalingv2.PercentScalingPolicy
		}
		r, err := rule(typ, v)
		if err != nil {
			return err
		}
		rules := up()
		if strings.HasPrefix(k, "down") {
			rules = down()
		}
		rules.Policies = append(rules.Policies, r)
	case "upwindow", "downwindow":
		d, err := seconds(v)
		if err != nil || d < 0 || d > 3600 || d != math.Trunc(d) {
			return fmt.Errorf("want whole seconds 0..3600 (e.g. 300 or 5m)")
		}
		w := int32(d)
		if k == "upwindow" {
			up().StabilizationWindowSeconds = &w
		} else {
			down().StabilizationWindowSeconds = &w
		}
	case "tolerance":
		f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if strings.HasSuffix(v, "%") {
			f /= 100
		}
		if err != nil || !(f >= 0) || f >= 1 {
			return fmt.Errorf("want a fraction in [0, 1) or a percentage, e.g. 0.1 or 10%%")
		}
		p.Tolerance = &recommend.Tolerance{Up: f, Down: f}
	case "guard":
		switch v {
		case "on":
			p.Guard = nil
		case "off":
			p.Guard = &recommend.Guard{Off: true}
		default:
			return fmt.Errorf("want on or off")
		}
	case "settle", "drain":
		d, err := duration(v)
		if err != nil {
			return err
		}
		if p.Guard == nil {
			p.Guard = &recommend.Guard{}
		}
		if k == "settle" {
			p.Guard.Settle = d
		} else {
			p.Guard.Drain = d
		}
	case "schedule":
		w, err := parseSchedule(v)
		if err != nil {
			return err
		}
		p.Schedule = append(p.Schedule, w)
	default:
		return fmt.Errorf("%w %s; allowed: min, max, lookahead, cooldown, uppods, uppercent, downpods, downpercent, upwindow, downwindow, tolerance, schedule, guard, settle, drain", errUnknownOption, k)
	}
	return nil
}

// parseSchedule reads "CRON;DURATION;MIN", e.g. "0 8 * * 1-5;10h;4" (from
// 08:00 on weekdays, for 10 h, at least 4 replicas), with an optional
// fourth field, the IANA time zone.
func parseSchedule(v string) (recommend.ScheduleWindow, error) {
	f := strings.Split(v, ";")
	if len(f) != 3 && len(f) != 4 {
		return recommend.ScheduleWindow{}, fmt.Errorf("want CRON;DURATION;MIN[;ZONE], e.g. \"0 8 * * 1-5;10h;4\"")
	}
	d, err := duration(f[1])
	if err != nil || d <= 0 {
		return recommend.ScheduleWindow{}, fmt.Errorf("duration %q: want a span > 0 like 10h", f[1])
	}
	m, err := strconv.Atoi(f[2])
	if err != nil || m < 0 {
		return recommend.ScheduleWindow{}, fmt.Errorf("min %q: want a replica count >= 0", f[2])
	}
	w := recommend.ScheduleWindow{Cron: f[0], Duration: d, Min: m}
	if len(f) == 4 {
		w.Location = f[3]
	}
	return w, nil
}
