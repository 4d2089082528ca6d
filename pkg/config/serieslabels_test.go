package config

import (
	"maps"
	"strings"
	"testing"
)

// TestSeriesLabels: prometheus.series_labels is a map of label names to
// values, nil when not given.
func TestSeriesLabels(t *testing.T) {
	const tg = "targets: [{name: a, selector: '{a=\"b\"}', metrics: [{type: queue, target: 1}], maxReplicaCount: 2}]\n"
	cfg := mustParse(t, "prometheus:\n  url: http://p:9090\n  series_labels: {service: staging-infscale, namespace: staging}\n"+tg)
	if got, want := cfg.Prometheus.SeriesLabels, map[string]string{"namespace": "staging", "service": "staging-infscale"}; !maps.Equal(got, want) {
		t.Errorf("series_labels: %v, want %v", got, want)
	}
	if cfg := mustParse(t, "prometheus: {url: http://p:9090}\n"+tg); cfg.Prometheus.SeriesLabels != nil {
		t.Errorf("no series_labels key: %v, want nil (target alone)", cfg.Prometheus.SeriesLabels)
	}
	if cfg := mustParse(t, "prometheus: {url: http://p:9090, series_labels: {}}\n"+tg); len(cfg.Prometheus.SeriesLabels) != 0 {
		t.Errorf("series_labels: {}: %v, want none", cfg.Prometheus.SeriesLabels)
	}
}

// TestSeriesLabelsErrors: the labels serve sets itself, a name Prometheus
// would not take in a selector, a value not a string and embedded mode
// are refused at their file:line:col, each label at its own key (column 35
// is target's in the flow mapping below, counted by hand).
func TestSeriesLabelsErrors(t *testing.T) {
	const tg = "targets: [{name: a, selector: '{a=\"b\"}', metrics: [{type: queue, target: 1}], maxReplicaCount: 2}]\n"
	for _, c := range []struct{ prom, want string }{
		{"  url: http://p:9090\n  series_labels: {namespace: dev, target: chat}\n",
			"s.yaml:3:35: prometheus.series_labels.target: serve sets target itself"},
		{"  url: http://p:9090\n  series_labels:\n    role: decode\n",
			"s.yaml:4:5: prometheus.series_labels.role: serve sets role itself"},
		{"  url: http://p:9090\n  series_labels: {__name__: x}\n",
			"prometheus.series_labels.__name__: serve sets __name__ itself"},
		{"  url: http://p:9090\n  series_labels: {kubernetes-namespace: dev}\n",
			`prometheus.series_labels.kubernetes-namespace: "kubernetes-namespace" is not a Prometheus label name`},
		{"  url: http://p:9090\n  series_labels: {namespace: [dev]}\n",
			"s.yaml:3:30: prometheus.series_labels"},
		// A list of names, or of one-key maps, is not the mapping.
		{"  url: http://p:9090\n  series_labels: [namespace, service]\n",
			"s.yaml:3:18: prometheus.series_labels: got a list; expected a mapping of label name to value, one key per label, e.g. {namespace: infscale, service: infscale}"},
		{"  url: http://p:9090\n  series_labels:\n  - namespace: dev\n",
			"s.yaml:4:3: prometheus.series_labels: got a list; expected a mapping"},
		// A key without its value is null, read as "": namespace=""
		// selects only series without a namespace.
		{"  url: http://p:9090\n  series_labels: {namespace: }\n",
			"s.yaml:3:19: prometheus.series_labels.namespace: no value: namespace=\"\" matches only series without namespace"},
		{"  url: http://p:9090\n  series_labels:\n    service: \"\"\n",
			"s.yaml:4:5: prometheus.series_labels.service: no value"},
		{"  series_labels: {namespace: dev}\n",
			"s.yaml:2:18: prometheus.series_labels: match serve's own series in Prometheus (the rebuild at a restart, a tuned policy's revert), and there is no prometheus.url"},
	} {
		y := "prometheus:\n" + c.prom + tg
		if !strings.Contains(c.prom, "url:") { // embedded mode: scrape the pods
			y = "prometheus:\n" + c.prom + strings.Replace(tg, "selector: '{a=\"b\"}'", "scrape: ['http://127.0.0.1:1/metrics']", 1)
		}
		_, err := Parse([]byte(y), "s.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.prom, err, c.want)
		}
	}
}

// TestSeriesLabelsOneReplica: pod and instance name one replica of serve,
// which a restart replaces: loaded, with a warning at the key.
func TestSeriesLabelsOneReplica(t *testing.T) {
	const tg = "targets: [{name: a, selector: '{a=\"b\"}', metrics: [{type: queue, target: 1}], maxReplicaCount: 2}]\n"
	for _, label := range []string{"pod", "instance"} {
		f, err := Parse([]byte("prometheus:\n  url: http://p:9090\n  series_labels:\n    namespace: dev\n    "+label+": infscale-0\n"+tg), "s.yaml")
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		want := "s.yaml:5:5: prometheus.series_labels." + label + ": " + label + " names one replica of serve"
		if len(f.Warnings) != 1 || !strings.HasPrefix(f.Warnings[0].Error(), want) {
			t.Errorf("%s: warnings %v, want one starting %q", label, f.Warnings, want)
		}
	}
}
