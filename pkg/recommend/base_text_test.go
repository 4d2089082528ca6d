package recommend

import (
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// TestBaseNamedWhenNotCurrent: the stabilisation and the rate limits start
// from the base (the HPA's spec.replicas: infscale's previous output while
// recent), which a lagging consumer makes differ from the observed current.
// The text then names it, so min(max(6, 1), 1) recomputes from the printed
// numbers and "period start 2 = base 6 − added 4" does not contradict the
// header's "current 2". Worked by hand: output 6 at t=1000 (a +4 from 2),
// at t=1010 the consumer still runs 2 with a queue of 4, target 4, scaleDown
// window 0: raw ceil(4 / 4) = 1; base 6 (10 s old, within the default
// policies' 15 s period); min(max(6, 1), 1) = 1; the default scaleDown
// policy, Percent 100 per 15 s, starts at 6 − 4 + 0 = 2: trunc(2 × 0) = 0,
// so 1 is allowed. With the base equal to the current (the consumer
// followed) the words are the current's, as before.
func TestBaseNamedWhenNotCurrent(t *testing.T) {
	p := queuePolicy(4)
	p.Guard = &Guard{Off: true}
	p.Behavior.ScaleDown = rules(0, autoscalingv2.MaxChangePolicySelect, percent(100, 15))
	mustValidate(t, p)
	lagging := State{LastDesired: 6, LastAt: at(1000), ScaleUpEvents: []ScaleEvent{{At: at(1000), Change: 4}}}
	d := Decide(p, queueObs(2, 4), &lagging, at(1010))
	expect(t, d, 1, ReasonMetric)
	text := stepsText(d)
	for _, want := range []string{
		"min(max(6, 1), 1) = 1; 6 is the base: the previous output, 10s ago (within 15s, the longest window or policy period), where the HPA's bookkeeping starts (spec.replicas), not the current 2",
		"(Percent 100 per 15s: trunc(2 × 0) = 0 [period start 2 = base 6 − added 4 + removed 0]): 1 allowed",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("want a step saying %q\n%s", want, text)
		}
	}

	// Partial data keeps the base: the step says what it is.
	p2 := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalTTFT, Target: 2}}, Min: 1, Max: 10, Guard: &Guard{Off: true}}
	mustValidate(t, p2)
	lagging = State{LastDesired: 6, LastAt: at(1000), ScaleUpEvents: []ScaleEvent{{At: at(1000), Change: 4}}}
	d = Decide(p2, queueObs(2, 4), &lagging, at(1010))
	expect(t, d, 6, ReasonPartialData)
	if want := "no scale-down from 6 to 1 on the others; 6 is the base: the previous output, 10s ago"; !strings.Contains(stepsText(d), want) {
		t.Errorf("want a step saying %q\n%s", want, stepsText(d))
	}

	// The consumer followed: base 6 = current 6, no base words.
	followed := State{LastDesired: 6, LastAt: at(1000), ScaleUpEvents: []ScaleEvent{{At: at(1000), Change: 4}}}
	d = Decide(p, queueObs(6, 4), &followed, at(1010))
	if text := stepsText(d); strings.Contains(text, "is the base") || !strings.Contains(text, "[period start 2 = current 6 − added 4 + removed 0]") {
		t.Errorf("base = current: want the current's words only\n%s", text)
	}
}
