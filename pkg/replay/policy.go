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
const PolicySyntax = `SIGNAL:TARGET[,OPTION=VALUE...] with SIGNAL queue, waiting, running (requests per replica), kv (fraction), cpu (percent), ttft (seconds, e.g. 2s) ` +
	`and options min, max, lookahead, cooldown, uppods, uppercent, downpods, downpercent, upwindow, downwindow, tolerance, schedule (or another SIGNAL:TARGET); ` +
	`or fixed:N, knative:C[,min=,max=], oracle[,min=,max=], hpa(POLICY)[,tolerance=,downwindow=], recommended`

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
// given: docs/design.md's reference comparison, then the baselines.
var DefaultPolicies = []string{
	"cpu:60", "cpu:25", "queue:24", "queue:24,lookahead=90", "queue:24,min=0,cooldown=120",
	"knative:16", "hpa(recommended)", "recommended", "oracle",
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
			return newInfscale(&rp, e.cfg.Epoch), nil
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
	}
	p := &recommend.Policy{Min: 1, Max: recommend.DefaultMax}
	pol := Policy{Name: s0, Recommend: p}
	cols := fieldCols{}
	for _, part := range parts {
		k, v, ok := strings.Cut(part.text, "=")
		col := off + part.at + 1
		if !ok {
			// SIGNAL:TARGET
			name, target, ok := strings.Cut(part.text, ":")
			sig, err := recommend.ParseSignal(name)
			if !ok || err != nil {
				return Policy{}, policyError(full, col, "%q: want SIGNAL:TARGET (%s), OPTION=VALUE, fixed:N, knative:C, oracle, hpa(POLICY) or recommended", part.text, recommend.SignalNames())
			}
			t, err := parseTarget(sig, target)
			if err != nil {
				return Policy{}, policyError(full, col+len(name)+1, "%s target %q: %v", name, target, err)
			}
			cols.metric(len(p.Metrics), col+len(name)+1, sig, target)
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
			var fe recommend.FieldError // a schedule's part: at its own column
			if errors.As(err, &fe) && fe.Path != "" {
				return Policy{}, policyError(full, col+len(k)+1+scheduleOffset(v, recommend.ScheduleField(fe.Path)), "%s %s: %s", k, fe.Path, fe.Msg)
			}
			return Policy{}, policyError(full, col+len(k)+1, "%s=%q: %v", k, v, err)
		}
		cols.option(p, k, v, col+len(k)+1)
	}
	if err := p.Validate(); err != nil {
		return Policy{}, cols.errorAt(full, off, err)
	}
	pol.min, pol.max = max(p.Min, 1), p.Max
	pol.build = func(e env) (Controller, error) { return newInfscale(p, e.cfg.Epoch), nil }
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

// parseTarget reads a SIGNAL:TARGET's number: seconds or a duration (2s)
// for a seconds signal (ttft), a percentage (75%) for kv (a fraction) and
// cpu (percent). What the number may be is recommend.Policy.Validate's.
func parseTarget(sig recommend.Signal, v string) (float64, error) {
	if sig.Seconds() {
		return seconds(v)
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("want a number (%s), e.g. %s", sig.Unit(), map[bool]string{true: "75%", false: "4"}[sig == recommend.SignalKV])
	}
	if sig == recommend.SignalKV && strings.HasSuffix(v, "%") {
		f /= 100
	}
	return f, nil
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
	if err != nil {
		return autoscalingv2.HPAScalingPolicy{}, fmt.Errorf("want an integer 1..%d, optionally /PERIOD (e.g. 4/60s)", math.MaxInt32)
	}
	period := 15
	if hasPer {
		d, err := seconds(per)
		if err != nil || !(d >= math.MinInt32 && d <= math.MaxInt32) || d != math.Trunc(d) {
			return autoscalingv2.HPAScalingPolicy{}, fmt.Errorf("period %q: want whole seconds, e.g. 60s", per)
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
		if err != nil {
			return fmt.Errorf("want a whole number of replicas")
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
		if err != nil || !(d >= math.MinInt32 && d <= math.MaxInt32) || d != math.Trunc(d) {
			return fmt.Errorf("want whole seconds (e.g. 300 or 5m)")
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
		if err != nil {
			return fmt.Errorf("want a fraction or a percentage, e.g. 0.1 or 10%%")
		}
		p.Tolerance = &recommend.Tolerance{Up: f, Down: f}
	case "schedule":
		w, err := recommend.ParseScheduleWindow(v)
		if err != nil {
			return err
		}
		p.Schedule = append(p.Schedule, w)
	default:
		return fmt.Errorf("%w %s; allowed: min, max, lookahead, cooldown, uppods, uppercent, downpods, downpercent, upwindow, downwindow, tolerance, schedule", errUnknownOption, k)
	}
	return nil
}
