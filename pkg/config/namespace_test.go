package config

import (
	"strings"
	"testing"
)

// TestNamespaceWithoutWorkload: the file's namespace is the default of the
// scaleTargetRef targets; with none it would be ignored, so it is refused
// at its line.
func TestNamespaceWithoutWorkload(t *testing.T) {
	const cfg = "namespace: llm\ntargets:\n- name: chat\n  scrape: [http://127.0.0.1:8001/metrics]\n  metrics: [{type: queue, target: 8}]\n  max: 4\n"
	_, err := Parse([]byte(cfg), "ns.yaml")
	if err == nil || !strings.Contains(err.Error(), "ns.yaml:1:") || !strings.Contains(err.Error(), "no target has one") {
		t.Fatalf("err %v, want ns.yaml:1: ... no target has one", err)
	}
}
