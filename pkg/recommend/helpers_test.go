package recommend

import (
	"math"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

var nan = math.NaN()

// at is a unix-seconds instant (the decide CLI's --now).
func at(s int64) time.Time { return time.Unix(s, 0).UTC() }

// queuePolicy is queue:target with min 1, max 10 and HPA defaults.
func queuePolicy(target float64) *Policy {
	return &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: target}}, Min: 1, Max: 10}
}

// queueObs is an observation of cur replicas with this total queue (all waiting).
func queueObs(cur int, total float64) Observation {
	return Observation{Current: cur, Running: 0, Waiting: total, Held: nan, KV: nan, CPU: nan, TTFT: nan}
}

func mustValidate(t *testing.T, p *Policy) *Policy {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return p
}

// expect asserts a decision's desired and reason.
func expect(t *testing.T, d Decision, desired int, reason Reason) {
	t.Helper()
	if d.Desired != desired || d.Reason != reason {
		t.Errorf("got %d (%s), want %d (%s)\nsteps:\n%s", d.Desired, d.Reason, desired, reason, stepsText(d))
	}
}

// wantRaw checks a metric's part of a decision: its signal, the value
// observed, its target and the plain recommendation before tolerance.
func wantRaw(t *testing.T, r Raw, signal Signal, value, target float64, replicas int) {
	t.Helper()
	if r.Signal != signal || r.Value != value || r.Target != target || r.Replicas != replicas {
		t.Errorf("raw %+v, want %s value %g / target %g = %d replicas", r, signal, value, target, replicas)
	}
}

// stepWith is the first step with reason r and value v, and whether there
// is one.
func stepWith(d Decision, r Reason, v int) (Step, bool) {
	for _, s := range d.Steps {
		if s.Reason == r && s.Value == v {
			return s, true
		}
	}
	return Step{}, false
}

func stepsText(d Decision) string {
	var b strings.Builder
	for _, s := range d.Steps {
		b.WriteString("  " + s.Reason.String() + " " + itoa(s.Value) + ": " + s.Text + "\n")
	}
	return b.String()
}

func rules(window int32, sel autoscalingv2.ScalingPolicySelect, pols ...autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, SelectPolicy: &sel, Policies: pols}
}

func pods(v, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: v, PeriodSeconds: period}
}

func percent(v, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: v, PeriodSeconds: period}
}
