package config

import (
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/infscale/infscale/pkg/recommend"
)

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
	if *b.ScaleUp.StabilizationWindowSeconds != 30 || *b.ScaleUp.SelectPolicy != "Min" || b.ScaleUp.Policies[0] != (autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60}) {
		t.Errorf("scaleUp %+v", b.ScaleUp)
	}
	p := &recommend.Policy{Metrics: []recommend.Metric{{Signal: recommend.SignalQueue, Target: 4}}, Min: 1, Max: 10, Behavior: b}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
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

// Where the API server refuses a behavior, DecodeBehavior does too, with the
// file, line:column of the value and the field.
func TestDecodeBehaviorInvalid(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		// "  stabilizationWindowSeconds: " is 30 characters: the value at column 31.
		{"fraction", "scaleDown:\n  stabilizationWindowSeconds: 1.5\n",
			"b.yaml:2:31: behavior.scaleDown.stabilizationWindowSeconds: expected an integer, got 1.5"},
		{"string", "scaleDown:\n  stabilizationWindowSeconds: \"30\"\n",
			`b.yaml:2:31: behavior.scaleDown.stabilizationWindowSeconds: expected an integer, got the string "30"`},
		// "    value: " is 11 characters: column 12 of line 4.
		{"exponent", "scaleUp:\n  policies:\n  - type: Pods\n    value: 1e3\n    periodSeconds: 15\n",
			"b.yaml:4:12: behavior.scaleUp.policies[0].value: expected an integer, got the string \"1e3\""},
		// wrapped: "      value: " is 13 characters: column 14 of line 5.
		{"negative value", "behavior:\n  scaleDown:\n    policies:\n    - type: Pods\n      value: -1\n      periodSeconds: 15\n",
			"b.yaml:5:14: behavior.scaleDown.policies[0].value: -1 must be >= 1"},
		{"window too long", "scaleDown:\n  stabilizationWindowSeconds: 7200\n",
			"b.yaml:2:31: behavior.scaleDown.stabilizationWindowSeconds: 7200 must be in 0..3600"},
		// "  selectPolicy: " is 16 characters.
		{"select", "scaleUp:\n  selectPolicy: Fastest\n", `b.yaml:2:17: behavior.scaleUp.selectPolicy: "Fastest" (allowed: Max, Min, Disabled)`},
		// scaleDown tolerance 1: the band [0, 2] would never scale down.
		{"down tolerance", "scaleDown:\n  tolerance: \"1\"\n", `b.yaml:2:14: behavior.scaleDown.tolerance: 1 must be < 1`},
		// a field left out is located at its parent, the policy item, whose
		// position is its first ':' (as in a configuration file): line 3,
		// "  - type:" puts it at column 9.
		{"period missing", "scaleUp:\n  policies:\n  - type: Pods\n    value: 2\n",
			"b.yaml:3:9: behavior.scaleUp.policies[0].periodSeconds: 0 must be in 1..1800"},
		// A key given twice, bare and wrapped: named by its path under
		// behavior either way, at the second copy ("  scaleUp: {selectPolicy:
		// Max, " is 31 characters), with the first's position.
		{"twice", "scaleUp:\n  stabilizationWindowSeconds: 10\n  stabilizationWindowSeconds: 20\n",
			"b.yaml:3:3: behavior.scaleUp.stabilizationWindowSeconds: key given twice (first at 2:3); give it once"},
		{"twice wrapped", "behavior:\n  scaleUp: {selectPolicy: Max, selectPolicy: Min}\n",
			"b.yaml:2:32: behavior.scaleUp.selectPolicy: key given twice (first at 2:13); give it once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeBehavior([]byte(tc.yaml), "b.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzDecodeBehavior: any bytes decode or give an error; never a panic.
func FuzzDecodeBehavior(f *testing.F) {
	f.Add([]byte("scaleUp:\n  policies:\n  - type: Pods\n    value: 1e3\n"))
	f.Add([]byte("behavior:\n  scaleDown:\n    stabilizationWindowSeconds: 1.5\n    tolerance: 50m\n"))
	f.Add([]byte("scaleDown: [1, 2]\n"))
	f.Add([]byte("scaleUp: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n"))
	f.Add([]byte(strings.Repeat("- ", 80) + "x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := DecodeBehavior(data, "f.yaml"); err != nil && !strings.HasPrefix(err.Error(), "f.yaml") {
			t.Fatalf("error %q does not name the file", err)
		}
	})
}

// Issue 13 item 6: a behavior nested 40,000 deep is refused before the
// parse (file:line:col and the bound), and one larger than
// MaxBehaviorBytes by its size.
func TestDecodeBehaviorBounded(t *testing.T) {
	deep := "scaleUp: " + strings.Repeat("[", 40000) + strings.Repeat("]", 40000) + "\n"
	if _, err := DecodeBehavior([]byte(deep), "b.yaml"); err == nil || !strings.Contains(err.Error(), "b.yaml:1:") || !strings.Contains(err.Error(), "nested more than 64 levels") {
		t.Errorf("deep: %v", err)
	}
	big := []byte("scaleUp: {}\n" + strings.Repeat("#", MaxBehaviorBytes))
	if _, err := DecodeBehavior(big, "b.yaml"); err == nil || !strings.Contains(err.Error(), "larger than the 1048576 allowed") {
		t.Errorf("big: %v", err)
	}
}
