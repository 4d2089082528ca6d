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

// TestMisspelledRequiredKeyOneError: a required key misspelled is one
// problem, the unknown key with the key it meant; the checks of the key
// meant, never given, add nothing ("target: 0 must be a finite number >
// 0" beside "taget: unknown key; did you mean target?" named a value the
// file does not hold). Given as well, the key meant is still checked.
func TestMisspelledRequiredKeyOneError(t *testing.T) {
	const head = "targets:\n- name: a\n  scrape: ['http://h:1/m']\n"
	for name, c := range map[string]struct {
		yaml string
		want []string // each problem's line, the start of it
	}{
		"metric target": {head + "  metrics: [{type: queue, taget: 24}]\n  maxReplicaCount: 4\n",
			[]string{"b.yaml:4:27: targets[0].metrics[0].taget: unknown key; allowed here: quantile, query, target, type, window; did you mean target? (target \"a\")"}},
		"maxReplicas": {head + "  metrics: [{type: queue, target: 24}]\n  maxReplicas: 4\n",
			[]string{"b.yaml:5:3: targets[0].maxReplicas: unknown key; allowed here: "}},
		"metrics": {head + "  metrcs: [{type: queue, target: 24}]\n  maxReplicaCount: 4\n",
			[]string{"b.yaml:4:3: targets[0].metrcs: unknown key; allowed here: "}},
		// target given too, at 0: its own check still runs.
		"both": {head + "  metrics: [{type: queue, taget: 24, target: 0}]\n  maxReplicaCount: 4\n",
			[]string{"b.yaml:4:27: targets[0].metrics[0].taget: unknown key", "b.yaml:4:46: targets[0].metrics[0].target: 0 must be a finite number > 0"}},
	} {
		_, err := Parse([]byte(c.yaml), "b.yaml")
		if err == nil {
			t.Errorf("%s: no error, want %q", name, c.want)
			continue
		}
		got := strings.Split(err.Error(), "\n")
		if len(got) != len(c.want) {
			t.Errorf("%s: %d problems:\n%v\nwant %d: %q", name, len(got), err, len(c.want), c.want)
			continue
		}
		for j := range got {
			if !strings.HasPrefix(got[j], c.want[j]) {
				t.Errorf("%s: problem %d %q, want it to start %q", name, j, got[j], c.want[j])
			}
		}
	}
}
