package charttest

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// renderNotes renders the chart's NOTES.txt, what `helm install` prints,
// for release and values.
func renderNotes(t *testing.T, release, values string) string {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	over, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, over, chartutil.ReleaseOptions{Name: release, Namespace: "infscale", Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	notes, ok := files["infscale/templates/NOTES.txt"]
	if !ok {
		t.Fatal("no templates/NOTES.txt rendered")
	}
	return notes
}

// TestNotes: what `helm install` prints names the objects of this release
// as the templates name them, worked out by hand: release infscale in
// namespace infscale names everything infscale; release prod names it
// prod-infscale (its pods' instance label prod); the default target chat's
// ScaledObject is chat in llm; a pair's are <name>-prefill and
// <name>-decode; an apply target's workload is read with kubectl get.
func TestNotes(t *testing.T) {
	notes := renderNotes(t, "infscale", "")
	for _, want := range []string{
		"installed as infscale in namespace infscale",
		"kubectl -n infscale rollout status deployment/infscale\n",
		"kubectl -n infscale get pods -l app.kubernetes.io/name=infscale,app.kubernetes.io/instance=infscale\n",
		"kubectl -n infscale port-forward service/infscale 9105:9105 &\n",
		"curl -s http://127.0.0.1:9105/metrics | grep -E '^infscale_(desired_replicas|query_errors_total)'\n",
		`(target="chat";`,
		"kubectl -n llm get scaledobject chat   # target chat: READY True, FALLBACK False\n",
		"KEDA cannot query http://prometheus-operated.monitoring.svc:9090 ",
		"kubectl -n infscale logs deployment/infscale ",
		"Alerts: none installed; prometheusRule.enabled: true",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("default NOTES.txt lacks %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "Lease holder") {
		t.Errorf("default NOTES.txt speaks of a Lease with no leases mode:\n%s", notes)
	}

	values := pairValues("", "[apply, leases]") + `- name: code
  apply: true
  workload: {namespace: ml, apiVersion: apps/v1, kind: StatefulSet, name: coder}
  scaledObject: {enabled: false}
  config: {server: vllm, selector: '{namespace="ml"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 4}
prometheusRule: {enabled: true, namespace: monitoring}
replicas: 2
`
	notes = renderNotes(t, "prod", values)
	for _, want := range []string{
		"installed as prod-infscale in namespace infscale",
		"kubectl -n infscale port-forward service/prod-infscale 9105:9105 &\n",
		"app.kubernetes.io/instance=prod\n",
		`(target="chat", target="code";`,
		"only the Lease holder exports it",
		"kubectl -n infscale get lease prod-infscale names it",
		"kubectl -n llm get scaledobject chat-prefill chat-decode   # target chat: READY True, FALLBACK False\n",
		"kubectl -n ml get statefulset coder   # target code: serve writes spec.replicas (apply)\n",
		"Alerts: the PrometheusRule prod-infscale in namespace monitoring",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("prod NOTES.txt lacks %q:\n%s", want, notes)
		}
	}

	// A pair that serve applies itself: both roles' workloads.
	notes = renderNotes(t, "infscale", strings.Replace(pairValues("{enabled: false}", "[apply]"), "  config:\n", "  apply: true\n  config:\n", 1))
	if want := "kubectl -n llm get deployment/chat-prefill deployment/chat-decode   # target chat: serve writes spec.replicas (apply)\n"; !strings.Contains(notes, want) {
		t.Errorf("apply pair NOTES.txt lacks %q:\n%s", want, notes)
	}
	if strings.Contains(notes, "READY False") {
		t.Errorf("NOTES.txt with no ScaledObject speaks of KEDA's READY:\n%s", notes)
	}
}
