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

// TestTypeErrorsNameTheValue: a value of the wrong type is named as the
// user wrote it, with what the key takes, not Go's type names.
func TestTypeErrorsNameTheValue(t *testing.T) {
	const cfg = "namespace: llm\ntargets:\n- name: chat\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}\n  apply: yes please\n  scrape: {port: 8000.5}\n  metrics: [{type: queue, target: 8}]\n  max: 4\n"
	_, err := Parse([]byte(cfg), "types.yaml")
	for _, want := range []string{
		`types.yaml:5:10: targets[0].apply: got the string "yes please"; expected true or false`,
		`types.yaml:6:18: targets[0].scrape.port: got 8000.5; expected a port number 1..65535 or a container port's name`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err %v\nwant %s", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "Go value") {
		t.Errorf("Go type names in %v", err)
	}
}
