package recommend

import (
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Validate reports every problem at once.
func TestValidateCollectsAll(t *testing.T) {
	p := &Policy{
		Metrics:   []Metric{{Signal: SignalCPU, Target: 60}, {Signal: SignalQueue, Target: 0}, {Signal: SignalQueue, Target: 4}, {Signal: SignalKV, Target: 80}},
		Min:       0,
		Max:       0,
		Lookahead: -time.Second,
		Zero:      &Zero{Cooldown: -time.Second},
		Behavior: autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: rules(4000, "Fastest", pods(0, 0)),
		},
		Schedule: []ScheduleWindow{{Cron: "61 * * * *", Duration: 0, Min: -1, Location: "Nowhere/City"}, {Cron: "@every 1h", Duration: time.Hour}},
	}
	err := p.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"metrics[0] (cpu): cpu cannot scale from zero",
		"metrics[1] (queue): target 0 must be a finite number > 0",
		"metrics[2]: queue is listed twice",
		"metrics[3] (kv): target 80 must be a fraction",
		"metrics[3] (kv): kv cannot scale from zero",
		"max: 0 must be >= 1",
		"lookahead: -1s must be >= 0",
		"zero.cooldown: -1s must be >= 0",
		"behavior.scaleUp.stabilizationWindowSeconds: 4000 must be in 0..3600",
		`behavior.scaleUp.selectPolicy: "Fastest" (allowed: Max, Min, Disabled)`,
		"behavior.scaleUp.policies[0].value: 0 must be >= 1",
		"behavior.scaleUp.policies[0].periodSeconds: 0 must be in 1..1800",
		"schedule[0]: location \"Nowhere/City\"",
		"schedule[0]: cron \"61 * * * *\"",
		"schedule[0]: duration 0s must be > 0",
		"schedule[0]: min -1 must be in 0..max",
		"schedule[1]: cron \"@every 1h\": @every is relative",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// Defaults are the HPA's.
func TestValidateFillsHPADefaults(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	up, down := p.Behavior.ScaleUp, p.Behavior.ScaleDown
	if *up.StabilizationWindowSeconds != 0 || *down.StabilizationWindowSeconds != 300 {
		t.Errorf("windows %d/%d, want 0/300", *up.StabilizationWindowSeconds, *down.StabilizationWindowSeconds)
	}
	if len(up.Policies) != 2 || up.Policies[0] != pods(4, 15) || up.Policies[1] != percent(100, 15) || *up.SelectPolicy != "Max" {
		t.Errorf("scaleUp %+v", up)
	}
	if len(down.Policies) != 1 || down.Policies[0] != percent(100, 15) || *down.SelectPolicy != "Max" {
		t.Errorf("scaleDown %+v", down)
	}
	if p.EffectiveTolerance() != DefaultTolerance {
		t.Errorf("tolerance %+v", p.EffectiveTolerance())
	}
	// A partial behavior keeps what it sets and takes the rest.
	q := queuePolicy(4)
	w := int32(60)
	q.Behavior.ScaleDown = &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &w}
	mustValidate(t, q)
	if *q.Behavior.ScaleDown.StabilizationWindowSeconds != 60 || len(q.Behavior.ScaleDown.Policies) != 1 {
		t.Errorf("partial scaleDown %+v", q.Behavior.ScaleDown)
	}
}

// The HPA's behavior YAML decodes into the k8s type, strictly.
func TestDecodeBehavior(t *testing.T) {
	b, err := DecodeBehavior([]byte(`scaleUp:
  stabilizationWindowSeconds: 30
  selectPolicy: Min
  tolerance: 50m
  policies:
  - type: Percent
    value: 50
    periodSeconds: 60
scaleDown:
  tolerance: "0.2"
`), "b.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if *b.ScaleUp.StabilizationWindowSeconds != 30 || *b.ScaleUp.SelectPolicy != "Min" || b.ScaleUp.Policies[0] != percent(50, 60) {
		t.Errorf("scaleUp %+v", b.ScaleUp)
	}
	p := queuePolicy(4)
	p.Behavior = b
	mustValidate(t, p)
	// 50m = 0.05 up, 0.2 down.
	if tol := p.EffectiveTolerance(); tol.Up != 0.05 || tol.Down != 0.2 {
		t.Errorf("tolerance %+v, want up 0.05 down 0.2", tol)
	}

	for _, tc := range []struct{ yaml, want string }{
		{"scaleUp:\n  stabilizationWindow: 3\n", "b.yaml:2:"},
		{"scaleUp:\n  policies:\n  - type: Pods\n    value: four\n", "b.yaml:4:"},
		{"behavior:\n  scaleDown:\n    selectPolicy: [Max]\n", "b.yaml:3:"},
	} {
		_, err := DecodeBehavior([]byte(tc.yaml), "b.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
