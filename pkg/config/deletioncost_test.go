package config

import (
	"errors"
	"strings"
	"testing"
)

func TestPodDeletionCost(t *testing.T) {
	cfg, err := Parse([]byte(`targets:
- name: chat
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  scrape: {port: 8000}
  pod_deletion_cost: true
  metrics: [{type: queue, target: 4}]
  max: 8
`), "ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Targets[0].PodDeletionCost {
		t.Error("pod_deletion_cost: true not read")
	}
	// Line and column of each bad key, counted by hand from the text.
	_, err = Parse([]byte(`targets:
- name: static
  scrape: [http://10.0.0.5:8000/metrics]
  pod_deletion_cost: true
  metrics: [{type: queue, target: 4}]
  max: 8
- name: sts
  scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: big}
  scrape: {port: 8000}
  metrics: [{type: queue, target: 4}]
  max: 8
  pod_deletion_cost: true
- name: word
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  scrape: {port: 8000}
  metrics: [{type: queue, target: 4}]
  max: 8
  pod_deletion_cost: yes please
`), "bad.yaml")
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("want Errors, got %v", err)
	}
	got := err.Error()
	for _, want := range []string{
		"bad.yaml:4:22: targets[0].pod_deletion_cost: needs scaleTargetRef",
		"bad.yaml:12:22: targets[1].pod_deletion_cost: a StatefulSet removes its highest ordinal first and ignores controller.kubernetes.io/pod-deletion-cost",
		"bad.yaml:18:22: targets[2].pod_deletion_cost",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if len(es) != 3 {
		t.Errorf("%d errors, want 3:\n%s", len(es), got)
	}
	_, err = Parse([]byte(`prometheus: {url: http://prometheus:9090}
targets:
- name: chat
  selector: '{namespace="llm", pod=~"chat-.*"}'
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  pod_deletion_cost: true
  metrics: [{type: queue, target: 4}]
  max: 8
`), "prom.yaml")
	if err == nil || !strings.Contains(err.Error(), "prom.yaml:6:22: targets[0].pod_deletion_cost: reads each pod's running + waiting from its own page") {
		t.Errorf("Prometheus mode: %v", err)
	}
}
