package promql

import "testing"

// TestOwnSeries: a target name with a quote and a backslash is one label
// value, escaped once.
func TestOwnSeries(t *testing.T) {
	if got, want := OwnSeries("infscale_desired_replicas", "chat", nil), `max(infscale_desired_replicas{target="chat"})`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := OwnSeries("infscale_recommended_replicas", `a"b\c`, nil), `max(infscale_recommended_replicas{target="a\"b\\c"})`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := Validate(OwnSeries("infscale_desired_replicas", `a"b\c`, nil)); err != nil {
		t.Errorf("does not parse back: %v", err)
	}
}

// TestOwnSeriesInstallation: the installation's labels (prometheus.series_labels)
// join target as equality matchers, printed canonically (all matchers
// sorted by name, target among them), their values escaped as the
// target's; an empty map is none. The selectors are the chart's
// ScaledObject queries' for the same labels (docs/chart.md, "Two
// installations, one Prometheus"), in the printer's order.
func TestOwnSeriesInstallation(t *testing.T) {
	for _, c := range []struct {
		metric, target string
		inst           map[string]string
		by             []string
		want           string
	}{
		{"infscale_desired_replicas", "chat", map[string]string{}, nil, `max(infscale_desired_replicas{target="chat"})`},
		{"infscale_desired_replicas", "chat", map[string]string{"service": "infscale", "namespace": "infscale"}, nil,
			`max(infscale_desired_replicas{namespace="infscale",service="infscale",target="chat"})`},
		{"infscale_recommended_replicas", "chat", map[string]string{"service": "staging-infscale", "namespace": "staging"}, nil,
			`max(infscale_recommended_replicas{namespace="staging",service="staging-infscale",target="chat"})`},
		{"infscale_desired_replicas", "chat", map[string]string{"job": `in"f\s`}, nil,
			`max(infscale_desired_replicas{job="in\"f\\s",target="chat"})`},
		{"infscale_tuned_policy_info", "chat", map[string]string{"namespace": "dev"}, []string{"policy", "state", "terms"},
			`max by (policy, state, terms) (infscale_tuned_policy_info{namespace="dev",target="chat"})`},
		{"infscale_tuned_policy_reverted", "chat", nil, []string{"policy", "terms"},
			`max by (policy, terms) (infscale_tuned_policy_reverted{target="chat"})`},
	} {
		got := OwnSeries(c.metric, c.target, c.inst)
		if c.by != nil {
			got = OwnSeriesBy(c.metric, c.target, c.inst, c.by...)
		}
		if got != c.want {
			t.Errorf("%s %v by %v:\n got %s\nwant %s", c.metric, c.inst, c.by, got, c.want)
		}
		if _, err := Validate(got); err != nil {
			t.Errorf("%s does not parse back: %v", got, err)
		}
	}
}
