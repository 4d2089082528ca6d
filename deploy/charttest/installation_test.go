package charttest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// TestSeriesLabels: each installation's ScaledObjects read its own
// infscale_desired_replicas. Two installations one Prometheus scrapes (a
// dev and a staging release, each with the default target chat) read
// max(infscale_desired_replicas{target="chat"}) before, and each scaled on
// the higher of the two decisions. The queries now match the labels
// prometheus-operator gives the series of the release's ServiceMonitor:
// namespace, the Service's namespace (the release's), and service, its
// name (the fullname: docs/chart.md's naming rule, worked out here by
// hand). keda.seriesLabels replaces them, {} drops them.
func TestSeriesLabels(t *testing.T) {
	pair := "targets:\n- name: chat\n  workload: {namespace: llm, prefill: {name: chat-prefill}, decode: {name: chat-decode}}\n" +
		"  config: {roles: {prefill: {maxReplicaCount: 4}, decode: {maxReplicaCount: 8}}}\n"
	for _, c := range []struct {
		ns, release, values string
		want                map[string]string // ScaledObject name -> query
		service             string            // the Service the series come from; "" when the query names none
	}{
		{"infscale", "infscale", "", map[string]string{"chat": `max(infscale_desired_replicas{target="chat", namespace="infscale", service="infscale"})`}, "infscale"},
		// helm install staging -n staging: objects named staging-infscale.
		{"staging", "staging", "", map[string]string{"chat": `max(infscale_desired_replicas{target="chat", namespace="staging", service="staging-infscale"})`}, "staging-infscale"},
		// helm install infscale-dev -n dev: the release name contains infscale.
		{"dev", "infscale-dev", "", map[string]string{"chat": `max(infscale_desired_replicas{target="chat", namespace="dev", service="infscale-dev"})`}, "infscale-dev"},
		{"dev", "infscale", "fullnameOverride: scaler", map[string]string{"chat": `max(infscale_desired_replicas{target="chat", namespace="dev", service="scaler"})`}, "scaler"},
		{"dev", "infscale", pair, map[string]string{
			"chat-prefill": `max(infscale_desired_replicas{target="chat", role="prefill", namespace="dev", service="infscale"})`,
			"chat-decode":  `max(infscale_desired_replicas{target="chat", role="decode", namespace="dev", service="infscale"})`,
		}, "infscale"},
		// A scrape of your own: its labels, sorted by name.
		{"dev", "infscale", "keda: {seriesLabels: {namespace: dev, job: infscale-dev}}", map[string]string{"chat": `max(infscale_desired_replicas{target="chat", job="infscale-dev", namespace="dev"})`}, ""},
		{"dev", "infscale", "serviceMonitor: {enabled: false}\nkeda: {seriesLabels: {namespace: dev}}", map[string]string{"chat": `max(infscale_desired_replicas{target="chat", namespace="dev"})`}, ""},
		// The escape: no installation label, the query as before.
		{"dev", "infscale", "keda: {seriesLabels: {}}", map[string]string{"chat": `max(infscale_desired_replicas{target="chat"})`}, ""},
		{"dev", "infscale", "serviceMonitor: {enabled: false}\nkeda: {seriesLabels: {}}", map[string]string{"chat": `max(infscale_desired_replicas{target="chat"})`}, ""},
	} {
		objs, _, err := renderSplitIn(c.ns, c.release, c.values)
		if err != nil {
			t.Errorf("-n %s %s %q: %v", c.ns, c.release, c.values, err)
			continue
		}
		got := map[string]string{}
		for _, o := range objs {
			switch v := o.obj.(type) {
			case *kedav1alpha1.ScaledObject:
				if len(v.Spec.Triggers) != 1 {
					t.Errorf("-n %s %s %q: ScaledObject %s has %d triggers, want 1", c.ns, c.release, c.values, v.Name, len(v.Spec.Triggers))
					continue
				}
				got[v.Name] = v.Spec.Triggers[0].Metadata["query"]
			case *corev1.Service:
				// The series' namespace and service labels are this
				// Service's (prometheus-operator's ServiceMonitor).
				if c.service != "" && (v.Name != c.service || v.Namespace != c.ns) {
					t.Errorf("-n %s %s %q: Service %s/%s, want %s/%s (the query's namespace and service)", c.ns, c.release, c.values, v.Namespace, v.Name, c.ns, c.service)
				}
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("-n %s %s %q: ScaledObjects %v, want %v", c.ns, c.release, c.values, got, c.want)
		}
		for name, q := range c.want {
			if got[name] != q {
				t.Errorf("-n %s %s %q: ScaledObject %s query\n%s\nwant\n%s", c.ns, c.release, c.values, name, got[name], q)
			}
		}
	}
}

// TestSeriesLabelsRefused: with serviceMonitor.enabled false the chart does
// not know the labels the user's scrape gives, and a guess that matched
// nothing would leave every ScaledObject on KEDA's fallback: the render
// asks for keda.seriesLabels (none is needed without a ScaledObject). The
// labels the chart sets, and names or values Prometheus would not take,
// are refused.
func TestSeriesLabelsRefused(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"serviceMonitor: {enabled: false}", "keda.seriesLabels is required with serviceMonitor.enabled: false"},
		{"keda: {seriesLabels: {target: chat}}", "keda.seriesLabels.target: the chart sets the query's target itself"},
		{"keda: {seriesLabels: {role: decode}}", "keda.seriesLabels.role: the chart sets"},
		{"keda: {seriesLabels: {kubernetes-namespace: dev}}", "at '/keda/seriesLabels'"},
		{"keda: {seriesLabels: {namespace: 3}}", "at '/keda/seriesLabels/namespace': got number, want string"},
		// namespace="" selects only series without a namespace: none of
		// this installation's, KEDA on its fallback.
		{"keda: {seriesLabels: {namespace: ''}}", "at '/keda/seriesLabels/namespace': minLength: got 0, want 1"},
	} {
		_, err := tryRender(c.values)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.values, err, c.want)
		}
	}
	// No ScaledObject, no query: nothing to ask.
	if _, err := tryRender("serviceMonitor: {enabled: false}\ntargets:\n- {name: chat, scaledObject: {enabled: false}, config: {maxReplicaCount: 4}}"); err != nil {
		t.Errorf("serviceMonitor and every ScaledObject off: %v", err)
	}
}

// TestServeSeriesLabels: serve's config carries the labels the
// ScaledObjects' queries match, as prometheus.series_labels, so that its
// reads of its own series (the rebuild at a restart without --state-dir, a
// tuned policy's revert) take this installation's only: the ServiceMonitor's
// namespace and service (worked out by hand as in TestSeriesLabels), or
// keda.seriesLabels. None (target alone) with keda.seriesLabels: {}, with
// neither a ServiceMonitor nor keda.seriesLabels (the chart cannot know
// them; no ScaledObject asks), and in embedded mode (serve reads nothing
// back). prometheus.series_labels in values is refused: keda.seriesLabels
// is the one place.
func TestServeSeriesLabels(t *testing.T) {
	noSO := "targets:\n- {name: chat, scaledObject: {enabled: false}, config: {selector: '{pod=~\"chat-.*\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 4}}\n"
	embedded := "prometheus: {url: null}\nrbac: {modes: [read-only]}\ntargets:\n- {name: chat, workload: {namespace: llm, name: chat}, scaledObject: {enabled: false}, config: {scrape: {port: 8000}, metrics: [{type: queue, target: 24}], maxReplicaCount: 4}}\n"
	for _, c := range []struct {
		ns, release, values string
		want                map[string]string
	}{
		{"infscale", "infscale", "", map[string]string{"namespace": "infscale", "service": "infscale"}},
		{"staging", "staging", "", map[string]string{"namespace": "staging", "service": "staging-infscale"}},
		{"dev", "infscale", "keda: {seriesLabels: {namespace: dev, job: infscale-dev}}", map[string]string{"job": "infscale-dev", "namespace": "dev"}},
		{"dev", "infscale", "keda: {seriesLabels: {}}", nil},
		{"dev", "infscale", "serviceMonitor: {enabled: false}\n" + noSO, nil},
		{"dev", "infscale", "serviceMonitor: {enabled: false}\nkeda: {seriesLabels: {namespace: dev}}\n" + noSO, map[string]string{"namespace": "dev"}},
		{"dev", "infscale", embedded, nil},
	} {
		objs, _, err := renderSplitIn(c.ns, c.release, c.values)
		if err != nil {
			t.Errorf("-n %s %s %q: %v", c.ns, c.release, c.values, err)
			continue
		}
		got := serveConfig(t, objs).Prometheus.SeriesLabels
		if len(got) != len(c.want) {
			t.Errorf("-n %s %s %q: prometheus.series_labels %v, want %v", c.ns, c.release, c.values, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("-n %s %s %q: prometheus.series_labels %v, want %v", c.ns, c.release, c.values, got, c.want)
				break
			}
		}
	}
	if _, err := tryRender("prometheus: {url: 'http://p:9090', series_labels: {namespace: dev}}"); err == nil || !strings.Contains(err.Error(), "prometheus.series_labels: the chart writes serve's from keda.seriesLabels") {
		t.Errorf("prometheus.series_labels in values: %v, want refused naming keda.seriesLabels", err)
	}
}
