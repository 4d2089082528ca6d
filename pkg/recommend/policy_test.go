package recommend

import (
	"errors"
	"slices"
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
		"metrics[0].signal: cpu cannot scale from zero with min 0",
		"metrics[1].target: 0 must be a finite number > 0 (requests per replica)",
		"metrics[2].signal: queue is listed twice (also metrics[1])",
		"metrics[3].target: 80 (8000%) must be in (0, 1] (fraction of the KV cache)",
		"metrics[3].signal: kv cannot scale from zero",
		"max: 0 must be >= 1",
		"lookahead: -1s must be >= 0",
		"zero.cooldown: -1s must be >= 0",
		"behavior.scaleUp.stabilizationWindowSeconds: 4000 must be in 0..3600",
		`behavior.scaleUp.selectPolicy: "Fastest" (allowed: Max, Min, Disabled)`,
		"behavior.scaleUp.policies[0].value: 0 must be >= 1",
		"behavior.scaleUp.policies[0].periodSeconds: 0 must be in 1..1800",
		"schedule[0].location: \"Nowhere/City\"",
		"schedule[0].cron: \"61 * * * *\"",
		"schedule[0].duration: 0s must be > 0",
		"schedule[0].min: -1 must be in 0..max",
		"schedule[1].cron: \"@every 1h\": @every is relative",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// TestValidateSignalTwiceOnce: a signal listed three times is two problems,
// each entry after the first named against the first; before, the third
// was also named against the second (every pair a line: 400 entries of
// one signal in a policy string made an error text of hundreds of MB).
func TestValidateSignalTwiceOnce(t *testing.T) {
	p := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalKV, Target: 0.8}, {Signal: SignalQueue, Target: 8}, {Signal: SignalQueue, Target: 16}}, Min: 1, Max: 4}
	var fes FieldErrors
	if err := p.Validate(); !errors.As(err, &fes) {
		t.Fatalf("Validate: %v, want FieldErrors", err)
	}
	var got []string
	for _, fe := range fes {
		got = append(got, fe.Path+": "+fe.Msg)
	}
	want := []string{
		"metrics[2].signal: queue is listed twice (also metrics[0]); one entry per signal",
		"metrics[3].signal: queue is listed twice (also metrics[0]); one entry per signal",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Each names the first entry as Also, which a syntax renames (a policy
	// string's column) without rewording the rule.
	for _, fe := range fes {
		if fe.Also != "metrics[0]" || fe.MsgAt("at column 7") != "queue is listed twice (also at column 7); one entry per signal" {
			t.Errorf("%s: Also %q, MsgAt %q; want metrics[0] renamed", fe.Path, fe.Also, fe.MsgAt("at column 7"))
		}
	}
}

// A fraction target out of range shows the percentage its decimal form
// reads as, the point moved two places: 1.1 is 110%, not 1.1*100's
// 110.00000000000001%, and 1e308 is 1e+310%, not the product's +Inf%.
func TestValidateFractionTargetPercentage(t *testing.T) {
	for _, tc := range []struct {
		signal Signal
		target float64
		want   string
	}{
		{SignalKV, 1.1, "1.1 (110%) must be in (0, 1]"},
		{SignalKV, 1.15, "1.15 (115%) must be in (0, 1]"},
		{SignalDemand, 1.005, "1.005 (100.5%) must be in (0, 1]"}, // a target written 100.5%
		{SignalKV, 75, "75 (7500%) must be in (0, 1]"},
		{SignalKV, 1e308, "1e+308 (1e+310%) must be in (0, 1]"},
	} {
		p := &Policy{Metrics: []Metric{{Signal: tc.signal, Target: tc.target}}, Min: 1, Max: 2}
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), "metrics[0].target: "+tc.want) {
			t.Errorf("%s target %v: error %v, want %q", tc.signal, tc.target, err, tc.want)
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

// A policy's down tolerance must be below 1; up may be any fraction >= 0.
func TestToleranceRange(t *testing.T) {
	p := queuePolicy(4)
	p.Tolerance = &Tolerance{Up: 1.5, Down: 1}
	err := p.Validate()
	if err == nil || !strings.Contains(err.Error(), "tolerance.down: 1 must be < 1") || strings.Contains(err.Error(), "tolerance.up") {
		t.Errorf("error %v, want only tolerance.down refused", err)
	}
}

// Validate's errors are FieldErrors with the field's path, so each syntax
// can point at its own position; the rules the serve config had alone are
// here too (a CRON_TZ= prefix, Location Local, an empty cron).
func TestValidateFieldErrors(t *testing.T) {
	p := queuePolicy(4)
	p.Min, p.Max = 3, 2
	p.Schedule = []ScheduleWindow{
		{Cron: "CRON_TZ=Asia/Tokyo 0 8 * * *", Duration: time.Hour, Min: 1},
		{Cron: "0 8 * * *", Duration: time.Hour, Min: 1, Location: "Local"},
		{Cron: " ", Duration: time.Hour, Min: 1},
	}
	err := p.Validate()
	var fes FieldErrors
	if !errors.As(err, &fes) {
		t.Fatalf("error %T %v, want FieldErrors", err, err)
	}
	var paths []string
	for _, e := range fes {
		paths = append(paths, e.Path)
	}
	want := []string{"min", "schedule[0].cron", "schedule[1].location", "schedule[2].cron"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths %v, want %v (%v)", paths, want, err)
	}
	for i, sub := range []string{"3 must be <= max 2", "CRON_TZ=/TZ= prefix", `"Local" is the machine's zone`, "required"} {
		if i < len(fes) && !strings.Contains(fes[i].Msg, sub) {
			t.Errorf("%s: %q, want %q", fes[i].Path, fes[i].Msg, sub)
		}
	}
}

// Signal names are exact (lower case, as every front end writes them).
func TestParseSignalExact(t *testing.T) {
	if s, err := ParseSignal("kv"); err != nil || s != SignalKV {
		t.Errorf("kv: %v %v", s, err)
	}
	if _, err := ParseSignal("QUEUE"); err == nil || !strings.Contains(err.Error(), "lower case (queue)") {
		t.Errorf("QUEUE: %v, want refused naming queue", err)
	}
	if _, err := ParseSignal("gpu"); err == nil || !strings.Contains(err.Error(), "allowed: queue, waiting, running, kv, cpu, ttft") {
		t.Errorf("gpu: %v", err)
	}
}

// One schedule string form, spaces trimmed; DURATION in seconds or as a Go
// duration.
func TestParseScheduleWindow(t *testing.T) {
	w, err := ParseScheduleWindow(" 0 8 * * 1-5 ; 10h ; 4 ; Europe/Berlin ")
	if err != nil || w != (ScheduleWindow{Cron: "0 8 * * 1-5", Duration: 10 * time.Hour, Min: 4, Location: "Europe/Berlin"}) {
		t.Errorf("%+v %v", w, err)
	}
	if w, err := ParseScheduleWindow("@daily;90;2"); err != nil || w.Duration != 90*time.Second || w.Location != "" {
		t.Errorf("%+v %v", w, err)
	}
	for s, path := range map[string]string{"0 8 * * *;1h": "", "0 8 * * *;soon;2": "duration", "0 8 * * *;1h;two": "min"} {
		_, err := ParseScheduleWindow(s)
		var fe FieldError
		if !errors.As(err, &fe) || fe.Path != path {
			t.Errorf("%q: %v, want a FieldError at %q", s, err, path)
		}
	}
	// A year is 31,536,000 s: one second more in seconds names the bound
	// (it said "want a duration such as 12h or 90s"), as 8761h does.
	if w, err := ParseScheduleWindow("@daily;31536000;2"); err != nil || w.Duration != 8760*time.Hour {
		t.Errorf("a year in seconds: %+v %v", w, err)
	}
	for _, s := range []string{"@daily;31536001;2", "@daily;1e300;2"} {
		_, err := ParseScheduleWindow(s)
		var fe FieldError
		if !errors.As(err, &fe) || fe.Path != "duration" || !strings.Contains(fe.Msg, "must be at most 8760h0m0s (a year") {
			t.Errorf("%q: %v, want the duration's year bound", s, err)
		}
	}
}

// TestValidateNoBehavior: an HPA without behavior takes only the scaleDown
// window (the controller's downscale stabilisation); any rule is refused.
func TestValidateNoBehavior(t *testing.T) {
	w := int32(120)
	ok := &Policy{Metrics: []Metric{{Signal: SignalRunning, Target: 1}}, Min: 1, Max: 10, NoBehavior: true,
		Behavior: autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &w}}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("window only: %v", err)
	}
	for _, b := range []autoscalingv2.HorizontalPodAutoscalerBehavior{
		{ScaleUp: &autoscalingv2.HPAScalingRules{}},
		{ScaleDown: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 15}}}},
	} {
		p := &Policy{Metrics: []Metric{{Signal: SignalRunning, Target: 1}}, Min: 1, Max: 10, NoBehavior: true, Behavior: b}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "behavior: an HPA without behavior") {
			t.Errorf("%+v: %v, want the behavior refused", b, err)
		}
	}
}

// TestValidateLookaheadBound: a lookahead above a year (8760 h,
// replay.ParsePolicy's bound) is refused; at 2,540,400 h (290 years) the
// trend's span of two lookaheads overflowed time.Duration (2^63 ns is
// about 2,562,047 h) and decide printed "least squares over 1 samples in
// -43295h34m33.7s". A year itself is accepted.
func TestValidateLookaheadBound(t *testing.T) {
	for _, la := range []time.Duration{8761 * time.Hour, 2540400 * time.Hour} {
		p := queuePolicy(4)
		p.Lookahead = la
		err := p.Validate()
		want := "lookahead: " + la.String() + ": at most 8760h0m0s (a year"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("lookahead %v: err = %v; want %q", la, err, want)
		}
	}
	p := queuePolicy(4)
	p.Lookahead = 8760 * time.Hour
	mustValidate(t, p)
}
