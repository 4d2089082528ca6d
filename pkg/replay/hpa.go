package replay

import (
	"errors"
	"strings"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// hpaCtl is the Kubernetes HPA consuming another policy's desired replicas
// (infscale_desired_replicas) through an External metric with target
// AverageValue 1: ratio = desired / current, the HPA's tolerance (10% by
// default) and its default behavior (300 s scale-down window). It is a
// second pkg/recommend Decide, on the running signal with target 1, fed the
// inner policy's output, after the HPA's check of a count outside [min,
// max] (recommend.Policy.OutsideBounds): the same arithmetic the HPA
// applies, checked against the controller in deploy/kubee2e.
type hpaCtl struct {
	inner Controller
	outer *infscaleCtl
}

func (c *hpaCtl) Decide(now float64, obs recommend.Observation) int {
	want := c.inner.Decide(now, obs)
	if n, ok := c.outer.outsideBounds(now, obs.Current); ok {
		return n // the HPA sets a bound before it reads the metric
	}
	ext := recommend.Unknown()
	ext.Current, ext.Reporting = obs.Current, obs.Current // an External metric: no per-pod samples, no missing pods
	ext.Running, ext.Waiting = float64(want), 0
	return c.outer.Decide(now, ext)
}

// hpaMetric is the metric the HPA of hpa(POLICY) reads: POLICY's output,
// exported as infscale_desired_replicas (the running slot carries it).
const hpaMetric = "infscale_desired_replicas"

// explain is the HPA's own reason (the consumer decides the count; the
// inner policy's reason is in its own row), on the one metric it reads.
func (c *hpaCtl) explain() (reason, metric string) {
	reason, metric = c.outer.explain()
	if metric != "" {
		metric = hpaMetric
	}
	return reason, metric
}

func (c *hpaCtl) warm(n int, epoch time.Time) {
	if w, ok := c.inner.(warmer); ok {
		w.warm(n, epoch)
	}
	c.outer.warm(n, epoch)
}

func (c *hpaCtl) Period() float64 {
	if p, ok := c.inner.(interface{ Period() float64 }); ok {
		return p.Period()
	}
	return 0
}

// parseHPA reads hpa(POLICY)[,tolerance=,upwindow=,downwindow=,uppods=...,upselect=,behavior=none,max=].
func parseHPA(full, s string, off int) (Policy, error) {
	end := closingParen(s)
	if end < 0 {
		return Policy{}, policyError(full, off+len(s)+1, "hpa( has no closing parenthesis: want hpa(POLICY)")
	}
	if strings.HasPrefix(s[len("hpa("):end], "hpa(") {
		return Policy{}, policyError(full, off+len("hpa(")+1, "hpa(...) wraps an infscale policy, not another hpa(...)")
	}
	inner, err := parsePolicy(full, s[len("hpa("):end], off+len("hpa("))
	if err != nil {
		return Policy{}, err
	}
	if inner.Recommend == nil {
		return Policy{}, policyError(full, off+len("hpa(")+1, "hpa(...) wraps an infscale policy (SIGNAL:TARGET... or recommended), not a baseline")
	}
	hp := &recommend.Policy{
		Metrics: []recommend.Metric{{Signal: recommend.SignalRunning, Target: 1}},
		Min:     max(inner.Recommend.Min, 1), // the HPA's minReplicas is >= 1
		Max:     inner.Recommend.Max,
		Guard:   &recommend.Guard{Off: true}, // the HPA has no runaway guard
	}
	rest := s[end+1:]
	cols := fieldCols{}
	if rest != "" {
		if !strings.HasPrefix(rest, ",") {
			return Policy{}, policyError(full, off+end+2, "after hpa(...) want ,OPTION=VALUE")
		}
		parts := splitTop(rest[1:])
		for _, pt := range parts {
			if pt.text == "behavior=none" {
				hp.NoBehavior = true
			}
		}
		once := map[string]int{} // option -> its column
		for _, pt := range parts {
			k, v, ok := strings.Cut(pt.text, "=")
			col := off + end + 2 + pt.at + 1
			if !ok {
				return Policy{}, policyError(full, col, "%q: want OPTION=VALUE (tolerance, upwindow, downwindow, uppods, uppercent, downpods, downpercent, upselect, downselect, behavior, min, max)", pt.text)
			}
			if prev, dup := once[k]; dup {
				// As in the inner policy: the last one would win silently.
				return Policy{}, policyError(full, col, "option %s given twice (also at column %d); give it once", k, prev)
			}
			if !repeatable[k] {
				once[k] = col
			}
			switch k {
			case "lookahead", "cooldown", "schedule", "guard", "settle", "drain", "rampbound", "hold":
				return Policy{}, policyError(full, col, "%s is not an HPA option (put it inside hpa(...))", k)
			case "behavior":
				if v != "none" {
					return Policy{}, policyError(full, col+len(k)+1, "behavior=%q: want behavior=none (an HPA without spec.behavior: the controller's older path); leave it out for an HPA with a behavior", v)
				}
				continue
			case "upwindow", "uppods", "uppercent", "downpods", "downpercent", "upselect", "downselect":
				if hp.NoBehavior {
					return Policy{}, policyError(full, col, "%s: an HPA without behavior (behavior=none) has no scaling rules; it takes downwindow= (the controller's --horizontal-pod-autoscaler-downscale-stabilization), tolerance=, min= and max=", k)
				}
			}
			if err := setOption(hp, k, v); err != nil {
				if errors.Is(err, errUnknownOption) {
					return Policy{}, policyError(full, col, "%v", err)
				}
				return Policy{}, policyError(full, col+len(k)+1, "%s=%q: %v", k, v, err)
			}
			cols.option(hp, k, v, col+len(k)+1)
		}
	}
	if err := hp.Validate(); err != nil {
		return Policy{}, cols.errorAt(full, off, err)
	}
	return Policy{
		Name: s, Recommend: inner.Recommend, min: inner.min, max: hp.Max, hpa: hp,
		build: func(e env) (Controller, error) {
			in, err := inner.build(e)
			if err != nil {
				return nil, err
			}
			return &hpaCtl{inner: in, outer: newInfscale(hp, e.cfg.Epoch)}, nil
		},
	}, nil
}

// closingParen is the index in s of the ')' that closes s's first '(',
// counting nested pairs: hpa(hpa(x)) closes at the last; -1 when it is
// not closed (hpa(queue:24, pd(queue:4;queue:8).
func closingParen(s string) int {
	depth := 0
	for i, c := range s {
		if c == '(' {
			depth++
		} else if c == ')' {
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}
