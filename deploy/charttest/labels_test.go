package charttest

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
)

// podMonitorTarget is a target with a PodMonitor (podMonitor.labels go on it).
const podMonitorTarget = "targets:\n- {name: chat, workload: {namespace: llm, name: chat}, podMonitor: {enabled: true, selector: {matchLabels: {app.kubernetes.io/name: vllm}}}, config: {selector: '{pod=\"x\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 4}}\n"

// TestExtraLabelsChartKeys: a label value (serviceMonitor.labels,
// podMonitor.labels, prometheusRule.additionalLabels, podLabels) that
// repeats a key the chart sets on the same object rendered it twice, a
// duplicate YAML key: a strict parser (this module's, kustomize as a Helm
// post-renderer) refused the file ("key \"app.kubernetes.io/name\"
// already set in map") and Helm kept whichever came last (the user's on
// the monitors and the rule, the chart's on the pods). It is refused
// naming the value and the key. The chart's labels, from
// templates/_helpers.tpl: app.kubernetes.io/name (infscale), /instance
// (the release), /component (recommender), /managed-by (Helm) and
// helm.sh/chart on every object; the pod template carries the first two
// only, so podLabels may set app.kubernetes.io/component.
func TestExtraLabelsChartKeys(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"serviceMonitor: {labels: {app.kubernetes.io/instance: prom}}", `serviceMonitor.labels: "app.kubernetes.io/instance" is a label the chart sets itself (app.kubernetes.io/instance: infscale)`},
		{"prometheusRule: {enabled: true, additionalLabels: {app.kubernetes.io/name: rules}}", `prometheusRule.additionalLabels: "app.kubernetes.io/name" is a label the chart sets itself (app.kubernetes.io/name: infscale, which nameOverride sets)`},
		{"prometheusRule: {enabled: true, additionalLabels: {app.kubernetes.io/component: alerts}}", `prometheusRule.additionalLabels: "app.kubernetes.io/component" is a label the chart sets itself (app.kubernetes.io/component: recommender)`},
		{podMonitorTarget + "podMonitor: {labels: {helm.sh/chart: x}}", `podMonitor.labels: "helm.sh/chart" is a label the chart sets itself (helm.sh/chart: infscale-0.1.0)`},
		{"podLabels: {app.kubernetes.io/name: x}", `podLabels: "app.kubernetes.io/name" is a label the chart sets itself (app.kubernetes.io/name: infscale, which nameOverride sets)`},
		{"nameOverride: scaler\npodLabels: {app.kubernetes.io/instance: x}", `podLabels: "app.kubernetes.io/instance" is a label the chart sets itself (app.kubernetes.io/instance: infscale)`},
	} {
		_, err := tryRender(c.values)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("values %q: error %v, want one containing %q", c.values, err, c.want)
		}
	}

	// Keys of the user's own are added beside the chart's.
	objs := render(t, podMonitorTarget+`serviceMonitor: {labels: {release: prom}}
podMonitor: {labels: {release: prom}}
prometheusRule: {enabled: true, additionalLabels: {release: prom}}
podLabels: {team: ml, app.kubernetes.io/component: recommender}
`)
	for name, labels := range map[string]map[string]string{
		"ServiceMonitor": only[*monitoringv1.ServiceMonitor](t, objs).Labels,
		"PodMonitor":     only[*monitoringv1.PodMonitor](t, objs).Labels,
		"PrometheusRule": only[*monitoringv1.PrometheusRule](t, objs).Labels,
	} {
		if labels["release"] != "prom" || labels["app.kubernetes.io/name"] != "infscale" || labels["app.kubernetes.io/instance"] != "infscale" {
			t.Errorf("%s labels %v, want release: prom beside the chart's name and instance infscale", name, labels)
		}
	}
	pod := only[*appsv1.Deployment](t, objs).Spec.Template.Labels
	if pod["team"] != "ml" || pod["app.kubernetes.io/component"] != "recommender" || pod["app.kubernetes.io/name"] != "infscale" || pod["app.kubernetes.io/instance"] != "infscale" || len(pod) != 4 {
		t.Errorf("pod labels %v, want team: ml, app.kubernetes.io/component: recommender and the selector's name and instance infscale", pod)
	}
}
