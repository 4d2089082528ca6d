package config

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestKubeTargets checks the two forms of scrape, the namespace a target
// inherits from the file, the default path, and Kube.
func TestKubeTargets(t *testing.T) {
	cfg, err := Parse([]byte(`namespace: llm
targets:
- name: chat
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  scrape: {port: 8000}
  apply: true
  metrics: [{type: queue, target: 4}]
  max: 8
- name: rollout
  scaleTargetRef: {apiVersion: argoproj.io/v1alpha1, kind: Rollout, name: big}
  namespace: batch
  scrape:
    port: http
    path: /stats
  metrics: [{type: queue, target: 4}]
  max: 8
- name: static
  scrape: [http://10.0.0.5:8000/metrics]
  metrics: [{type: queue, target: 4}]
  max: 8
`), "k.yaml")
	if err != nil {
		t.Fatal(err)
	}
	chat, rollout, static := cfg.Targets[0], cfg.Targets[1], cfg.Targets[2]
	if chat.Namespace != "llm" || rollout.Namespace != "batch" || static.Namespace != "" {
		t.Errorf("namespaces %q %q %q, want llm (the file's), batch (its own), none", chat.Namespace, rollout.Namespace, static.Namespace)
	}
	if p := chat.Scrape.Pods; p == nil || p.Port != intstr.FromInt32(8000) || p.Path != "/metrics" {
		t.Errorf("chat scrape %+v, want port 8000, path /metrics (the default)", p)
	}
	if p := rollout.Scrape.Pods; p == nil || p.Port != intstr.FromString("http") || p.Path != "/stats" {
		t.Errorf("rollout scrape %+v, want port http, path /stats", p)
	}
	if !chat.Apply || rollout.Apply || chat.ScaleTargetRef.Kind != "Deployment" || rollout.ScaleTargetRef.APIVersion != "argoproj.io/v1alpha1" {
		t.Errorf("refs %+v %+v apply %v %v", chat.ScaleTargetRef, rollout.ScaleTargetRef, chat.Apply, rollout.Apply)
	}
	if len(static.Scrape.URLs) != 1 || static.Scrape.Pods != nil {
		t.Errorf("static scrape %+v, want one URL", static.Scrape)
	}
	if !cfg.Kube() {
		t.Error("Kube() false with two scaleTargetRefs")
	}
	cfg.Targets = cfg.Targets[2:]
	if cfg.Kube() {
		t.Error("Kube() true without a scaleTargetRef")
	}
}

// TestInferencePoolRef: a pool target needs no scrape: key (the pods'
// path defaults to /metrics, the port to the pool's at run time); with
// server: epp scrape: {port} names the EPP pods' metrics port. In
// Prometheus mode the key is refused: series carry the scrape target's
// labels, not the pool's matchLabels.
func TestInferencePoolRef(t *testing.T) {
	cfg, err := Parse([]byte(`namespace: llm
targets:
- name: chat
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  inferencePoolRef: {name: chat-pool}
  pod_deletion_cost: true
  metrics: [{type: queue, target: 4}]
  max: 8
- name: epp
  server: epp
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: code}
  inferencePoolRef: {name: code-pool}
  scrape: {port: 9090, bearer_token_file: /var/run/secrets/kubernetes.io/serviceaccount/token}
  metrics: [{type: queue, target: 4}]
  max: 8
`), "pool.yaml")
	if err != nil {
		t.Fatal(err)
	}
	chat, epp := cfg.Targets[0], cfg.Targets[1]
	if chat.InferencePoolRef == nil || chat.InferencePoolRef.Name != "chat-pool" || chat.Scrape.Pods == nil || chat.Scrape.Pods.Port != (intstr.IntOrString{}) || chat.Scrape.Pods.Path != "/metrics" {
		t.Errorf("chat: pool %+v scrape %+v, want chat-pool, no port, path /metrics", chat.InferencePoolRef, chat.Scrape.Pods)
	}
	if epp.Scrape.Pods == nil || epp.Scrape.Pods.Port != intstr.FromInt32(9090) || epp.Namespace != "llm" || epp.Scrape.Pods.BearerTokenFile != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
		t.Errorf("epp: scrape %+v namespace %q, want port 9090 in llm", epp.Scrape.Pods, epp.Namespace)
	}
	_, err = Parse([]byte(`prometheus: {url: http://prometheus:9090}
namespace: llm
targets:
- name: chat
  server: epp
  selector: '{namespace="llm", service="chat-epp"}'
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  inferencePoolRef: {name: chat-pool}
  metrics: [{type: queue, target: 4}]
  max: 8
`), "prom.yaml")
	if want := "prom.yaml:8:21: targets[0].inferencePoolRef: is embedded mode's"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Prometheus mode: error %v, want one starting %q", err, want)
	}
	// Without scaleTargetRef it said "needs scaleTargetRef"; added, the
	// next check said to remove inferencePoolRef: say that at once.
	_, err = Parse([]byte(`prometheus: {url: http://prometheus:9090}
targets:
- name: chat
  server: epp
  selector: '{namespace="llm", service="chat-epp"}'
  inferencePoolRef: {name: chat-pool}
  metrics: [{type: queue, target: 4}]
  max: 8
`), "prom.yaml")
	if want := "prom.yaml:6:21: targets[0].inferencePoolRef: is embedded mode's"; err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "needs scaleTargetRef") {
		t.Errorf("Prometheus mode, no scaleTargetRef: error %v, want one starting %q, not asking for scaleTargetRef", err, want)
	}
}
