package config

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/recommend"
)

// TestHistoryReplicas: the replicas query a history is read with, from a
// Prometheus-mode file: a replicas: query as written; a scaleTargetRef's
// kube-state-metrics gauge per kind (names and labels from
// kube-state-metrics' docs/metrics/workload/), in the target's namespace
// or the file's; per role of a pair through RoleTarget; none for a CRD
// or without a namespace, with why.
func TestHistoryReplicas(t *testing.T) {
	const file = `prometheus: {url: http://prom:9090}
namespace: llm
targets:
- name: a
  selector: '{pod=~"a-.*"}'
  replicas: 'sum(up{job="a"})'
- name: b
  selector: '{pod=~"b-.*"}'
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: b}
- name: c
  namespace: batch
  selector: '{pod=~"c-.*"}'
  scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: c}
- name: d
  selector: '{pod=~"d-.*"}'
  scaleTargetRef: {apiVersion: apps/v1, kind: ReplicaSet, name: d-5f7c}
- name: e
  selector: '{pod=~"e-.*"}'
  scaleTargetRef: {apiVersion: v1, kind: ReplicationController, name: e}
- name: f
  selector: '{pod=~"f-.*"}'
  scaleTargetRef: {apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, name: f}
- name: g
  selector: '{pod=~"g-.*"}'
- name: chat
  roles:
    prefill:
      selector: '{pod=~"chat-prefill-.*"}'
      scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat-prefill}
    decode:
      selector: '{pod=~"chat-decode-.*"}'
      replicas: 'sum(kube_deployment_spec_replicas{deployment="chat-decode"})'
`
	cfg, err := Parse([]byte(withBounds(file)), "h.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a": `sum(up{job="a"})`,
		"b": `max(kube_deployment_spec_replicas{namespace="llm",deployment="b"})`,
		"c": `max(kube_statefulset_replicas{namespace="batch",statefulset="c"})`,
		"d": `max(kube_replicaset_spec_replicas{namespace="llm",replicaset="d-5f7c"})`,
		"e": `max(kube_replicationcontroller_spec_replicas{namespace="llm",replicationcontroller="e"})`,
		"g": "",
	}
	for i := range cfg.Targets {
		tg := &cfg.Targets[i]
		w, ok := want[tg.Name]
		if !ok {
			continue
		}
		if q, err := tg.HistoryReplicas(); q != w || err != nil {
			t.Errorf("%s: %q, %v; want %q", tg.Name, q, err, w)
		}
	}
	q, err := cfg.Targets[5].HistoryReplicas()
	if q != "" || !errors.Is(err, ErrNoReplicasHistory) || !strings.Contains(err.Error(), "leaderworkerset.x-k8s.io/v1 LeaderWorkerSet") {
		t.Errorf("LeaderWorkerSet: %q, %v; want none, naming the kind", q, err)
	}
	pair := &cfg.Targets[7]
	for r, w := range map[recommend.Role]string{
		recommend.RolePrefill: `max(kube_deployment_spec_replicas{namespace="llm",deployment="chat-prefill"})`,
		recommend.RoleDecode:  `sum(kube_deployment_spec_replicas{deployment="chat-decode"})`,
	} {
		rt, _ := pair.RoleTarget(r)
		if q, err := rt.HistoryReplicas(); q != w || err != nil {
			t.Errorf("chat %s: %q, %v; want %q", r, q, err, w)
		}
	}

	// No namespace anywhere: the client's default is not known offline.
	cfg, err = Parse([]byte(withBounds(`prometheus: {url: http://prom:9090}
targets:
- name: b
  selector: '{pod=~"b-.*"}'
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: b}
`)), "n.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if q, err := cfg.Targets[0].HistoryReplicas(); q != "" || !errors.Is(err, ErrNoReplicasHistory) || !strings.Contains(err.Error(), "set namespace:") {
		t.Errorf("no namespace: %q, %v; want none, asking for namespace:", q, err)
	}
}

// withBounds adds a metric and maxReplicaCount beside every selector:
// line of a config (what loads needs, not what is tested).
func withBounds(file string) string {
	return regexp.MustCompile(`\n( +)(selector: '[^']*')`).ReplaceAllString(file, "\n${1}${2}\n${1}metrics: [{type: queue, target: 24}]\n${1}maxReplicaCount: 4")
}
