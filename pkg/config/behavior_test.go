package config

import (
	"strings"
	"testing"
)

// TestBehaviorTolerance: the HPA's per-direction tolerance (a Kubernetes
// quantity) decodes from a string or a number, and a negative one is refused.
func TestBehaviorTolerance(t *testing.T) {
	for _, tol := range []string{`"0.05"`, `0.05`, `50m`} {
		cfg, err := Parse([]byte(`
targets:
- name: chat
  scrape: [http://127.0.0.1:1/metrics]
  metrics: [{type: queue, target: 24}]
  max: 4
  behavior: {scaleUp: {tolerance: `+tol+`}}
`), "tol.yaml")
		if err != nil {
			t.Fatalf("%s: %v", tol, err)
		}
		if got := cfg.Targets[0].Behavior.ScaleUp.Tolerance.AsApproximateFloat64(); got != 0.05 {
			t.Errorf("%s: tolerance %v, want 0.05", tol, got)
		}
	}
	// Column 37: 2 + len("behavior: ") 10 + len("{scaleDown: ") 12 + len("{tolerance: ") 12 = 36, the value next.
	_, err := Parse([]byte(`
targets:
- name: chat
  scrape: [http://127.0.0.1:1/metrics]
  metrics: [{type: queue, target: 24}]
  max: 4
  behavior: {scaleDown: {tolerance: "-1"}}
`), "tol.yaml")
	if err == nil || !strings.Contains(err.Error(), "tol.yaml:7:37: targets[0].behavior.scaleDown.tolerance: -1 must be >= 0") {
		t.Errorf("negative tolerance: %v", err)
	}
}

// A denormal metric target is refused at its value with the allowed range.
// Column 35: 2 + len("metrics: ") 9 + len("[{") 2 + len("type: queue, ") 13
// + len("target: ") 8 = 34, the value next.
func TestDenormalTargetRefused(t *testing.T) {
	_, err := Parse([]byte(`
targets:
- name: chat
  metrics: [{type: queue, target: 1e-320}]
  scrape: [http://127.0.0.1:1/metrics]
  max: 4
`), "t.yaml")
	if err == nil || !strings.Contains(err.Error(), "t.yaml:4:35: targets[0].metrics[0].target: 1e-320 is below the smallest normal float64: a target must be in [2.2250738585072014e-308, 1.7976931348623157e+308]") {
		t.Errorf("denormal target: %v", err)
	}
}

// interval is bounded to 1s..1h, the error at the value.
func TestIntervalBounded(t *testing.T) {
	for _, tc := range []struct{ interval, want string }{
		{"100000h", "i.yaml:1:11: interval: must be 1s to 1h (the decision period; the HPA syncs every 15s), got 100000h0m0s"},
		{"61m", "i.yaml:1:11: interval: must be 1s to 1h"},
		{"500ms", "i.yaml:1:11: interval: must be 1s to 1h"},
	} {
		_, err := Parse([]byte("interval: "+tc.interval+"\ntargets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: queue, target: 24}]\n  max: 4\n"), "i.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("interval %s: %v, want %q", tc.interval, err, tc.want)
		}
	}
	for _, ok := range []string{"1s", "1h", "15s"} {
		if _, err := Parse([]byte("interval: "+ok+"\ntargets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: queue, target: 24}]\n  max: 4\n"), "i.yaml"); err != nil {
			t.Errorf("interval %s: %v", ok, err)
		}
	}
}
