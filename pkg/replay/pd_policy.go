package replay

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// PDPolicy is a parsed policy for a P/D pair (ParsePDPolicy).
type PDPolicy struct {
	// Name is the policy string as given.
	Name string

	search bool // the pair's optimal: each pool's search replays seeds (Config.SearchAtOnce)
	// build returns the controller and each pool's warm start.
	build func(pdEnv) (ctl pdController, initPre, initDec int, err error)
}

// Searches reports whether the pair policy searches the trace in
// hindsight (optimal): Policy.Searches for a pair.
func (p PDPolicy) Searches() bool { return p.search }

// PDDefaultPolicies is what `simulate --pd` runs without --policy.
var PDDefaultPolicies = []string{"recommended", "optimal", "llmd-queue", "llmd-saturation", "llmd-tokens", "llmd-slo"}

// ParsePDPolicy reads a P/D policy string: recommended (the pair rule,
// recommend.PairDecider, each role's demand target from its queue),
// recommended(prefill=TP,decode=TD) (the pair rule with the targets fixed,
// each in (0, 1]; what tune --pd searches; prefill_min=N and
// decode_min=N raise a role's floor from 1, as tune --pd's floor round
// does), optimal (both pools' hindsight schedules), an
// llm-d baseline (one ScaledObject per role), pd(PREFILL;DECODE) (a policy
// string per role), or any other policy string (the same policy on each
// pool, deciding alone). Errors name the column and what is allowed;
// optimal or oracle inside a pair and knative (its own 2 s tick) are
// refused.
func ParsePDPolicy(spec string) (PDPolicy, error) {
	// pd(...) and recommended(...) end at the parenthesis that closes
	// them, found as hpa('s is (closingParen).
	for _, form := range []string{"pd(PREFILL;DECODE)", "recommended(prefill=TP,decode=TD)"} {
		head := form[:strings.IndexByte(form, '(')+1]
		if !strings.HasPrefix(spec, head) {
			continue
		}
		switch end := closingParen(spec); {
		case end < 0:
			return PDPolicy{}, policyError(spec, len(spec)+1, "%s has no closing parenthesis: want %s", head, form)
		case end != len(spec)-1:
			return PDPolicy{}, policyError(spec, end+2, "%q after %s...): nothing follows the closing parenthesis, want %s", spec[end+1:], head, form)
		}
	}
	switch {
	case spec == "recommended":
		return PDPolicy{Name: spec, build: buildPDRecommended}, nil
	case spec == "optimal":
		return PDPolicy{Name: spec, search: true, build: buildPDOptimal}, nil
	case strings.HasPrefix(spec, "recommended(") && strings.HasSuffix(spec, ")"):
		pr, err := parsePairRule(spec)
		if err != nil {
			return PDPolicy{}, err
		}
		return PDPolicy{Name: spec, build: func(e pdEnv) (pdController, int, int, error) {
			return buildPDRecommendedAt(e, pr)
		}}, nil
	case strings.HasPrefix(spec, "pd(") && strings.HasSuffix(spec, ")"):
		inner := spec[3 : len(spec)-1]
		a, b, ok := strings.Cut(inner, ";")
		if !ok {
			return PDPolicy{}, policyError(spec, 4, "pd(PREFILL;DECODE) wants two policies separated by ';'")
		}
		pp, err := parsePolicy(spec, a, 3)
		if err != nil {
			return PDPolicy{}, err
		}
		dp, err := parsePolicy(spec, b, 3+len(a)+1)
		if err != nil {
			if _, third, more := strings.Cut(b, ";"); more {
				// A ';' is kept in the decode policy (a schedule= value
				// has its own); a third policy was likely meant.
				return PDPolicy{}, fmt.Errorf("%w (pd(PREFILL;DECODE) takes two policies: the decode policy here runs on past a second ';' into %q)", err, third)
			}
			return PDPolicy{}, err
		}
		if err := pdSupported(spec, pp); err != nil {
			return PDPolicy{}, err
		}
		if err := pdSupported(spec, dp); err != nil {
			return PDPolicy{}, err
		}
		return PDPolicy{Name: spec, build: pairBuilder(pp, dp)}, nil
	}
	p, err := ParsePolicy(spec)
	if err != nil {
		return PDPolicy{}, err
	}
	if err := pdSupported(spec, p); err != nil {
		return PDPolicy{}, err
	}
	head := splitTop(spec)[0].text
	if isLLMD(head) {
		return PDPolicy{Name: spec, build: llmdPairBuilder(p, head)}, nil
	}
	return PDPolicy{Name: spec, build: pairBuilder(p, p)}, nil
}

// pairRule is recommended(...)'s setting: each role's demand target
// (replicas busy per replica, in (0, 1]; 0 and 0: from the queues) and
// floor (the role's least replicas, recommend.Policy.Min; 0: the pair
// rule's own, 1).
type pairRule struct {
	tp, td     float64
	minP, minD int
}

// parsePairRule reads recommended(prefill=TP,decode=TD[,prefill_min=N]
// [,decode_min=N]): each role's demand target, a number in (0, 1], and
// its floor, a whole number of replicas from 1 to recommend.DefaultMax
// (the pair rule's max).
func parsePairRule(spec string) (pairRule, error) {
	var r pairRule
	inner := spec[len("recommended(") : len(spec)-1]
	var seen [4]bool
	col := len("recommended(") + 1
	for _, part := range strings.Split(inner, ",") {
		k, v, _ := strings.Cut(part, "=")
		i := slices.Index([]string{"prefill", "decode", "prefill_min", "decode_min"}, k)
		switch {
		case i < 0:
			return pairRule{}, policyError(spec, col, "%q: want prefill=TARGET, decode=TARGET, prefill_min=N or decode_min=N (recommended(prefill=0.7,decode=0.9,prefill_min=2))", part)
		case seen[i]:
			return pairRule{}, policyError(spec, col, "%s is given twice", k)
		case i < 2:
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || !(x > 0 && x <= 1) {
				return pairRule{}, policyError(spec, col, "%s: want a demand target in (0, 1], e.g. %s=0.8", part, k)
			}
			if i == 0 {
				r.tp = x
			} else {
				r.td = x
			}
		default:
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > recommend.DefaultMax {
				return pairRule{}, policyError(spec, col, "%s: want a floor of 1 to %d replicas (the pair rule's max), e.g. %s=3", part, recommend.DefaultMax, k)
			}
			if i == 2 {
				r.minP = n
			} else {
				r.minD = n
			}
		}
		seen[i] = true
		col += len(part) + 1
	}
	if !seen[0] || !seen[1] {
		return pairRule{}, policyError(spec, 1, "recommended(...) wants both prefill=TARGET and decode=TARGET, e.g. recommended(prefill=0.7,decode=0.9)")
	}
	return r, nil
}

// pdSupported refuses the policies a pool of a pair cannot run: those
// that search or read the whole trace (optimal, oracle: use the pair's
// optimal) and Knative (its own 2 s tick).
func pdSupported(full string, p Policy) error {
	head := splitTop(p.Name)[0].text
	switch {
	case p.search || strings.HasPrefix(head, "oracle"):
		return policyError(full, 1, "%s searches the whole trace for one pool; for a pair use optimal alone (both pools' schedules)", head)
	case strings.HasPrefix(head, "knative"):
		return policyError(full, 1, "knative ticks every 2 s, the pair every period; not supported for a P/D pair")
	}
	return nil
}

// pairCtl is two independent controllers, one per pool.
type pairCtl struct{ pre, dec Controller }

func (c pairCtl) decide(now float64, op, od recommend.Observation) (int, int) {
	return c.pre.Decide(now, op), c.dec.Decide(now, od)
}

func (c pairCtl) explainers() (pre, dec explainer) {
	pre, _ = c.pre.(explainer)
	dec, _ = c.dec.(explainer)
	return pre, dec
}

func (c pairCtl) warm(p, d int, epoch time.Time) {
	if w, ok := c.pre.(warmer); ok {
		w.warm(p, epoch)
	}
	if w, ok := c.dec.(warmer); ok {
		w.warm(d, epoch)
	}
}

// pairBuilder builds pp on the prefill pool and dp on the decode pool.
func pairBuilder(pp, dp Policy) func(pdEnv) (pdController, int, int, error) {
	return func(e pdEnv) (pdController, int, int, error) {
		pre, err := pp.build(e.pre)
		if err != nil {
			return nil, 0, 0, err
		}
		dec, err := dp.build(e.dec)
		if err != nil {
			return nil, 0, 0, err
		}
		ip, id, err := pdWarm(e, pp, dp)
		return pairCtl{pre, dec}, ip, id, err
	}
}

// llmdPairBuilder is an llm-d baseline per pool: llm-d's P/D guides give
// one ScaledObject per role, each scaling its Deployment alone on its own
// pods' signals. For llmd-tokens the P/D overlay splits the two triggers
// (keda-epp-token-aware README, "The two topologies"): prefill on the
// in-flight tokens over V_P, V_P calibrated through the P/D path (the
// 8192-token prompt's TTFT includes the KV transfer and the first decode
// step, as the README says of calibrate.sh), decode on KV usage at 0.8.
func llmdPairBuilder(p Policy, name string) func(pdEnv) (pdController, int, int, error) {
	return func(e pdEnv) (pdController, int, int, error) {
		pre, err := p.build(e.pre)
		if err != nil {
			return nil, 0, 0, err
		}
		dec, err := p.build(e.dec)
		if err != nil {
			return nil, 0, 0, err
		}
		if name == "llmd-tokens" {
			sp := e.pre.sp
			ttft := sp.m.PrefillTime(llmdChunk) + llmdChunk*e.perToken + sp.m.StepTime(1, llmdChunk) + sp.overhead
			vp := llmdChunk / ttft
			pre.(*llmdCtl).values = func(_ float64, obs recommend.Observation) (float64, float64) {
				if obs.Reporting == 0 {
					return 0, 0
				}
				return (orZero(obs.Running) + orZero(obs.Waiting)) * orZero(obs.MeanPrompt) / vp, 0
			}
			dec.(*llmdCtl).values = func(_ float64, obs recommend.Observation) (float64, float64) {
				if obs.Reporting == 0 {
					return 0, 0
				}
				return 0, orZero(obs.KV) * float64(obs.Reporting)
			}
			pre.(*llmdCtl).triggers[1], dec.(*llmdCtl).triggers[0] = "", ""
		}
		ip, id, err := pdWarm(e, p, p)
		return pairCtl{pre, dec}, ip, id, err
	}
}

// pdWarm is each pool's warm start: what the replica model says the
// trace's first cold start + period of requests keep busy (the prefill
// pool's RequestSeconds(prompt, 1), the decode pool's decode-role
// RequestSeconds(prompt, output), summed over the span), at least each
// policy's minimum and 1, at most its maximum.
func pdWarm(e pdEnv, pp, dp Policy) (int, int, error) {
	return pdWarmAt(e, pp, dp, nil)
}

// pdWarmAt is pdWarm with each pool's busy time divided by the target
// (replicas busy per replica) its policy gives at the span's mean prompt
// and output; nil targets are 1.
func pdWarmAt(e pdEnv, pp, dp Policy, targets func(prompt, output float64) (float64, float64)) (int, int, error) {
	cp := recommend.CapacityFrom(e.pre.sp.m)
	cd := cp.ForRole(recommend.RoleDecode)
	span := e.pre.sp.cold + e.pre.cfg.Period
	rd, err := e.src.Open()
	if err != nil {
		return 0, 0, err
	}
	defer rd.Close()
	var wp, wd, n, prompts, outputs float64
	for {
		q, err := rd.Next()
		if err == io.EOF || (err == nil && q.Arrival > span) {
			break
		}
		if err != nil {
			return 0, 0, err
		}
		wp += cp.RequestSeconds(float64(q.Prompt), 1)
		wd += cd.RequestSeconds(float64(q.Prompt), float64(q.Output))
		n++
		prompts += float64(q.Prompt)
		outputs += float64(q.Output)
	}
	if targets != nil && n > 0 {
		tp, td := targets(prompts/n, outputs/n)
		wp, wd = wp/tp, wd/td
	}
	clamp := func(w float64, p Policy) int {
		if p.exact {
			return p.min // fixed:N starts where it stays
		}
		n := max(int(math.Ceil(w/span-1e-9)), p.min, 1)
		return min(n, p.Max())
	}
	return clamp(wp, pp), clamp(wd, dp), nil
}

// pdRecommended is the pair rule (recommend.PairDecider): the prefill
// pool runs `recommended` with its latency guards' targets the SLO less
// the decode side's allowance (pdAllowance), the decode pool `recommended`'s
// demand signal on the decode role's capacity (lookahead, hold and ramp
// bound as the preset sets them for the replica) without latency guards
// (its TTFT is the whole path's, its queue time not its own), and the
// ratio bound between them. Each role's demand target is lowered each
// cycle to what its queue allows (recommend.PairPolicies), or fixed
// (recommended(prefill=TP,decode=TD)).
type pdRecommended struct {
	p      recommend.Pair
	fixed  bool // the demand targets as given (recommended(prefill=,decode=)), not lowered by PairPolicies
	run    recommend.PairDecider
	dp, dd recommend.Decision
	epoch  time.Time
}

// recommendedPolicy is `recommended` as built for env e (its latency
// guards at e's SLO).
func recommendedPolicy(e env) (*recommend.Policy, error) {
	p, err := ParsePolicy("recommended")
	if err != nil {
		return nil, err
	}
	c, err := p.build(e)
	if err != nil {
		return nil, err
	}
	return c.(*infscaleCtl).p, nil
}

// buildPDRecommended builds the pair rule for e.
func buildPDRecommended(e pdEnv) (pdController, int, int, error) {
	return buildPDRecommendedAt(e, pairRule{})
}

// buildPDRecommendedAt is the pair rule with each role's demand target
// fixed at r.tp and r.td (> 0; 0 and 0: the targets from the queues,
// recommend.PairPolicies) and each role's floor r.minP and r.minD (0: the
// rule's own); each pool's warm start is at least its floor.
func buildPDRecommendedAt(e pdEnv, r pairRule) (pdController, int, int, error) {
	tp, td := r.tp, r.td
	pe := e.pre
	pe.cfg.SLOTTFT -= e.allowance
	pp, err := recommendedPolicy(pe)
	if err != nil {
		return nil, 0, 0, err
	}
	dp, err := recommendedPolicy(e.dec)
	if err != nil {
		return nil, 0, 0, err
	}
	d := *dp
	d.Metrics = slices.DeleteFunc(slices.Clone(dp.Metrics), func(m recommend.Metric) bool { return m.Signal != recommend.SignalDemand })
	if err := d.Validate(); err != nil {
		return nil, 0, 0, err
	}
	if tp > 0 {
		pp = setDemand(pp, tp)
		d = *setDemand(&d, td)
	}
	if r.minP > 0 {
		q := *pp
		q.Min = r.minP
		pp = &q
	}
	if r.minD > 0 {
		d.Min = r.minD
	}
	c := &pdRecommended{p: recommend.Pair{Prefill: pp, Decode: &d}, epoch: e.pre.cfg.Epoch, fixed: tp > 0}
	c.run.Prefill.Quiet, c.run.Decode.Quiet = true, true
	rec, _ := ParsePolicy("recommended")
	ip, id, err := pdWarmAt(e, rec, rec, func(prompt, output float64) (float64, float64) {
		if c.fixed {
			return tp, td
		}
		q := recommend.PairPolicies(&c.p, recommend.PairReading{
			Prefill: recommend.Reading{Obs: recommend.Observation{MeanPrompt: prompt, MeanOutput: 1}},
			Decode:  recommend.Reading{Obs: recommend.Observation{MeanPrompt: prompt, MeanOutput: output}}})
		return demandTarget(q.Prefill), demandTarget(q.Decode)
	})
	return c, max(ip, r.minP), max(id, r.minD), err
}

func (c *pdRecommended) decide(now float64, op, od recommend.Observation) (int, int) {
	at := c.epoch.Add(time.Duration(now * float64(time.Second)))
	r := recommend.PairReading{
		Prefill: recommend.Reading{Obs: op, CurrentKnown: true},
		Decode:  recommend.Reading{Obs: od, CurrentKnown: true},
	}
	if c.fixed {
		c.run.Prefill.Decide(&c.dp, c.p.Prefill, r.Prefill, at)
		c.run.Decode.Decide(&c.dd, c.p.Decode, r.Decode, at)
		recommend.Bound(&c.dp, &c.dd, &c.run.Prefill, &c.run.Decode, &c.p, r)
	} else {
		c.run.Decide(&c.dp, &c.dd, &c.p, r, at)
	}
	return c.dp.Desired, c.dd.Desired
}

// explainers are the pair rule's decisions for each pool.
func (c *pdRecommended) explainers() (pre, dec explainer) {
	return decisionExplainer{&c.dp}, decisionExplainer{&c.dd}
}

// decisionExplainer explains the decision it points to (explainDecision).
type decisionExplainer struct{ d *recommend.Decision }

func (e decisionExplainer) explain() (reason, metric string) { return explainDecision(e.d) }

func (c *pdRecommended) warm(p, d int, epoch time.Time) {
	for _, x := range []struct {
		l *recommend.Decider
		n int
	}{{&c.run.Prefill, p}, {&c.run.Decode, d}} {
		x.l.State.Recommendations = []recommend.TimedReplicas{{At: epoch, Replicas: x.n}}
		x.l.State.LastDesired, x.l.State.LastAt = x.n, epoch
		x.l.Desired, x.l.HasDesired = x.n, true
	}
}

// String names the pair rule's parts, for reports.
func (c *pdRecommended) String() string {
	return fmt.Sprintf("prefill %v; decode %v", c.p.Prefill.Metrics, c.p.Decode.Metrics)
}

// demandTarget is p's demand metric's target (1 without one).
func demandTarget(p *recommend.Policy) float64 {
	for _, m := range p.Metrics {
		if m.Signal == recommend.SignalDemand {
			return m.Target
		}
	}
	return 1
}

// setDemand is a copy of p with its demand metric's target t.
func setDemand(p *recommend.Policy, t float64) *recommend.Policy {
	q := *p
	q.Metrics = slices.Clone(p.Metrics)
	for i := range q.Metrics {
		if q.Metrics[i].Signal == recommend.SignalDemand {
			q.Metrics[i].Target = t
		}
	}
	return &q
}

// PairOf is prefill on the prefill pool and decode on the decode pool,
// each deciding alone (as pd(PREFILL;DECODE)), named name: for example
// two Follow timelines, what each pool of a pair actually ran. Errors: a
// policy a pool cannot run (optimal, oracle, knative).
func PairOf(name string, prefill, decode Policy) (PDPolicy, error) {
	for _, p := range []Policy{prefill, decode} {
		if err := pdSupported(name, p); err != nil {
			return PDPolicy{}, err
		}
	}
	return PDPolicy{Name: name, build: pairBuilder(prefill, decode)}, nil
}

// FromRecommendPair wraps a P/D target's two pkg/recommend policies (each
// role's config.Target.RoleTarget(r).Policy()) as the pair rule named
// name, decided as serve decides the pair: recommend.PairDecider, each
// role's demand target lowered to what its queue allows
// (recommend.PairPolicies), then the ratio bound. A policy without a
// Capacity gets the replay replica's (the decode role's on the decode
// pool). The warm start is each pool's busy time over its lowered target,
// within the role's bounds. Each policy is validated in place and must not
// change while replays run. Errors: a policy's validation error, naming
// its role.
func FromRecommendPair(name string, prefill, decode *recommend.Policy) (PDPolicy, error) {
	pp, err := FromRecommend(name+" (prefill)", prefill)
	if err != nil {
		return PDPolicy{}, err
	}
	dp, err := FromRecommend(name+" (decode)", decode)
	if err != nil {
		return PDPolicy{}, err
	}
	return PDPolicy{Name: name, build: func(e pdEnv) (pdController, int, int, error) {
		p, err := forReplica(prefill, e.pre.sp)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("prefill: %w", err)
		}
		d, err := forReplica(decode, e.dec.sp)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("decode: %w", err)
		}
		c := &pdRecommended{p: recommend.Pair{Prefill: p, Decode: d}, epoch: e.pre.cfg.Epoch}
		c.run.Prefill.Quiet, c.run.Decode.Quiet = true, true
		ip, id, err := pdWarmAt(e, pp, dp, func(prompt, output float64) (float64, float64) {
			q := recommend.PairPolicies(&c.p, recommend.PairReading{
				Prefill: recommend.Reading{Obs: recommend.Observation{MeanPrompt: prompt, MeanOutput: 1}},
				Decode:  recommend.Reading{Obs: recommend.Observation{MeanPrompt: prompt, MeanOutput: output}}})
			return demandTarget(q.Prefill), demandTarget(q.Decode)
		})
		return c, ip, id, err
	}}, nil
}
