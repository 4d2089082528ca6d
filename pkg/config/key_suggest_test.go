package config

import (
	"strings"
	"testing"
)

// TestUnknownKeySuggests: an unknown key one slip away from an allowed one
// (a British spelling, a typo, another case, the HPA's name for KEDA's
// key) names the key meant after the list; one far from all names none.
func TestUnknownKeySuggests(t *testing.T) {
	cfg := func(k string) string {
		return "targets:\n- name: a\n  scrape: ['http://h:1/m']\n  metrics: [{type: queue, target: 4}]\n  maxReplicaCount: 4\n  " + k + "\n"
	}
	for k, want := range map[string]string{
		"behaviour: {}":      "b.yaml:6:3: targets[0].behaviour: unknown key; allowed here: ",
		"minReplicaCont: 1":  "; did you mean minReplicaCount?",
		"MinReplicaCount: 1": "; did you mean minReplicaCount?",
		"minReplicas: 1":     "; did you mean minReplicaCount? (the HPA's minReplicas is KEDA's minReplicaCount here)",
		"behavior: {scaleDown: {stabilisationWindowSeconds: 60}}": "targets[0].behavior.scaleDown.stabilisationWindowSeconds: unknown key; allowed here: policies, selectPolicy, stabilizationWindowSeconds, tolerance; did you mean stabilizationWindowSeconds?",
	} {
		_, err := Parse([]byte(cfg(k)), "b.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant %q", k, err, want)
		}
	}
	if _, err := Parse([]byte(cfg("behaviour: {}")), "b.yaml"); err == nil || !strings.Contains(err.Error(), "; did you mean behavior?") {
		t.Errorf("behaviour: %v, want did you mean behavior?", err)
	}
	if _, err := Parse([]byte(cfg("frobnicate: 1")), "b.yaml"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("frobnicate: %v, want no suggestion", err)
	}
}
